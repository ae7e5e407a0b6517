"""The ladder's first rung needs a specific: a checked draft that uses none is published as segment copy."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from precompute.assemble import AccountOutcome, Assembler
from precompute.company_names import short_name
from precompute.context_builder import build_context
from precompute.policy import build_policy
from precompute.providers.base import GenerationRequest, GenerationResult, ProviderUsage, ZoneDraft
from precompute.specifics import build_vocabulary
from tests.corpora import REPO_ROOT
from tests.example_accounts import generator
from welcomemat.campaign.contract import load_campaign
from welcomemat.records.accounts import Account
from welcomemat.zones.contract import load_zone_contracts
from welcomemat.zones.zoneset import Rung, ZoneSetMode, ZoneSetStatus

ZONES = load_zone_contracts(REPO_ROOT / "zones")
CAMPAIGN = load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones=ZONES)
POLICY = build_policy(CAMPAIGN, None)
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
HIRING = ("dymaxa-sdr-1", "dymaxa-sdr-2", "dymaxa-sdr-3", "dymaxa-sdr-4")
FUNDING = ("dymaxa-series-a",)
# The example campaign's own copy: a funding pattern with no slot, a library proof point, a CTA.
GENERIC_SUPPORT = (
    "New funding usually means new sellers. Acme Revenue gets each one productive in weeks, not quarters."
)
LIBRARY_PROOF = "Mid-size SaaS teams cut SDR ramp time from 90 to 45 days with Acme Revenue."


@dataclass
class Scripted:
    """A provider that writes the drafts it is given (as a model would), whatever the request."""

    drafts: dict[str, ZoneDraft]
    name: str = "scripted"

    def fingerprint(self) -> str:
        return "scripted"

    def usage(self) -> ProviderUsage:
        return ProviderUsage()

    def generate(self, request: GenerationRequest) -> GenerationResult:
        return GenerationResult(drafts=self.drafts, model_calls=1)


def draft(zone_id: str, text: str, facts: tuple[str, ...], **kw: object) -> ZoneDraft:
    return ZoneDraft.model_validate(
        {"zone_id": zone_id, "text": text, "fact_ids": facts, "confidence": 0.9, **kw}
    )


def assemble(drafts: list[ZoneDraft], *, tier: int = 2) -> AccountOutcome:
    account = Account.model_validate({**generator().dymaxa(NOW.date()), "tier": tier})
    assembler = Assembler(
        campaign=CAMPAIGN,
        zones=ZONES,
        policy=POLICY,
        provider=Scripted({d.zone_id: d for d in drafts}),
        vocabulary=build_vocabulary(CAMPAIGN),
        other_companies=frozenset({short_name(account.name).casefold()}),
        now=NOW,
    )
    neutral = Account(account_id="segment-copy", name="acme", domain="example.com", segment="saas-mid")
    assembler.prepare_fallbacks(build_context(neutral, CAMPAIGN, POLICY, assembler.as_of))
    outcome = assembler.assemble(account, "input-hash")
    # Every draft here passes every check (doubt aside): only specificity decides its rung.
    failed = {
        z.content.zone_id: [f.reason for f in z.failures if f.check != "confidence"] for z in outcome.zones
    }
    assert not any(failed.values()), failed
    return outcome


def expiry(outcome: AccountOutcome, fact_ids: tuple[str, ...]) -> datetime:
    day = min(f.expires_at for f in outcome.context.facts if f.id in fact_ids)
    return datetime.combine(day, time.min, tzinfo=UTC)


def test_a_pattern_without_a_slot_and_a_library_proof_point_citing_a_fact_are_segment_copy() -> None:
    outcome = assemble(
        [
            draft("hero_headline", "Hiring four SDRs in Amsterdam?", HIRING),
            draft("hero_support", GENERIC_SUPPORT, FUNDING),
            draft("proof", LIBRARY_PROOF, FUNDING),
            draft("cta", "Book a 20-minute ramp review", FUNDING, cta_id="book_ramp_review"),
            draft("continuation_headline", "Your four new SDRs, ramped in weeks", HIRING),
        ]
    )
    zs = outcome.zone_set
    rungs = {z.zone_id: (z.rung, z.reason) for z in zs.zones}
    assert rungs == {
        "hero_headline": (Rung.PERSONAL, "personal:hiring"),
        "hero_support": (Rung.SEGMENT, "not_specific:funding"),
        "proof": (Rung.SEGMENT, "not_specific:funding"),
        "cta": (Rung.SEGMENT, "not_specific:funding"),
        "continuation_headline": (Rung.PERSONAL, "personal:hiring"),
    }
    support = zs.zone("hero_support")
    assert support is not None and support.text == GENERIC_SUPPORT  # published as written ...
    assert [f.fact_id for f in support.facts] == list(FUNDING)  # ... with what it cites
    assert zs.mode is ZoneSetMode.DEGRADED
    # The generic lines were written because of the round: the set ends when the round's window does,
    # before the hiring facts the personal zones cite.
    assert expiry(outcome, FUNDING) < expiry(outcome, HIRING)
    assert zs.valid_until == expiry(outcome, FUNDING)


def test_a_set_of_only_generic_lines_is_in_fallback_mode_and_still_reviewed_on_tier_one() -> None:
    generic = [
        draft("hero_support", GENERIC_SUPPORT, FUNDING),
        draft("proof", LIBRARY_PROOF, ()),  # library copy citing nothing
        draft("cta", "Book a 20-minute ramp review", FUNDING, cta_id="book_ramp_review"),
    ]
    tier_two = assemble(generic).zone_set
    assert tier_two.mode is ZoneSetMode.FALLBACK and tier_two.status is ZoneSetStatus.PUBLISHED
    proof = tier_two.zone("proof")
    assert proof is not None and (proof.rung, proof.reason, proof.facts) == (
        Rung.SEGMENT,
        "not_specific:library",
        (),
    )
    # Written from the account's facts: a tier-1 page still waits for a person.
    tier_one = assemble(generic, tier=1).zone_set
    assert tier_one.mode is ZoneSetMode.FALLBACK and tier_one.status is ZoneSetStatus.PENDING_REVIEW


def test_a_held_draft_that_is_not_specific_would_be_published_as_segment_copy() -> None:
    outcome = assemble(
        [
            draft("hero_headline", "Congrats on the Series A, Dymaxa", FUNDING, confidence=0.3),
            draft("hero_support", GENERIC_SUPPORT, FUNDING, confidence=0.3),
        ]
    )
    held = {z.content.zone_id: z.held for z in outcome.zones if z.held is not None}
    assert held["hero_headline"] is not None and held["hero_headline"].content is not None
    assert held["hero_headline"].content.rung is Rung.PERSONAL
    assert held["hero_support"] is not None and held["hero_support"].content is not None
    assert (held["hero_support"].content.rung, held["hero_support"].content.reason) == (
        Rung.SEGMENT,
        "not_specific:funding",
    )


def test_the_account_name_is_not_a_specific() -> None:
    outcome = assemble([draft("hero_headline", "Congrats on the funding, Dymaxa", FUNDING)])
    headline = outcome.zone_set.zone("hero_headline")
    assert headline is not None and (headline.rung, headline.reason) == (Rung.SEGMENT, "not_specific:funding")
    assert outcome.zone_set.valid_until == expiry(outcome, FUNDING)
    assert outcome.zone_set.valid_until is not None and outcome.zone_set.valid_until > NOW + timedelta(days=1)
