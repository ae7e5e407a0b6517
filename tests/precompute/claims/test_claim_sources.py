"""Every claim class is refused whoever wrote the line: a pattern a marketer gave the offline
composer, or a model through the real `openai` client and a real socket (tests/llm_server.py,
mode `lines`). The zone takes its segment's copy and records `check:<the class's code>`; a true
line of the same kind is published, and served no longer than it stays true.

Dymaxa on Sunday 29 November 2026 (examples/make_accounts.py): a Series A announced on Thursday
the 26th, four SDR roles in Amsterdam.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, time

import pytest

from precompute.assemble import AccountOutcome, Assembler, neutral_context
from precompute.checks import build_vocabulary
from precompute.explain import explain_record, format_explain
from precompute.policy import build_policy
from precompute.providers.base import Provider
from precompute.providers.offline import OfflineComposer
from precompute.providers.openai_provider import OpenAIProvider
from tests.corpora import REPO_ROOT
from tests.example_accounts import generator
from tests.llm_server import LLMTestServer
from tests.precompute.test_openai_provider import provider_for
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.reasons import ClaimReason
from welcomemat.records.accounts import Account
from welcomemat.zones.contract import load_zone_contracts
from welcomemat.zones.zoneset import Rung

ZONES = load_zone_contracts(REPO_ROOT / "zones")
CAMPAIGN = load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones=ZONES)
AS_OF = date(2026, 11, 29)
DYMAXA = Account.model_validate(generator().dymaxa(AS_OF) | {"tier": 2})

# One hero headline per class, as a marketer might write the pattern (slots filled from the
# Series A) or a model the line, with the funding fact cited.
PATTERNS: dict[ClaimReason, str] = {
    ClaimReason.INVENTED_QUOTE: "Loved your recent post about the {round}, {account}",
    ClaimReason.UNSUPPORTED_RECENCY: "Congrats on your new role, {account}",
    ClaimReason.UNSUPPORTED_ACHIEVEMENT: "Congrats to award-winning {account} on the {round}",
    ClaimReason.UNSUPPORTED_RELATIONSHIP: "Great to work with the {account} team again",
    ClaimReason.UNSUPPORTED_INTENT: "{account} plans to double its sales team",
    ClaimReason.TRACKING_DISCLOSURE: "We saw you on our pricing page after the {round}",
    ClaimReason.FLATTERY: "Amazing work on the {round}, {account}!",
    ClaimReason.BANNED_OPENER: "Quick question about the {round}, {account}",
}
TRUE_THIS_WEEK = "Congrats on this week's {round}, {account}"


def line(pattern: str) -> str:
    return pattern.format(round="Series A", account="Dymaxa")


def assemble(provider: Provider, campaign: Campaign = CAMPAIGN) -> AccountOutcome:
    policy = build_policy(campaign, None)
    assembler = Assembler(
        campaign=campaign,
        zones=ZONES,
        policy=policy,
        provider=provider,
        vocabulary=build_vocabulary(campaign),
        other_companies=frozenset({"Dymaxa", "Globex"}),
        now=datetime.combine(AS_OF, time(9), tzinfo=UTC),
    )
    assembler.prepare_fallbacks(neutral_context(campaign, policy, assembler.as_of))
    return assembler.assemble(DYMAXA, "input-hash")


def headline_refused_by(outcome: AccountOutcome, reason: ClaimReason) -> None:
    zone = next(z for z in outcome.zones if z.content.zone_id == "hero_headline")
    assert zone.draft is not None, zone.content.reason
    assert zone.content.rung is Rung.SEGMENT, zone.content
    assert reason.value in {f.reason for f in zone.failures}, zone.failures
    assert zone.content.reason.startswith("check:")
    assert zone.content.text == CAMPAIGN.segments["saas-mid"].zones["hero_headline"].text


def with_headline_pattern(pattern: str) -> Campaign:
    patterns = {**CAMPAIGN.patterns, "funding": {**CAMPAIGN.patterns["funding"], "hero_headline": (pattern,)}}
    return CAMPAIGN.model_copy(update={"patterns": patterns})


# -- a pattern a marketer wrote, filled by the offline composer -------------------------------


@pytest.mark.parametrize("reason", list(PATTERNS), ids=str)
def test_a_marketer_s_pattern_making_a_claim_of_each_class_is_refused(reason: ClaimReason) -> None:
    outcome = assemble(OfflineComposer(), with_headline_pattern(PATTERNS[reason]))
    headline_refused_by(outcome, reason)


def test_explain_says_which_class_refused_the_draft_and_what_it_means() -> None:
    outcome = assemble(OfflineComposer(), with_headline_pattern(PATTERNS[ClaimReason.FLATTERY]))
    text = format_explain(explain_record(outcome, version=1))
    assert "draft was: “Amazing work on the Series A, Dymaxa!”" in text
    assert "draft failed flattery: flattery — amazing (never allowed)" in text
    assert f"({ClaimReason.FLATTERY.doc})" in text


def test_a_true_time_relative_pattern_that_would_end_the_page_within_two_weeks_falls_back() -> None:
    # "This week's" is true on Sunday 29 November, but only until the 30th: a page needs two
    # weeks (`precompute.date_phrases`), so the line is refused rather than let end the page
    # tomorrow. The `{when}` slot writes "in November" instead.
    outcome = assemble(OfflineComposer(), with_headline_pattern(TRUE_THIS_WEEK))
    zone = next(z for z in outcome.zones if z.content.zone_id == "hero_headline")
    assert zone.draft is not None and zone.draft.valid_until == date(2026, 11, 30)  # "this week" ends Sunday
    assert zone.content.rung is not Rung.PERSONAL and zone.content.reason == "check:short_lived"
    assert outcome.zone_set.valid_until is None or outcome.zone_set.valid_until > datetime(
        2026, 12, 12, tzinfo=UTC
    )


# -- a model, through the real openai client --------------------------------------------------


@pytest.fixture
def model(llm_server: LLMTestServer) -> Iterator[Callable[..., OpenAIProvider]]:
    llm_server.reset()
    made: list[OpenAIProvider] = []

    def make(lines: dict[str, str], fact_ids: dict[str, list[str]] | None = None) -> OpenAIProvider:
        llm_server.set_mode("lines", lines=lines, fact_ids=fact_ids or {"hero_headline": ["dymaxa-series-a"]})
        made.append(provider_for(llm_server))
        return made[-1]

    yield make
    for provider in made:
        provider.close()


@pytest.mark.parametrize("reason", list(PATTERNS), ids=str)
def test_a_model_s_line_making_a_claim_of_each_class_is_refused(
    reason: ClaimReason, model: Callable[..., OpenAIProvider], llm_server: LLMTestServer
) -> None:
    outcome = assemble(model({"hero_headline": line(PATTERNS[reason])}))
    headline_refused_by(outcome, reason)
    generated = llm_server.requests("generate")
    assert len(generated) == 1 and generated[0].status == 200  # the model answered: the checks refused


def test_a_model_s_true_but_short_lived_line_falls_back_and_a_lasting_one_is_published(
    model: Callable[..., OpenAIProvider],
) -> None:
    outcome = assemble(model({"hero_headline": line(TRUE_THIS_WEEK)}))
    zone = next(z for z in outcome.zones if z.content.zone_id == "hero_headline")
    assert zone.draft is not None and zone.draft.valid_until == date(2026, 11, 30)
    assert zone.content.rung is not Rung.PERSONAL and zone.content.reason == "check:short_lived"
    lasting = assemble(model({"hero_headline": "Congrats on the Series A in November, Dymaxa"}))
    zone = next(z for z in lasting.zones if z.content.zone_id == "hero_headline")
    assert zone.content.rung is Rung.PERSONAL, zone.failures
