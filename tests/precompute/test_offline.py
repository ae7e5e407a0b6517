"""The offline composer: true, cited, deterministic zone drafts from trusted facts only."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from precompute.context import (
    EffectivePolicy,
    Firmographics,
    GovernedContext,
    Identity,
    IdentityConfidence,
    IdentityReason,
    TrustedFact,
)
from precompute.providers import offline
from precompute.providers.base import NOTE_CHARS, Decline, GenerationRequest, GenerationResult, Provider
from precompute.providers.offline import (
    OfflineComposer,
    count_word,
    when_phrase,
    when_phrase_valid_until,
)
from tests.corpora import REPO_ROOT
from welcomemat.accounts import Account
from welcomemat.campaign import Campaign, load_campaign
from welcomemat.campaign_sections import Confidence
from welcomemat.reasons import ZoneReason
from welcomemat.zone_contract import load_zone_contracts

ZONES = load_zone_contracts(REPO_ROOT / "zones")
CAMPAIGN = load_campaign(REPO_ROOT / "examples/campaign.yaml", zones=ZONES)
AS_OF = date(2026, 11, 29)  # a Sunday
FIELD_KEYS = ("round", "role", "role_short", "role_plural", "location", "person", "subject")
SDR_IDS = ("dymaxa-sdr-1", "dymaxa-sdr-2", "dymaxa-sdr-3", "dymaxa-sdr-4")
COMPOSER = OfflineComposer()


def dymaxa_record() -> dict[str, Any]:
    first = (REPO_ROOT / "examples/accounts.jsonl").read_text(encoding="utf-8").splitlines()[0]
    record: dict[str, Any] = json.loads(first)
    return record


def trusted(raw: Mapping[str, Any], campaign: Campaign = CAMPAIGN) -> TrustedFact:
    published = date.fromisoformat(raw["published_at"])
    window = campaign.signal_windows_days.get(raw["type"], 90)
    return TrustedFact(
        id=raw["id"],
        type=raw["type"],
        statement=raw.get("statement", "a fact"),
        source_url=raw.get("source_url", "https://example.com/"),
        published_at=published,
        expires_at=published + timedelta(days=window),
        confidence=Confidence.HIGH,
        fields={k: raw[k] for k in FIELD_KEYS if k in raw},
    )


def context(
    record: Mapping[str, Any],
    facts: Sequence[TrustedFact] | None = None,
    *,
    as_of: date = AS_OF,
    short_name: str = "Dymaxa",
    claims_allowed: bool = True,
) -> GovernedContext:
    account = Account.model_validate(record)
    return GovernedContext(
        account=account,
        short_name=short_name,
        identity=Identity(
            registrable_domain=account.domain,
            confidence=IdentityConfidence.HIGH if claims_allowed else IdentityConfidence.NONE,
            claims_allowed=claims_allowed,
            reason=IdentityReason.DOMAIN_CONFIRMED if claims_allowed else IdentityReason.FREEMAIL_DOMAIN,
        ),
        facts=tuple(trusted(f) for f in record["facts"]) if facts is None else tuple(facts),
        decisions=(),
        firmographics=Firmographics(employee_bucket=None, industry=None, country=None, city=None),
        as_of=as_of,
    )


POLICY = EffectivePolicy(
    signal_windows_days=CAMPAIGN.signal_windows_days,
    min_confidence=Confidence.MEDIUM,
    banned_phrases=CAMPAIGN.banned_phrases,
    banned_openers=CAMPAIGN.banned_openers,
    prohibited_claims=CAMPAIGN.prohibited_claims,
)


def request(ctx: GovernedContext, page: str = "landing", campaign: Campaign = CAMPAIGN) -> GenerationRequest:
    zones = tuple(ZONES[z] for z in campaign.pages[page].zones)
    return GenerationRequest(context=ctx, campaign=campaign, policy=POLICY, page_id=page, zones=zones)


def generate(ctx: GovernedContext, page: str = "landing", campaign: Campaign = CAMPAIGN) -> GenerationResult:
    return COMPOSER.generate(request(ctx, page, campaign))


def hiring(fact_id: str, published: str, role: str = "SDR", location: str = "Amsterdam") -> dict[str, Any]:
    return {
        "id": fact_id,
        "type": "hiring",
        "published_at": published,
        "role": f"{role} role",
        "role_plural": f"{role}s",
        "location": location,
    }


# -- the reference account --------------------------------------------------------------------


def test_is_a_provider_with_a_stable_fingerprint() -> None:
    provider: Provider = COMPOSER
    assert provider.name == "offline"
    assert COMPOSER.fingerprint() == OfflineComposer().fingerprint()
    assert len(COMPOSER.fingerprint()) == 64


def test_fingerprint_follows_the_composer_version(monkeypatch: pytest.MonkeyPatch) -> None:
    before = COMPOSER.fingerprint()
    monkeypatch.setattr(offline, "COMPOSER_VERSION", offline.COMPOSER_VERSION + "+changed")
    assert COMPOSER.fingerprint() != before


def test_dymaxa_landing_page_cites_the_series_a_and_the_four_sdr_roles() -> None:
    result = generate(context(dymaxa_record()))
    assert result.model_calls == 0
    drafts = result.drafts
    assert set(drafts) == {"hero_headline", "hero_support", "proof", "cta"}

    headline = drafts["hero_headline"]
    assert headline.text == "Congrats on the Series A on Thursday, Dymaxa"
    assert headline.fact_ids == ("dymaxa-series-a",)
    assert headline.valid_until == date(2026, 12, 3)  # next Thursday would make "on Thursday" ambiguous
    assert headline.confidence == 0.9

    # The later zones prefer the type the headline did not use: the four SDR postings.
    support = drafts["hero_support"]
    assert support.text.startswith("Onboarding four new SDRs is a lot of work.")
    assert set(support.fact_ids) == set(SDR_IDS)
    assert support.valid_until is None  # no time-relative words
    proof = drafts["proof"]
    assert proof.text == "Teams hiring SDRs cut ramp time from 90 to 45 days with Acme Revenue."
    assert set(proof.fact_ids) == set(SDR_IDS)

    cta = drafts["cta"]
    assert (cta.cta_id, cta.text) == ("book_ramp_review", "Book a 20-minute ramp review")
    assert cta.fact_ids == ("dymaxa-series-a",)

    cited = {fid for d in drafts.values() for fid in d.fact_ids}
    assert cited == {"dymaxa-series-a", *SDR_IDS}
    for zone_id, draft in drafts.items():
        assert draft.zone_id == zone_id
        assert ZONES[zone_id].fits(draft.text)


def test_dymaxa_continuation_page() -> None:
    drafts = generate(context(dymaxa_record()), page="continuation").drafts
    assert drafts["continuation_headline"].text == "Congrats again on the Series A: here is the ramp plan"
    assert drafts["continuation_headline"].fact_ids == ("dymaxa-series-a",)
    assert set(drafts["hero_support"].fact_ids) == set(SDR_IDS)
    assert drafts["cta"].cta_id == "book_ramp_review"


def test_same_request_twice_is_identical() -> None:
    req = request(context(dymaxa_record()))
    assert COMPOSER.generate(req) == COMPOSER.generate(req)
    assert OfflineComposer().generate(req) == COMPOSER.generate(req)


# -- nothing to say ---------------------------------------------------------------------------


@pytest.mark.parametrize("claims_allowed", [True, False])
def test_no_usable_fact_declines_personal_zones_and_uses_the_proof_library(claims_allowed: bool) -> None:
    record = dymaxa_record()
    facts = None if not claims_allowed else ()  # identity gate: facts present but no claims allowed
    result = generate(context(record, facts, claims_allowed=claims_allowed))
    assert set(result.drafts) == {"proof"}
    proof = result.drafts["proof"]
    assert proof.text == CAMPAIGN.proof_library[0].text  # the saas-mid item comes first
    assert proof.fact_ids == ()
    assert proof.confidence == 0.8
    reasons = {zone_id: d.reason for zone_id, d in result.declined.items()}
    assert reasons == {
        "hero_headline": ZoneReason.NO_PATTERN_FILLED,
        "hero_support": ZoneReason.NO_PATTERN_FILLED,
        "cta": ZoneReason.NO_CTA_SUPPORT,
    }
    assert result.declined["hero_headline"].note.startswith("no trusted fact of a type with a pattern here")
    assert result.declined["cta"].note.startswith("no trusted fact of a supporting type (expansion, funding")
    continuation = generate(context(record, facts, claims_allowed=claims_allowed), page="continuation")
    assert continuation.drafts == {}
    assert set(continuation.declined) == {"continuation_headline", "hero_support", "cta"}


def test_a_fact_no_pattern_can_state_is_no_pattern_filled_yet_supports_the_cta() -> None:
    """A funding fact without its round: no funding pattern fills, but the fact still backs the ask."""
    record = dymaxa_record()
    roundless = trusted({k: v for k, v in record["facts"][0].items() if k != "round"})
    result = generate(context(record, (roundless,)))
    assert result.drafts["cta"].fact_ids == ("dymaxa-series-a",)
    headline = result.declined["hero_headline"]
    assert headline.reason is ZoneReason.NO_PATTERN_FILLED
    assert headline.note == "no funding pattern fits the trusted facts and the zone's limits"
    assert "hero_support" in result.drafts  # its funding pattern names no round
    assert result.drafts["proof"].fact_ids == ()  # no hiring fact: the proof library's copy


def test_a_cta_label_over_the_zone_limits_is_no_cta_support() -> None:
    tight = {**ZONES, "cta": ZONES["cta"].model_copy(update={"max_chars": 5})}
    req = request(context(dymaxa_record()))
    req = GenerationRequest(
        context=req.context,
        campaign=req.campaign,
        policy=req.policy,
        page_id=req.page_id,
        zones=tuple(tight[z.id] for z in req.zones),
    )
    result = COMPOSER.generate(req)
    assert "cta" not in result.drafts
    assert result.declined["cta"].reason is ZoneReason.NO_CTA_SUPPORT
    assert result.declined["cta"].note == "the label of CTA 'book_ramp_review' does not fit the zone's limits"


def test_a_decline_takes_only_a_provider_code_and_keeps_its_note_to_one_printable_line() -> None:
    with pytest.raises(ValidationError, match="not a reason a provider gives"):
        Decline(reason=ZoneReason.PERSONAL)
    with pytest.raises(ValidationError):
        Decline(reason="declined")  # type: ignore[arg-type]  # an old code is read, never written
    note = Decline(reason=ZoneReason.SELF_REVIEW_REJECTED, note="too\n\x1b[2J  bold\tclaim " * 50).note
    assert note.startswith("too [2J bold claim too") and note.isprintable() and len(note) == NOTE_CHARS
    assert Decline(reason="no_answer").reason is ZoneReason.NO_ANSWER  # type: ignore[arg-type]


def test_every_requested_zone_is_drafted_or_declined_never_both() -> None:
    for facts in (None, ()):
        for page in CAMPAIGN.pages:
            result = generate(context(dymaxa_record(), facts), page=page)
            assert not set(result.drafts) & set(result.declined)
            assert set(result.drafts) | set(result.declined) == set(CAMPAIGN.pages[page].zones)


def test_proof_library_falls_back_to_an_item_for_every_segment() -> None:
    record = dymaxa_record() | {"segment": "services"}
    proof = generate(context(record, ())).drafts["proof"]
    assert proof.text == "New SDRs on Acme Revenue book their first meeting in their second week."


def test_stale_and_future_facts_are_not_used() -> None:
    record = dymaxa_record()
    stale = trusted({"id": "old", "type": "funding", "round": "Seed", "published_at": "2026-01-01"})
    future = trusted({"id": "soon", "type": "funding", "round": "Series B", "published_at": "2026-12-01"})
    result = generate(context(record, (stale, future)))
    assert set(result.drafts) == {"proof"}


def test_only_funding_gives_every_zone_the_funding_fact_and_proof_from_the_library() -> None:
    record = dymaxa_record()
    funding = trusted(record["facts"][0])
    drafts = generate(context(record, (funding,))).drafts
    assert drafts["hero_headline"].fact_ids == drafts["hero_support"].fact_ids == ("dymaxa-series-a",)
    assert drafts["proof"].fact_ids == ()
    assert drafts["cta"].fact_ids == ("dymaxa-series-a",)


# -- choosing facts ---------------------------------------------------------------------------


def test_most_recent_first_then_type_priority() -> None:
    record = dymaxa_record()
    funding = {"id": "f", "type": "funding", "round": "Series B", "published_at": "2026-11-20"}
    newer_hiring = (trusted(hiring("h1", "2026-11-27")), trusted(hiring("h2", "2026-11-10")))
    headline = generate(context(record, (trusted(funding), *newer_hiring))).drafts["hero_headline"]
    assert headline.text == "Hiring two SDRs in Amsterdam?"  # the group's newest posting is newer
    assert headline.fact_ids == ("h1", "h2")

    same_day_hiring = trusted(hiring("h", "2026-11-20"))
    expansion = trusted({"id": "e", "type": "expansion", "location": "Berlin", "published_at": "2026-11-20"})
    drafts = generate(context(record, (same_day_hiring, expansion, trusted(funding)))).drafts
    assert drafts["hero_headline"].fact_ids == ("f",)  # funding > expansion > hiring
    assert drafts["hero_support"].fact_ids == ("e",)  # the next type not yet used on the page


def test_a_single_posting_never_reads_one_plural() -> None:
    record = dymaxa_record()
    drafts = generate(context(record, (trusted(hiring("h", "2026-11-27")),))).drafts
    assert "hero_headline" not in drafts  # "Hiring one SDRs in Amsterdam?" is refused
    assert "hero_support" not in drafts  # "One new SDRs is ..." too
    # The plural-without-count proof pattern still fits a single posting.
    assert drafts["proof"].text.startswith("Teams hiring SDRs")


def test_hiring_uses_the_largest_group_and_cites_all_of_it() -> None:
    record = dymaxa_record()
    facts = [
        trusted(hiring("ae-berlin", "2026-11-28", role="AE", location="Berlin")),
        *(trusted(hiring(f"sdr-{i}", f"2026-11-1{i}")) for i in range(3)),
    ]
    headline = generate(context(record, facts)).drafts["hero_headline"]
    assert headline.text == "Hiring three SDRs in Amsterdam?"
    assert set(headline.fact_ids) == {"sdr-0", "sdr-1", "sdr-2"}


def test_group_slots_are_only_fields_all_members_agree_on() -> None:
    record = dymaxa_record()
    a = hiring("a", "2026-11-20") | {"role": "Sales Development Rep"}
    b = hiring("b", "2026-11-21") | {"role": "Business Development Rep"}
    units = offline._units_by_type(context(record, (trusted(a), trusted(b))), frozenset({"hiring"}))
    unit = units["hiring"][0]
    assert unit.slots["role_plural"] == "SDRs"
    assert "role" not in unit.slots
    assert unit.slots["role_count"] == "two"


def test_pattern_choice_is_stable_per_account_and_varies_across_accounts() -> None:
    patterns = {
        **CAMPAIGN.patterns,
        "funding": {
            **CAMPAIGN.patterns["funding"],
            "hero_headline": (
                "Congrats on the {round} {when}, {account}",
                "{account} raised a {round} {when}",
                "A {round} {when}: congrats, {account}",
            ),
        },
    }
    campaign = CAMPAIGN.model_copy(update={"patterns": patterns})
    seen = set()
    for i in range(40):
        record = dymaxa_record() | {"account_id": f"acct_{i}"}
        ctx = context(record)
        first = generate(ctx, campaign=campaign).drafts["hero_headline"].text
        assert generate(ctx, campaign=campaign).drafts["hero_headline"].text == first
        seen.add(first)
    assert len(seen) == 3


def test_a_pattern_that_does_not_fit_gives_way_to_the_next() -> None:
    long_first = "{account} raised a {round} " + "and that is very very good news indeed " * 3 + "{when}"
    patterns = {"funding": {"hero_headline": (long_first, "A {round} for {account}")}}
    campaign = CAMPAIGN.model_copy(update={"patterns": patterns})
    for i in range(10):  # whichever pattern the hash starts at, the one that fits wins
        record = dymaxa_record() | {"account_id": f"acct_{i}"}
        draft = generate(context(record), campaign=campaign).drafts["hero_headline"]
        assert draft.text == "A Series A for Dymaxa"
        assert draft.valid_until is None


def test_cta_follows_the_zone_fact_types_when_it_names_them() -> None:
    record = dymaxa_record()
    expansion = trusted({"id": "e", "type": "expansion", "location": "Berlin", "published_at": "2026-11-20"})
    ctx = context(record, (expansion,))
    assert generate(ctx).drafts["cta"].fact_ids == ("e",)  # the campaign writes expansion patterns
    narrow = ZONES["cta"].model_copy(update={"fact_types": frozenset({"funding", "hiring"})})
    req = GenerationRequest(context=ctx, campaign=CAMPAIGN, policy=POLICY, page_id="landing", zones=(narrow,))
    assert COMPOSER.generate(req).drafts == {}


# -- hostile values ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "round_name",
    [
        "<script>alert(1)</script>",
        "Series A" + "A" * 500,
        "{account.__class__}",
        "Series A\u202e",  # right-to-left override: would reorder the rendered line
        "",
        "   ",
    ],
)
def test_hostile_slot_values_are_refused(round_name: str) -> None:
    record = dymaxa_record()
    funding = trusted(record["facts"][0] | {"round": round_name})
    result = generate(context(record, (funding,)))
    assert "hero_headline" not in result.drafts
    for draft in result.drafts.values():
        assert not set(draft.text) & set("<>{}\u202e")
        assert not round_name.strip() or round_name.strip() not in draft.text


def test_hostile_account_name_is_refused() -> None:
    record = dymaxa_record()
    expansion = trusted({"id": "e", "type": "expansion", "location": "Berlin", "published_at": "2026-11-20"})
    drafts = generate(context(record, (expansion,), short_name="<b>Dymaxa</b>")).drafts
    assert "hero_headline" not in drafts  # its only expansion pattern names the account
    assert "<" not in "".join(d.text for d in drafts.values())


def test_whitespace_in_values_is_collapsed() -> None:
    record = dymaxa_record()
    funding = trusted(record["facts"][0] | {"round": " Series\n\tA "})
    headline = generate(context(record, (funding,))).drafts["hero_headline"]
    assert headline.text == "Congrats on the Series A on Thursday, Dymaxa"


@pytest.mark.parametrize(
    "pattern", ["{account.__class__}", "{account!r} {round}", "{0}", "{round:>70}", "{round", "{account[0]}"]
)
def test_patterns_that_reach_beyond_plain_slots_are_skipped(pattern: str) -> None:
    campaign = CAMPAIGN.model_copy(update={"patterns": {"funding": {"hero_headline": (pattern,)}}})
    assert "hero_headline" not in generate(context(dymaxa_record()), campaign=campaign).drafts


def test_a_fact_field_cannot_shadow_a_computed_slot() -> None:
    record = dymaxa_record()
    funding = trusted(record["facts"][0] | {"round": "Series A"})
    funding = TrustedFact(**{**funding.__dict__, "fields": {**funding.fields, "account": "Not Dymaxa"}})
    assert generate(context(record, (funding,))).drafts["hero_headline"].text.endswith(", Dymaxa")


# -- the `when` phrase ------------------------------------------------------------------------

WHEN_TABLE = [
    # days ago, phrase at AS_OF (Sunday 29 November 2026), valid until
    (0, "today", date(2026, 11, 30)),
    (1, "yesterday", date(2026, 11, 30)),
    (2, "on Friday", date(2026, 12, 4)),
    (3, "on Thursday", date(2026, 12, 3)),
    (4, "on Wednesday", date(2026, 12, 2)),
    (5, "on Tuesday", date(2026, 12, 1)),
    (6, "on Monday", date(2026, 11, 30)),
    (7, "on 22 November", date(2027, 1, 1)),
    (8, "on 21 November", date(2027, 1, 1)),
    (9, "on 20 November", date(2027, 1, 1)),
    (10, "on 19 November", date(2027, 1, 1)),
    (11, "on 18 November", date(2027, 1, 1)),
    (12, "on 17 November", date(2027, 1, 1)),
    (13, "on 16 November", date(2027, 1, 1)),
    (14, "on 15 November", date(2027, 1, 1)),
    (15, "on 14 November", date(2027, 1, 1)),
    (16, "on 13 November", date(2027, 1, 1)),
    (17, "on 12 November", date(2027, 1, 1)),
    (18, "on 11 November", date(2027, 1, 1)),
    (19, "on 10 November", date(2027, 1, 1)),
    (20, "on 9 November", date(2027, 1, 1)),
]


@pytest.mark.parametrize(("days", "phrase", "until"), WHEN_TABLE)
def test_when_phrase_table(days: int, phrase: str, until: date) -> None:
    published = AS_OF - timedelta(days=days)
    assert when_phrase(published, AS_OF) == phrase
    assert when_phrase_valid_until(published, AS_OF) == until


def test_when_phrase_across_a_year_end() -> None:
    assert when_phrase(date(2025, 12, 20), date(2026, 1, 5)) == "on 20 December 2025"
    assert when_phrase_valid_until(date(2025, 12, 20), date(2026, 1, 5)) == date.max
    assert when_phrase(date(2026, 12, 30), date(2027, 1, 1)) == "on Wednesday"


def test_future_dates_have_no_phrase() -> None:
    with pytest.raises(ValueError):
        when_phrase(AS_OF + timedelta(days=1), AS_OF)
    with pytest.raises(ValueError):
        when_phrase_valid_until(AS_OF + timedelta(days=1), AS_OF)


def phrase_is_true(phrase: str, published: date, today: date) -> bool:
    """An independent reading of the phrase, as a visitor on `today` would understand it."""
    days = (today - published).days
    if phrase == "today":
        return days == 0
    if phrase == "yesterday":
        return days == 1
    words = phrase.split()
    if len(words) == 2:  # "on Thursday": the most recent past Thursday, not today
        return 1 <= days <= 6 and published.strftime("%A") == words[1]
    day, month = int(words[1]), words[2]
    year = int(words[3]) if len(words) == 4 else today.year
    return (published.day, published.strftime("%B"), published.year) == (day, month, year)


@given(
    as_of=st.dates(min_value=date(2000, 1, 1), max_value=date(2100, 12, 31)),
    age=st.integers(min_value=0, max_value=800),
    step=st.integers(min_value=0, max_value=1_000),
)
def test_the_phrase_stays_true_until_valid_until(as_of: date, age: int, step: int) -> None:
    published = as_of - timedelta(days=age)
    phrase = when_phrase(published, as_of)
    until = when_phrase_valid_until(published, as_of)
    assert until > as_of
    day = as_of + timedelta(days=step)
    if day < until:
        assert when_phrase(published, day) == phrase
        assert phrase_is_true(phrase, published, day)
    if until != date.max:  # and not a day longer: the cap is tight
        assert when_phrase(published, until) != phrase


def test_count_words() -> None:
    assert [count_word(n) for n in (1, 4, 12, 13, 40)] == ["one", "four", "twelve", "13", "40"]


# -- population: limits, honesty, speed -------------------------------------------------------

TYPES = ("funding", "hiring", "expansion", "leadership", "product_launch", "partnership")
VALUES = {
    "round": ["Seed", "Series A", "Series B", "Series C extension round", "<b>x</b>", "Z" * 70],
    "role_plural": ["SDRs", "AEs", "Account Executives", "Customer Success Managers"],
    "role": ["SDR", "Account Executive"],
    "location": ["Amsterdam", "Berlin", "São Paulo", "Saint-Jean-de-Luz-sur-Mer-et-Environs", "{x}"],
    "person": ["Ana Souza", "Li Wei"],
}


def synthetic_contexts(n: int, seed: int = 7) -> list[GovernedContext]:
    rng = random.Random(seed)
    base = dymaxa_record()
    out = []
    for i in range(n):
        facts = []
        for j in range(rng.randint(0, 7)):
            fact_type = rng.choice(TYPES)
            raw: dict[str, Any] = {
                "id": f"f{i}-{j}",
                "type": fact_type,
                "published_at": (AS_OF - timedelta(days=rng.randint(0, 40))).isoformat(),
            }
            for key, options in VALUES.items():
                if rng.random() < 0.7:
                    raw[key] = rng.choice(options)
            facts.append(trusted(raw))
        record = base | {"account_id": f"acct_{i}", "segment": rng.choice(list(CAMPAIGN.segments))}
        short = rng.choice(["Dymaxa", "Nordlicht Logistik", "A" * 61])
        out.append(context(record, facts, short_name=short, claims_allowed=rng.random() < 0.95))
    return out


def test_every_draft_fits_its_zone_and_cites_only_trusted_facts() -> None:
    for ctx in synthetic_contexts(800):
        for page in CAMPAIGN.pages:
            req = request(ctx, page)
            result = COMPOSER.generate(req)
            fact_ids = {f.id for f in ctx.facts}
            for zone in req.zones:
                draft = result.drafts.get(zone.id)
                if draft is None:
                    continue
                assert zone.fits(draft.text), (zone.id, draft.text)
                assert not set(draft.text) & set("<>{}\n")
                assert set(draft.fact_ids) <= fact_ids
                assert draft.fact_ids or not zone.requires_fact
                assert (draft.cta_id is not None) == zone.link
                if draft.valid_until is not None:
                    assert draft.valid_until > ctx.as_of


def test_generate_is_fast() -> None:
    contexts = synthetic_contexts(3_000, seed=11)
    requests = [request(ctx) for ctx in contexts]
    start = time.perf_counter()
    for req in requests:
        COMPOSER.generate(req)
    per_account_us = (time.perf_counter() - start) / len(requests) * 1e6
    print(f"offline composer: {per_account_us:.1f} µs per account (landing page, {len(requests)} accounts)")
    assert per_account_us < 1_000  # the goal is well under 200 µs; this bound only catches regressions
