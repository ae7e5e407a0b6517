"""Voice from examples: the profile a campaign's example lines give, and every written zone held to it.

The example campaign's own good lines and every zone its offline composer writes are on voice
(0 false positives); lines written to be off voice are caught on their dimension
(tests/precompute/voice_corpus.py, the figures docs/precompute.md quotes). A pattern a marketer wrote
and a line a model wrote (the real `openai` client, tests/llm_server.py mode `lines`) that go
past the profile fall back with `check:off_voice:<dimension>`, which `explain` names and
`qa --findings` puts on the guideline layer; the model is told the profile before it writes.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from pathlib import Path

import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from precompute.explain import explain_record, format_explain
from precompute.layers import default_layer
from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.providers.openai_provider import OpenAIProvider
from precompute.run import PrecomputeRun
from precompute.zone_scores import reader_role
from tests.llm_server import LLMTestServer
from tests.precompute import voice_corpus
from tests.precompute.claims.test_claim_sources import CAMPAIGN, ZONES, assemble, model, with_headline_pattern
from tests.precompute.test_qa_findings import NOW, account, by_reason, findings_of
from welcomemat.campaign.voice import (
    MAX_VOICE_EXAMPLES,
    MIN_VOICE_EXAMPLES,
    VOICE_DIMENSIONS,
    derive_profile,
    voice_failures,
)
from welcomemat.reasons import OFF_VOICE_DOCS
from welcomemat.zones.zoneset import Rung

__all__ = ["model"]  # the fixture, shared with test_claim_sources

PROFILE = CAMPAIGN.voice_profile
assert PROFILE is not None

# Lines of page copy: words, the punctuation copy uses, a few pronouns and hedges.
_WORD = st.sampled_from(
    ["we", "you", "your", "our", "I", "my", "maybe", "new", "sellers", "ramp", "Acme", "weeks", "team"]
) | st.text(alphabet=string.ascii_letters, min_size=1, max_size=12)
_SENTENCE = st.builds(
    lambda words, comma, end: (", " if comma else " ").join(words) + end,
    st.lists(_WORD, min_size=1, max_size=30),
    st.booleans(),
    st.sampled_from([".", "?", "!", ":", " —", ""]),
)
LINES = st.lists(_SENTENCE, min_size=1, max_size=4).map(" ".join)
EXAMPLES = st.lists(LINES, min_size=MIN_VOICE_EXAMPLES, max_size=MAX_VOICE_EXAMPLES)


# -- the profile ----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(EXAMPLES, st.randoms(use_true_random=False))
def test_the_profile_is_the_same_for_the_same_lines_in_any_order(examples: list[str], rnd: object) -> None:
    shuffled = list(examples)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert derive_profile(examples) == derive_profile(shuffled) == derive_profile(list(examples))


@settings(max_examples=60, deadline=None)
@given(EXAMPLES)
def test_the_profile_is_bounded_and_every_example_is_on_its_own_voice(examples: list[str]) -> None:
    profile = derive_profile(examples)
    assert profile.examples == len(examples)
    for name in ("sentence_words", "hedges_per_line", "commas_per_sentence", "reading_grade"):
        spread = getattr(profile, name)
        assert spread.min <= spread.median <= spread.max, name
    assert 0 <= profile.sentence_words.min and profile.sentence_words.max <= max(
        len(e.split()) for e in examples
    )
    assert all(0 < share <= 1 for share in profile.opener_kinds.values())
    assert abs(sum(profile.opener_kinds.values()) - 1) < 0.01 or not profile.opener_kinds
    assert len(profile.openers) <= 5 and set(profile.person) == {"i", "we", "you"}
    for example in examples:
        assert voice_failures(example, profile) == (), example


@given(st.lists(LINES, max_size=MIN_VOICE_EXAMPLES - 1) | st.lists(LINES, min_size=31, max_size=32))
def test_fewer_than_5_or_more_than_30_lines_make_no_profile(examples: list[str]) -> None:
    try:
        derive_profile(examples)
    except ValueError as exc:
        assert f"got {len(examples)}" in str(exc)
    else:
        raise AssertionError("a profile from a wrong number of lines")


# -- the check ------------------------------------------------------------------------------


@settings(max_examples=200)
@given(st.text(max_size=400))
def test_any_text_is_measured_without_failing_and_failures_name_known_dimensions(text: str) -> None:
    for failure in voice_failures(text, PROFILE):
        assert failure.dimension in VOICE_DIMENSIONS and failure.detail


@given(st.sampled_from(CAMPAIGN.voice_examples), st.integers(min_value=1, max_value=5))
def test_an_example_line_with_exclamation_marks_is_off_voice(line: str, marks: int) -> None:
    failures = voice_failures(line.rstrip(".") + "!" * marks, PROFILE)
    assert "exclamation" in {f.dimension for f in failures}


@given(st.sampled_from(CAMPAIGN.voice_examples))
def test_an_example_line_told_by_a_rep_as_i_is_off_voice(line: str) -> None:
    assert "person" in {f.dimension for f in voice_failures(f"{line} I can show you how.", PROFILE)}


@given(st.integers(min_value=25, max_value=80))
def test_a_sentence_far_past_the_examples_longest_is_off_voice(words: int) -> None:
    sentence = " ".join(["sellers"] * words) + "."
    (failure, *_) = voice_failures(sentence, PROFILE)
    assert failure.dimension == "sentence_length" and f"{words} words" in failure.detail


def test_no_false_positive_on_the_example_campaign_and_every_off_voice_line_caught() -> None:
    measured = voice_corpus.measure()
    assert measured.good_refused == [] and measured.composed_refused == []
    assert measured.good >= 30 and measured.composed > 1000
    assert measured.missed == []
    assert set(measured.lines) == set(VOICE_DIMENSIONS)  # every dimension has lines it must catch


def test_every_dimension_has_one_line_of_meaning() -> None:
    assert tuple(OFF_VOICE_DOCS) == VOICE_DIMENSIONS


# -- through the pipeline -------------------------------------------------------------------


def test_a_marketer_s_hype_pattern_falls_back_off_voice_and_explain_says_why() -> None:
    outcome = assemble(OfflineComposer(), with_headline_pattern("Congrats on the {round}, {account}!!!"))
    zone = next(z for z in outcome.zones if z.content.zone_id == "hero_headline")
    assert zone.content.rung is Rung.SEGMENT
    assert zone.content.reason == "check:off_voice:exclamation"
    text = format_explain(explain_record(outcome, version=1))
    assert (
        "draft failed voice: off_voice:exclamation — 3 exclamation marks; the examples use at most 0" in text
    )
    assert f"(off the campaign's voice profile: {OFF_VOICE_DOCS['exclamation']})" in text


def test_each_written_zone_records_voice_relevance_and_role_value_apart() -> None:
    outcome = assemble(OfflineComposer())
    record = explain_record(outcome, version=1)
    scored = {z["zone_id"]: z["scores"] for z in record["zones"] if z["scores"] is not None}
    headline = scored["hero_headline"]  # "Congrats on the Series A last Thursday, Dymaxa"
    assert headline["voice"] == 1.0 and headline["relevance"] == 1.0
    assert headline["role"] == "sales"  # Dymaxa's contact is its Head of Sales
    support = scored["hero_support"]  # about new sellers ramping: the reader's concern
    assert support["role_value"] == 1.0
    assert "cta" not in scored  # the CTA's approved label: nobody wrote it for Dymaxa
    assert "scores: voice 1, relevance to the fact 1, value to the reader's role (sales)" in format_explain(
        record
    )


def test_the_reader_s_role_comes_from_the_contacts_titles() -> None:
    assert reader_role(["Head of Sales"]) == "sales"
    assert reader_role(["VP Marketing"]) == "marketing"
    assert reader_role(["Sales Enablement Lead"]) == "sales"  # the first function a title names
    assert reader_role(["Chief Executive Officer"]) == "leadership"
    assert reader_role([]) == "any"


def test_a_model_s_off_voice_line_is_refused_and_the_model_was_told_the_profile(
    model: Callable[..., OpenAIProvider], llm_server: LLMTestServer
) -> None:
    outcome = assemble(model({"hero_headline": "I think maybe Dymaxa could use help after the Series A"}))
    zone = next(z for z in outcome.zones if z.content.zone_id == "hero_headline")
    assert zone.content.rung is Rung.SEGMENT
    assert zone.content.reason.startswith("check:off_voice:"), zone.failures
    assert {f.reason for f in zone.failures if f.check == "voice"} == {"off_voice:person"}
    (sent,) = llm_server.requests("generate")
    system = sent.body["messages"][0]["content"]
    assert 'never as "I"' in system and "no exclamation marks" in system
    for example in CAMPAIGN.voice_examples:
        assert json.dumps(example) in system


def test_off_voice_is_a_guideline_finding() -> None:
    for dimension in VOICE_DIMENSIONS:
        assert default_layer(f"check:off_voice:{dimension}") == "guideline"


def test_qa_findings_count_an_off_voice_pattern_as_the_guideline_naming_it(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    """Five fresh Series A accounts; the funding headline pattern shouts: every headline falls back,
    and `qa --findings` puts the group on the guideline layer, naming the pattern."""
    campaign = with_headline_pattern("Congrats on the {round}, {account}!!!")
    path = tmp_path / "accounts.jsonl"
    path.write_text("".join(json.dumps(account(n, age_days=3)) + "\n" for n in range(5)))
    PrecomputeRun(
        client=redis_client,
        campaign=campaign,
        zones=dict(ZONES),
        policy=build_policy(campaign, None),
        provider=OfflineComposer(),
        now=NOW,
    ).run(path)
    found = by_reason(findings_of(redis_client, campaign, dict(ZONES)))
    group = found[("check:off_voice:exclamation", "funding", campaign.guideline_version)]
    assert (group.unit, group.failures, group.accounts, group.zones) == ("draft", 5, 5, ["hero_headline"])
    assert (group.layer, group.rule) == ("guideline", "pattern_concentration")
    assert "funding/hero_headline#1" in group.because
