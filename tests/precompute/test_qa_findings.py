"""Cohort findings (`qa --findings`): known-answer populations in a real Redis.

Each test plants a mix of failures in what precompute stores — zone sets and the explain
records beside them, written by the real pipeline or by hand — and asserts the groups,
their counts, denominators, rates and the layer each is attributed to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

from precompute.findings import CohortCollector, CohortFinding
from precompute.layers import DEFAULT_LAYERS, attribute, default_layer
from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.qa import run_qa
from precompute.run import PrecomputeRun
from tests.corpora import REPO_ROOT
from welcomemat import keys
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.zones.contract import ZoneContract
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import CitedFact, Rung, ZoneContent, ZoneSet, ZoneSetMode

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
ZONES = ("hero_headline", "hero_support", "proof", "cta", "continuation_headline")
PATTERN_A = "Congrats on the {round} {when}, {account}"  # the example campaign's own
PATTERN_B = "{account} raised a {round}: ramp every new seller on your best reps' calls now"


@pytest.fixture(scope="module")
def campaign(zones: dict[str, ZoneContract]) -> Campaign:
    loaded = load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones)
    patterns = {t: dict(by_zone) for t, by_zone in loaded.patterns.items()}
    patterns["funding"]["hero_headline"] = (PATTERN_A, PATTERN_B)
    return loaded.model_copy(update={"patterns": patterns})


def by_reason(findings: list[CohortFinding]) -> dict[tuple[str, str, str], CohortFinding]:
    return {(f.reason, f.fact_type, f.guideline_version): f for f in findings}


def findings_of(
    client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> list[CohortFinding]:
    report = run_qa(
        ZoneSetStore(client), campaign, zones, now=NOW, cohorts=CohortCollector(client, campaign, zones)
    )
    assert report.cohort_findings is not None
    return report.cohort_findings


# -- the rules, alone ---------------------------------------------------------------------------


def test_every_reason_code_and_check_reason_has_a_default_layer() -> None:
    from precompute.context import FactReason
    from welcomemat.reasons import ZoneReason

    for code in ZoneReason:
        if code not in (ZoneReason.PERSONAL, ZoneReason.APPROVED, ZoneReason.CHECK):  # not failures
            assert code.value in DEFAULT_LAYERS, code
    for reason in FactReason:
        if reason is not FactReason.TRUSTED:
            assert f"fact:{reason.value}" in DEFAULT_LAYERS, reason
    assert default_layer("identity:freemail_domain") == "data"
    assert default_layer("check:a_check_added_later") == "guard"
    assert default_layer("declined") == "provider"  # a code an older version wrote


def test_the_rules_apply_in_order() -> None:
    on_fallback = attribute("qa:zone_limits@fallback", "-", failures=3, rate=0.1, worst=None)
    assert (on_fallback.layer, on_fallback.rule) == ("fallback", "qa_on_fallback")
    assert attribute("qa:zone_limits", "-", failures=3, rate=0.1, worst=None).layer == "template"
    rare = attribute("check:too_many_words", "funding", failures=3, rate=0.1, worst=None)
    assert (rare.layer, rare.rule) == ("guard", "default")
    common = attribute("check:too_many_words", "funding", failures=3, rate=0.3, worst=None)
    assert (common.layer, common.rule) == ("guard", "guard_suspect")
    assert "false positive" in common.because
    assert attribute("check:banned_phrase", "funding", failures=1, rate=0.9, worst=None).layer == "guideline"


# -- a planted population, written as precompute stores it ----------------------------------------


def fallback_zone(
    campaign: Campaign, segment: str, zone_id: str, reason: str, text: str | None = None
) -> ZoneContent:
    copy = campaign.segments[segment].zones[zone_id]
    cta = campaign.cta(copy.cta) if copy.cta else None
    return ZoneContent(
        zone_id=zone_id,
        text=text if text is not None else copy.text,
        href=cta.href if cta else None,
        cta_id=cta.id if cta else None,
        rung=Rung.SEGMENT,
        reason=reason,
    )


def plant(
    client: redis.Redis,
    campaign: Campaign,
    account: str,
    *,
    segment: str = "saas-mid",
    version: str = "2026-11-01",
    zones: dict[str, tuple[ZoneContent, dict[str, Any]]] | None = None,
    facts: list[dict[str, Any]] | None = None,
    base_reason: str | None = None,
) -> None:
    """One account's zone set and explain record; zones not given are segment copy, for
    `base_reason` (default: no pattern filled if a fact is trusted, else no trusted fact)."""
    given = zones or {}
    if base_reason is None:
        base_reason = "no_pattern_filled" if any(f["trusted"] for f in facts or []) else "no_trusted_fact"
    contents, explained = [], []
    for zone_id in ZONES:
        content, note = given.get(zone_id) or (fallback_zone(campaign, segment, zone_id, base_reason), {})
        contents.append(content)
        explained.append({"zone_id": zone_id, "draft": None, "draft_facts": [], "checks": [], **note})
    personal = sum(c.rung is Rung.PERSONAL for c in contents)
    zs = ZoneSet(
        tenant=campaign.tenant,
        campaign=campaign.campaign,
        account_id=account,
        segment=segment,
        input_hash="0" * 16,
        guideline_version=version,
        created_at=NOW - timedelta(hours=1),
        mode=ZoneSetMode.FULL
        if personal == len(ZONES)
        else ZoneSetMode.DEGRADED
        if personal
        else ZoneSetMode.FALLBACK,
        zones=tuple(contents),
    )
    ZoneSetStore(client).publish(zs)
    record = {"account_id": account, "segment": segment, "facts": facts or [], "zones": explained}
    client.set(keys.explain_key(campaign.tenant, campaign.campaign, account), json.dumps(record))


def funding_fact(account: str, *, trusted: bool = True, reason: str = "trusted") -> dict[str, Any]:
    return {"id": f"{account}-a", "type": "funding", "trusted": trusted, "reason": reason, "detail": ""}


def headline(account: str, pattern: str, *, failed_check: str | None) -> tuple[ZoneContent, dict[str, Any]]:
    name = account.removeprefix("acct_").capitalize()
    text = pattern.format(round="Series A", when="on Thursday", account=name)
    if failed_check is None:
        fact = CitedFact(fact_id=f"{account}-a", source_url="https://example.com/a", published_at=NOW.date())
        content = ZoneContent(
            zone_id="hero_headline", text=text, rung=Rung.PERSONAL, reason="personal:funding", facts=(fact,)
        )
        return content, {"draft": text, "draft_facts": [f"{account}-a"]}
    return (
        ZoneContent(
            zone_id="hero_headline",
            text="Scaling the sales team? Ramp every hire faster",
            rung=Rung.SEGMENT,
            reason=f"check:{failed_check}",
        ),
        {
            "draft": text,
            "draft_facts": [f"{account}-a"],
            "checks": [{"check": "length", "reason": failed_check, "detail": ""}],
        },
    )


def test_a_check_failing_on_one_patterns_drafts_is_the_guideline(
    redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    # 8 funding headlines: pattern A's 4 pass; pattern B's 4 all fail the length check.
    for i in range(8):
        account = f"acct_p{i}"
        pattern, failed = (PATTERN_A, None) if i < 4 else (PATTERN_B, "too_many_words")
        plant(
            redis_client,
            campaign,
            account,
            zones={"hero_headline": headline(account, pattern, failed_check=failed)},
            facts=[funding_fact(account)],
            base_reason="no_pattern_filled",
        )
    found = by_reason(findings_of(redis_client, campaign, zones))
    group = found[("check:too_many_words", "funding", "2026-11-01")]
    assert (group.failures, group.of, group.rate, group.accounts, group.of_accounts) == (4, 8, 0.5, 4, 8)
    assert (group.unit, group.zones, group.layer, group.rule) == (
        "draft",
        ["hero_headline"],
        "guideline",
        "pattern_concentration",
    )
    assert "funding/hero_headline#2" in group.because and "4 of its 4 drafts" in group.because
    assert group.examples == ["acct_p4", "acct_p5", "acct_p6"]
    # the other four zones of all eight accounts: no pattern filled from the trusted funding fact
    rest = found[("no_pattern_filled", "funding", "2026-11-01")]
    assert (rest.unit, rest.failures, rest.of, rest.accounts) == ("attempt", 32, 40, 8)
    assert rest.layer == "guideline"


def test_a_check_failing_across_patterns_is_the_guard_and_flagged_when_common(
    redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    # 6 funding headlines, one failing per pattern and two passing per pattern: 2 of 6 fail
    # (33% > 25%), no pattern over half its drafts.
    plan = [(PATTERN_A, None), (PATTERN_A, None), (PATTERN_A, "unsupported_number")]
    plan += [(PATTERN_B, None), (PATTERN_B, None), (PATTERN_B, "unsupported_number")]
    for i, (pattern, failed) in enumerate(plan):
        account = f"acct_g{i}"
        plant(
            redis_client,
            campaign,
            account,
            zones={"hero_headline": headline(account, pattern, failed_check=failed)},
            facts=[funding_fact(account)],
        )
    group = by_reason(findings_of(redis_client, campaign, zones))[
        ("check:unsupported_number", "funding", "2026-11-01")
    ]
    assert (group.failures, group.of, group.rate, group.layer, group.rule) == (
        2,
        6,
        0.3333,
        "guard",
        "guard_suspect",
    )


def test_facts_segments_versions_and_fallback_groups(
    redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    # saas-mid, guidelines v1: 10 accounts, one funding fact each; 4 stale, 1 of another company.
    for i in range(10):
        account = f"acct_m{i}"
        reason = "stale" if i < 4 else "wrong_subject" if i == 4 else "trusted"
        plant(
            redis_client,
            campaign,
            account,
            facts=[funding_fact(account, trusted=reason == "trusted", reason=reason)],
        )
    # fintech, guidelines v1: 4 accounts, 3 stale; one's segment had no copy.
    for i in range(4):
        account = f"acct_f{i}"
        reason = "stale" if i < 3 else "trusted"
        plant(
            redis_client,
            campaign,
            account,
            segment="fintech",
            facts=[funding_fact(account, trusted=reason == "trusted", reason=reason)],
            base_reason="no_trusted_fact;unknown_segment" if i == 0 else "no_trusted_fact",
        )
    # saas-mid, guidelines v2: 5 accounts, 1 stale; one proof line (segment copy) over its limits.
    for i in range(5):
        account = f"acct_n{i}"
        reason = "stale" if i == 0 else "trusted"
        long_proof = fallback_zone(campaign, "saas-mid", "proof", "no_trusted_fact", text="word " * 60)
        plant(
            redis_client,
            campaign,
            account,
            version="2026-12-01",
            facts=[funding_fact(account, trusted=reason == "trusted", reason=reason)],
            zones={"proof": (long_proof, {})} if i == 0 else None,
        )
    findings = findings_of(redis_client, campaign, zones)
    found = by_reason(findings)

    stale = found[("fact:stale", "funding", "2026-11-01")]
    assert (stale.unit, stale.failures, stale.of, stale.rate, stale.accounts, stale.of_accounts) == (
        "fact",
        7,
        14,
        0.5,
        7,
        14,
    )
    assert stale.layer == "data" and "stale" in stale.because
    assert [(s.segment, s.failures, s.of, s.rate) for s in stale.segments] == [
        ("fintech", 3, 4, 0.75),
        ("saas-mid", 4, 10, 0.4),
    ]
    assert (
        found[("fact:wrong_subject", "funding", "2026-11-01")].failures,
        found[("fact:wrong_subject", "funding", "2026-11-01")].layer,
    ) == (1, "data")
    v2 = found[("fact:stale", "funding", "2026-12-01")]  # the new guidelines counted apart
    assert (v2.failures, v2.of, v2.rate) == (1, 5, 0.2)

    unknown = found[("unknown_segment", "-", "2026-11-01")]
    assert (unknown.failures, unknown.accounts, unknown.layer) == (5, 1, "fallback")
    limits = found[("qa:zone_limits@fallback", "-", "2026-12-01")]
    assert (limits.failures, limits.of, limits.zones, limits.layer, limits.rule) == (
        1,
        25,
        ["proof"],
        "fallback",
        "qa_on_fallback",
    )
    # every account of every segment sees only fallback copy: over max_fallback_rate (85%)
    overused = found[("fallback_overused", "-", "2026-11-01")]
    assert (overused.failures, overused.of, overused.layer) == (14, 14, "fallback")
    assert [s.segment for s in overused.segments] == ["fintech", "saas-mid"]
    # most accounts affected first
    assert [f.accounts for f in findings] == sorted((f.accounts for f in findings), reverse=True)
    assert findings[0].reason in ("no_trusted_fact", "fallback_overused")


def test_the_same_stored_data_gives_the_same_findings(
    redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    for i in range(7):
        account = f"acct_d{i}"
        plant(
            redis_client,
            campaign,
            account,
            facts=[funding_fact(account, trusted=i % 2 == 0, reason="stale" if i % 2 else "trusted")],
        )
    first = findings_of(redis_client, campaign, zones)
    assert first == findings_of(redis_client, campaign, zones)
    # no explain record (erased, or written before): the zone sets alone still give the zone groups
    for i in range(7):
        redis_client.delete(keys.explain_key(campaign.tenant, campaign.campaign, f"acct_d{i}"))
    after = by_reason(findings_of(redis_client, campaign, zones))
    assert ("fact:stale", "funding", "2026-11-01") not in after
    assert after[("no_trusted_fact", "-", "2026-11-01")].failures == 15  # the 3 stale accounts
    assert after[("no_pattern_filled", "-", "2026-11-01")].unit == "zone"  # the fact's type is not known


# -- the real pipeline, then the command line ------------------------------------------------------


def account(n: int, *, age_days: int, source: bool = True) -> dict[str, Any]:
    name = f"Planted{n}"
    fact = {
        "id": f"p{n}-funding",
        "type": "funding",
        "statement": f"{name} raised a Series A",
        "round": "Series A",
        "published_at": (NOW.date() - timedelta(days=age_days)).isoformat(),
        "confidence": "high",
        "surfaces": ["web", "email", "seller"],
    }
    if source:
        fact["source_url"] = f"https://planted{n}.com/press/series-a"
    return {
        "account_id": f"acct_planted{n}",
        "name": name,
        "domain": f"planted{n}.com",
        "segment": "saas-mid",
        "tier": 2,
        "facts": [fact],
    }


def test_precomputed_population_then_qa_findings_on_the_command_line(
    tmp_path: Path, redis_client: redis.Redis, redis_url: str, zones: dict[str, ZoneContract]
) -> None:
    campaign = load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones)
    rows = [account(n, age_days=3) for n in range(5)]  # fresh and sourced: personal
    rows += [account(n, age_days=400) for n in range(5, 11)]  # 6 stale
    rows += [account(n, age_days=3, source=False) for n in range(11, 13)]  # 2 without a source
    path = tmp_path / "accounts.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    PrecomputeRun(
        client=redis_client,
        campaign=campaign,
        zones=zones,
        policy=build_policy(campaign, None),
        provider=OfflineComposer(),
        now=NOW,
    ).run(path)
    found = by_reason(findings_of(redis_client, campaign, zones))
    stale = found[("fact:stale", "funding", campaign.guideline_version)]
    assert (stale.failures, stale.of, stale.rate, stale.accounts, stale.layer) == (6, 13, 0.4615, 6, "data")
    no_source = found[("fact:no_source", "funding", campaign.guideline_version)]
    assert (no_source.failures, no_source.of, no_source.layer) == (2, 13, "data")
    assert found[("no_trusted_fact", "-", campaign.guideline_version)].accounts == 8

    env = {**os.environ, "REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(tmp_path / "home")}
    welcomemat = str(Path(sys.executable).parent / "welcomemat")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [welcomemat, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
        )

    text = cli("qa", "q4-pipeline", "--findings")
    assert (
        "fact type funding fails fact:stale 46% of the time (6 of 13 facts; 6 of 13 accounts)" in text.stdout
    )
    assert (
        "most likely layer: data — because the trust policy rejected these funding facts (stale)"
        in text.stdout
    )
    as_json = json.loads(cli("qa", "q4-pipeline", "--findings", "--json").stdout)
    groups = {(g["reason"], g["fact_type"]): g for g in as_json["cohort_findings"]}
    assert groups[("fact:stale", "funding")]["layer"] == "data"
    plain = json.loads(cli("qa", "q4-pipeline", "--json").stdout)
    assert "cohort_findings" not in plain  # the report as before unless asked


def test_provider_template_and_identity_groups_and_a_pattern_with_too_few_drafts(
    redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    # 2 accounts: the endpoint failed on every zone; 1 account of a free-mail identity.
    for i in range(2):
        plant(redis_client, campaign, f"acct_e{i}", base_reason="endpoint_error")
    plant(redis_client, campaign, "acct_i0", base_reason="identity:freemail_domain")
    # 2 accounts of pattern B, both failing: under MIN_PATTERN_DRAFTS, so not the pattern's fault.
    for i in range(2):
        account = f"acct_b{i}"
        plant(
            redis_client,
            campaign,
            account,
            zones={"hero_headline": headline(account, PATTERN_B, failed_check="too_many_words")},
            facts=[funding_fact(account)],
            base_reason="no_pattern_filled",
        )
    # 1 account whose published set lacks a zone the page shows.
    plant(redis_client, campaign, "acct_z0")
    key = keys.zone_set_key(campaign.tenant, campaign.campaign, "acct_z0")
    data = json.loads(redis_client.get(key) or b"{}")
    data["zones"] = [z for z in data["zones"] if z["zone_id"] != "proof"]
    redis_client.set(key, json.dumps(data))

    found = by_reason(findings_of(redis_client, campaign, zones))
    endpoint = found[("endpoint_error", "-", "2026-11-01")]
    assert (endpoint.unit, endpoint.failures, endpoint.of, endpoint.accounts, endpoint.layer) == (
        "zone",
        10,
        29,
        2,
        "provider",
    )
    identity = found[("identity:freemail_domain", "-", "2026-11-01")]
    assert (identity.failures, identity.accounts, identity.layer) == (5, 1, "data")
    missing = found[("qa:zone_missing", "-", "2026-11-01")]
    assert (missing.failures, missing.zones, missing.layer) == (1, ["proof"], "template")
    few = found[("check:too_many_words", "funding", "2026-11-01")]
    assert (few.failures, few.of, few.rate, few.layer, few.rule) == (2, 2, 1.0, "guard", "guard_suspect")
