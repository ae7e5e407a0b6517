"""Grounding: every word of a personal line comes from its cited facts, the account, approved copy."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from precompute.claims.grounding import (
    ASSERTING_STEMS,
    approved_word_problem,
    grounding_note,
    grounding_sources,
    ungrounded_words,
)
from precompute.claims.grounding_words import FUNCTION_WORDS
from precompute.inputs import check_campaign_inputs
from tests.corpora import REPO_ROOT
from tests.llm_server import LLMTestServer
from tests.precompute.claims.claim_corpus import CAMPAIGN, CONTEXT
from welcomemat.records.audit import Auditor, Via
from welcomemat.zones.held import HoldLayer, held_drafts
from welcomemat.zones.review import approve_held, show
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung

SOURCES = grounding_sources(CAMPAIGN)


def held(text: str, *fact_ids: str) -> list[str]:
    """The words of `text` nothing supports, citing `fact_ids` of Dymaxa's corpus facts."""
    cited = tuple(f for f in CONTEXT.facts if f.id in fact_ids)
    return [w for w, _ in ungrounded_words(text, CONTEXT, cited, SOURCES)]


@pytest.mark.parametrize(
    ("text", "facts", "unsupported"),
    [
        # The lines, in other words than any check's list.
        ("As an Acme Revenue customer, Dymaxa ramps faster", ("dymaxa-series-a",), ["customer"]),
        ("Dymaxa's SDRs already ramp on Acme Revenue", ("dymaxa-sdr-1",), ["already"]),
        (
            "Our mutual connection suggested we talk",
            ("dymaxa-series-a",),
            ["mutual", "connection", "suggested", "talk"],
        ),
        ("Your thoughts on SDR ramp resonated", ("dymaxa-sdr-1",), ["thoughts", "resonated"]),
        ("Congrats on acquiring a rival, Dymaxa", ("dymaxa-series-a",), ["acquiring", "rival"]),
        ("Sequoia must be thrilled", ("dymaxa-series-a",), ["Sequoia", "thrilled"]),
        ("Given your role at Dymaxa, ramp matters now", ("dymaxa-series-a",), ["Given", "role"]),
        # A name wherever it stands.
        ("Congrats to Index Ventures and Dymaxa", ("dymaxa-series-a",), ["Index", "Ventures"]),
    ],
)
def test_fabricated_lines_are_held_naming_their_words(
    text: str, facts: tuple[str, ...], unsupported: list[str]
) -> None:
    found = held(text, *facts)
    assert set(unsupported) <= set(found), found


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("Congrats on the Series A, Dymaxa", ("dymaxa-series-a",)),
        ("Dymaxa raised a Series A: ramp every new seller in weeks", ("dymaxa-series-a",)),
        ("Hiring four SDRs in Amsterdam? Ramp each one on your best rep's playbook", ("dymaxa-sdr-1",)),
        ("Congrats on opening in Berlin, Dymaxa", ("dymaxa-berlin",)),
        ("Welcome to the new Chief Revenue Officer, Ana Lopes", ("dymaxa-cro",)),
        ("Congrats to Ana Lopes on joining Dymaxa", ("dymaxa-cro",)),
        ("Thanks for joining our webinar on SDR onboarding, Joram", ("joram-webinar",)),
        ("Your post about ramping new SDRs made a point we share", ("joram-post",)),
    ],
)
def test_true_lines_in_the_campaigns_words_are_grounded(text: str, facts: tuple[str, ...]) -> None:
    assert held(text, *facts) == []


def test_a_word_asserting_a_relationship_needs_a_fact_even_when_the_copy_has_it() -> None:
    # "customers" is in no fact of Dymaxa's: approved copy saying it of others does not count.
    assert "custom" in ASSERTING_STEMS
    assert held("Every Acme Revenue customer ramps faster", "dymaxa-series-a") == ["customer"]
    # A pattern written for the cited fact's type may say what that type states.
    assert held("New funding usually means new sellers", "dymaxa-series-a") == []
    assert held("New funding usually means new sellers", "dymaxa-berlin") == ["funding"]


def test_the_note_names_the_words_and_why() -> None:
    cited = tuple(f for f in CONTEXT.facts if f.id == "dymaxa-series-a")
    note = grounding_note(
        ungrounded_words("As a longtime client, Dymaxa ramps fast", CONTEXT, cited, SOURCES)
    )
    assert note.startswith("words nothing supports: 'longtime' (a relationship no cited fact states), ")
    assert "'client' (a relationship no cited fact states)" in note


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gets_an_answer_and_never_an_exception(text: str) -> None:
    found = ungrounded_words(text, CONTEXT, CONTEXT.facts[:1], SOURCES)
    assert all(isinstance(w, str) and w for w, _ in found)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(sorted(FUNCTION_WORDS)), min_size=1, max_size=12))
