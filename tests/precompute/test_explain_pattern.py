"""`welcomemat explain` says which pattern the offline composer used, what it skipped, and why
its date phrase is the one it is (precompute.pattern_choice, precompute.date_phrases)."""

from __future__ import annotations

import json
import zlib
from datetime import UTC, datetime

from precompute.assemble import AccountOutcome, Assembler
from precompute.company_names import short_name
from precompute.context_builder import build_context
from precompute.explain import decode_explain_record, explain_record, format_explain
from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.specifics import build_vocabulary
from tests.corpora import REPO_ROOT
from tests.example_accounts import generator
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.records.accounts import Account
from welcomemat.zones.contract import load_zone_contracts

ZONES = load_zone_contracts(REPO_ROOT / "zones")
CAMPAIGN = load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones=ZONES)
POLICY = build_policy(CAMPAIGN, None)
NOW = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)  # a Sunday; the Series A was announced on Thursday
DYMAXA = Account.model_validate(generator().dymaxa(NOW.date()))
WITH_WHEN = "Congrats on the {round} {when}, {account}"
WITH_LOCATION = "Congrats on the {round} in {location}, {account}"  # a funding fact has no location


def outcome(campaign: Campaign) -> AccountOutcome:
    assembler = Assembler(
        campaign=campaign,
        zones=ZONES,
        policy=POLICY,
        provider=OfflineComposer(),
        vocabulary=build_vocabulary(campaign),
        other_companies=frozenset({short_name(DYMAXA.name).casefold()}),
        now=NOW,
    )
    neutral = Account(account_id="segment-copy", name="acme", domain="example.com", segment="saas-mid")
    assembler.prepare_fallbacks(build_context(neutral, campaign, POLICY, assembler.as_of))
    return assembler.assemble(DYMAXA, "input-hash")


def headline_patterns() -> tuple[str, ...]:
    """The two patterns, ordered so that the composer's rotation tries the unfillable one first."""
    start = zlib.crc32(f"{DYMAXA.account_id}\x00hero_headline".encode()) % 2
    return (WITH_LOCATION, WITH_WHEN) if start == 0 else (WITH_WHEN, WITH_LOCATION)


def test_explain_shows_the_winning_pattern_what_it_skipped_and_the_date_phrase() -> None:
    patterns = headline_patterns()
    funding = {**CAMPAIGN.patterns["funding"], "hero_headline": patterns}
    campaign = CAMPAIGN.model_copy(update={"patterns": {**CAMPAIGN.patterns, "funding": funding}})
    record = json.loads(json.dumps(explain_record(outcome(campaign), version=1)))  # as stored in Redis
    zone = next(z for z in record["zones"] if z["zone_id"] == "hero_headline")
    assert zone["text"] == "Congrats on the Series A in November, Dymaxa"
    winner, loser = patterns.index(WITH_WHEN) + 1, patterns.index(WITH_LOCATION) + 1
    assert zone["pattern"]["index"] == winner and zone["pattern"]["of"] == 2
    assert zone["pattern"]["skipped"] == [
        {"fact_type": "funding", "index": loser, "reason": "slot {location} missing"}
    ]
    shown = format_explain(record)
    assert f"      pattern {winner} of 2 (funding): “{WITH_WHEN}”" in shown
    assert f"        1 skipped before it: funding {loser}: slot {{location}} missing" in shown
    assert (
        "        {when}: “in November” (true until 2027-01-01; needed until 2026-12-13); passed over "
        "“on Thursday” false from 2026-12-03, “this month” false from 2026-12-01"
    ) in shown


def test_a_record_written_before_patterns_were_kept_still_reads() -> None:
    record = json.loads(json.dumps(explain_record(outcome(CAMPAIGN), version=1)))
    for zone in record["zones"]:
        zone.pop("pattern")
    old = decode_explain_record(json.dumps(record))
    shown = format_explain(dict(old))
    assert "hero_headline: personal" in shown and "pattern " not in shown