def test_grammar_alone_asserts_nothing(words: list[str]) -> None:
    assert held(" ".join(words), "dymaxa-series-a") == []


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(ASSERTING_STEMS)), st.sampled_from(["Dymaxa is a {} now", "Your {} matters"]))
def test_an_asserting_word_from_no_fact_is_always_held(stem: str, shape: str) -> None:
    # A stem written as a word stems to itself. The product launch fact states only "launched"
    # (and what a launch is), and the campaign wrote no pattern for launches.
    text = shape.format(stem)
    found = held(text, "dymaxa-insights")
    launch_words = {"launch", "releas", "introduc", "unveil", "ship", "product", "insight"}  # its statement
    assert stem in [w.casefold() for w in found] or stem in launch_words, (text, found)


@pytest.mark.parametrize(
    ("word", "refused"),
    [
        ("sooner", False),
        ("smoother", False),
        ("customer", True),
        ("loved", True),
        ("two words", True),
        ("<b>", True),
    ],
)
def test_approved_words_are_checked_like_patterns(word: str, refused: bool) -> None:
    assert (approved_word_problem(word) is not None) is refused


def test_a_campaign_approving_an_asserting_word_is_refused_at_its_line(tmp_path: Path) -> None:
    text = (REPO_ROOT / "examples" / "campaign.yaml").read_text()
    campaign = tmp_path / "campaign.yaml"
    campaign.write_text(text.replace("approved_words: [help,", "approved_words: [client, help,", 1))
    for folder in ("theme", "zones"):
        (tmp_path / folder).symlink_to(REPO_ROOT / ("examples/theme" if folder == "theme" else "zones"))
    check = check_campaign_inputs(campaign, None, None)
    found = [p for p in check.problems if (p.field or "").startswith("approved_words")]
    assert (
        found
        and found[0].field == "approved_words.0"
        and "'client' asserts a relationship" in found[0].message
    )
    assert found[0].line == next(
        i for i, line in enumerate(campaign.read_text().splitlines(), 1) if "client" in line
    )


def test_an_ungrounded_model_line_is_held_with_its_note_and_a_person_may_approve_it(
    tmp_path: Path, redis_client: redis.Redis, llm_server: LLMTestServer
) -> None:
    from tests.precompute.test_openai_provider import NOW, TODAY, example_rows, provider_for, run
    from tests.server.conftest import example_inputs

    campaign, zones = example_inputs()
    # True, but "swiftly" is in no source: doubt a person can lift, unlike a broken rule.
    line = "Dymaxa raised a Series A: time to onboard sellers swiftly"
    llm_server.reset()
    llm_server.set_mode("lines", lines={"hero_headline": line})
    provider = provider_for(llm_server)
    try:
        rows = [r for r in example_rows(TODAY) if r["account_id"] == "acct_dymaxa"]
        for row in rows:
            row["tier"] = 2  # no review of the whole page: only the held zone waits for a person
        run(redis_client, campaign, zones, tmp_path, provider, rows)
    finally:
        provider.close()
        llm_server.reset()
    store = ZoneSetStore(redis_client)
    published = store.get(campaign.tenant, campaign.campaign, "acct_dymaxa")
    assert published is not None
    headline = next(z for z in published.zones if z.zone_id == "hero_headline")
    assert headline.rung is not Rung.PERSONAL and headline.text != line
    assert headline.reason == "check:ungrounded"
    record = show(redis_client, campaign.tenant, campaign.campaign, "acct_dymaxa")
    assert record is not None
    held_draft = held_drafts(record)["hero_headline"]
    assert held_draft.layer is HoldLayer.GROUNDING and held_draft.draft == line
    assert (
        held_draft.note
        == "words nothing supports: 'swiftly' (in no cited fact, account field or approved copy)"
    )
    assert held_draft.failures == ()  # doubt, not a broken rule: a person may approve it
    outcome = approve_held(
        redis_client,
        campaign.tenant,
        campaign.campaign,
        "acct_dymaxa",
        "hero_headline",
        auditor=Auditor("rita", Via.CLI, lambda: NOW),
        reason="checked with the account owner",
    )
    assert outcome.applied, outcome
    approved = store.get(campaign.tenant, campaign.campaign, "acct_dymaxa")
    assert approved is not None
    assert next(z for z in approved.zones if z.zone_id == "hero_headline").text == line
