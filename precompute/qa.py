"""Population QA: scan 100% of what is published for a campaign and give a verdict.

QA does not trust the precompute job: it re-checks every published zone set against the
hard invariants (links on the allowlist, personal claims citing dated, sourced facts,
plain zones free of markup, limits kept) and counts rungs, reasons and check failures.
Reasons are counted as stored (`welcomemat.reasons`: `check:low_confidence`, `no_answer`);
a code an older version wrote (`declined`) is counted under its own name. A draft that
passed every check but uses no specific of its facts is segment copy (`not_specific`): a
personal attempt that did not fail, and its cited facts are re-checked like a personal zone's.
Verdict, from the campaign's thresholds:

- NO GO: any invariant broken, or the check-failure or fallback rate over its threshold;
- GO WITH FIXES: rates within `fixes_margin` of a threshold, accounts waiting for review,
  expired zone sets, or markup that will be shown escaped;
- GO: otherwise.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from precompute.facts.refusals import FactRefusal, FactRefusalTally
from precompute.findings import CohortCollector, CohortFinding
from welcomemat.campaign.contract import Campaign
from welcomemat.errors import StoredValueError
from welcomemat.reasons import ZoneReason, parse_reason
from welcomemat.security.markup import render_text
from welcomemat.security.urlgate import browser_view, gate_link
from welcomemat.zones.contract import ZoneContract
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneSet, ZoneSetStatus

__all__ = [
    "GuidelineFigures",
    "QaFinding",
    "QaReport",
    "SampleZone",
    "SampledAccount",
    "Verdict",
    "recheck_zone_set",
    "run_qa",
]

Verdict = Literal["GO", "GO WITH FIXES", "NO GO"]
SCAN_CHUNK = 500
SAMPLE_PER_STRATUM = 2
MAX_FINDINGS_LISTED = 200  # every finding is counted; this many are listed one by one
_MARKUP_OR_LINK = re.compile(r"<[A-Za-z/!]|javascript:|https?://|\]\(", re.IGNORECASE)


class QaFinding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    severity: Literal["blocker", "fix"]
    code: str
    account_id: str | None = None
    zone_id: str | None = None
    detail: str = ""


class SampleZone(BaseModel):
    zone_id: str
    rung: str
    reason: str
    text: str


class SampledAccount(BaseModel):
    account_id: str
    stratum: str
    status: str
    zones: list[SampleZone]


class GuidelineFigures(BaseModel):
    """What one guideline version (and bundle hash) wrote, among the published zone sets."""

    model_config = ConfigDict(extra="forbid")

    guideline_version: str
    guideline_hash: str | None = None
    accounts: int = 0
    personal_zones: int = 0
    personal_attempts: int = 0
    check_failed: int = 0


class QaReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenant: str
    campaign: str
    checked_at: str
    accounts: int = 0
    by_status: dict[str, int] = Field(default_factory=dict)
    by_mode: dict[str, int] = Field(default_factory=dict)
    zones_by_rung: dict[str, int] = Field(default_factory=dict)
    fallback_reasons: dict[str, int] = Field(default_factory=dict)
    personal_attempts: int = 0
    check_failed: int = 0
    check_failure_rate: float = 0.0
    fallback_rate: float = 0.0
    thresholds: dict[str, float] = Field(default_factory=dict)
    findings_by_code: dict[str, int] = Field(default_factory=dict)
    findings: list[QaFinding] = Field(default_factory=list)
    by_guideline_version: list[GuidelineFigures] = Field(default_factory=list)
    verdict: Verdict = "GO"
    # Untrusted facts by trust reason, most first, each with one example (read from explain records)
    fact_refusals: list[FactRefusal] = Field(default_factory=list)
    # `--findings`: failures grouped across the population, each with its likely layer
    cohort_findings: list[CohortFinding] | None = None
    sample: list[SampledAccount] = Field(default_factory=list)


def _zone_sets(store: ZoneSetStore, tenant: str, campaign: str) -> Iterator[tuple[str, ZoneSet | None, str]]:
    """(account id, zone set or None, decode error) for every published account."""
    ids = sorted(store.iter_account_ids(tenant, campaign))
    for start in range(0, len(ids), SCAN_CHUNK):
        chunk = ids[start : start + SCAN_CHUNK]
        try:
            found = store.get_many(tenant, campaign, chunk)
        except StoredValueError:
            found = {}
            for account_id in chunk:  # find which one is broken, keep the rest
                try:
                    found[account_id] = store.get(tenant, campaign, account_id)
                except StoredValueError as exc:
                    yield account_id, None, str(exc)
        for account_id, zone_set in found.items():
            if zone_set is not None:
                yield account_id, zone_set, ""


def _recheck(
    zs: ZoneSet, campaign: Campaign, zones: Mapping[str, ZoneContract], now: datetime
) -> list[QaFinding]:
    """The hard invariants, checked again on what is actually published."""
    out: list[QaFinding] = []
    allowlist = campaign.allowlist()

    def add(severity: Literal["blocker", "fix"], code: str, zone_id: str | None, detail: str) -> None:
        out.append(
            QaFinding(severity=severity, code=code, account_id=zs.account_id, zone_id=zone_id, detail=detail)
        )

    present = {z.zone_id for z in zs.zones}
    for missing in sorted(set(campaign.page_zone_ids()) - present):
        add("blocker", "zone_missing", missing, "a page shows this zone but the zone set lacks it")
    for zone in zs.zones:
        contract = zones.get(zone.zone_id)
        if contract is None:
            add("blocker", "zone_unknown", zone.zone_id, "no zone contract defines this zone")
            continue
        if zone.href is not None and not gate_link(zone.href, allowlist).allowed:
            add("blocker", "link_off_allowlist", zone.zone_id, zone.href)
        if contract.link and zone.href is None:
            add("blocker", "link_missing", zone.zone_id, "a link zone without an allowlisted link")
        if not zone.text.strip() or not contract.fits(zone.text):
            add(
                "blocker",
                "zone_limits",
                zone.zone_id,
                f"{len(zone.text.split())} words, {len(zone.text)} chars",
            )
        if _MARKUP_OR_LINK.search(zone.text):
            add("blocker", "markup_or_link_in_text", zone.zone_id, zone.text[:80])
        if (
            zone.markup is not None
            and str(render_text(zone.text, zone.markup, contract.markup)) != zone.markup.html
        ):
            add(
                "fix",
                "markup_unverified",
                zone.zone_id,
                "stamp does not verify: the text will be shown escaped",
            )
        if zone.rung is Rung.PERSONAL and contract.requires_fact and not zone.facts:
            add("blocker", "personal_without_fact", zone.zone_id, zone.text[:80])
        # Every cited fact: a personal zone's, and a written draft's served as segment copy (`not_specific`).
        for fact in zone.facts:
            view = browser_view(fact.source_url)
            if view is None or view[0] != "https":
                add("blocker", "fact_source_not_https", zone.zone_id, fact.source_url)
            if fact.published_at > zs.created_at.date():
                add("blocker", "fact_from_future", zone.zone_id, fact.published_at.isoformat())
    if zs.valid_until is not None and zs.valid_until <= now:
        add("fix", "expired", None, f"valid until {zs.valid_until.isoformat()}: serving the fallback; rerun")
    if zs.status is ZoneSetStatus.PENDING_REVIEW:
        add("fix", "pending_review", None, "waiting for a person: served as fallback until approved")
    return out


# The invariants QA re-checks, for what is about to be published too (a guideline candidate's replay).
recheck_zone_set = _recheck


def _rank(account_id: str) -> int:
    return int.from_bytes(hashlib.sha256(account_id.encode()).digest()[:8], "big")


def run_qa(
    store: ZoneSetStore,
    campaign: Campaign,
    zones: Mapping[str, ZoneContract],
    *,
    now: datetime | None = None,
    sample_per_stratum: int = SAMPLE_PER_STRATUM,
    cohorts: CohortCollector | None = None,
    facts: FactRefusalTally | None = None,
) -> QaReport:
    """The verdict on everything published; with `cohorts`, also the cohort findings; with `facts`,
    the fact refusals by reason."""
    now = now or datetime.now(UTC)
    report = QaReport(tenant=campaign.tenant, campaign=campaign.campaign, checked_at=now.isoformat())
    by_status: Counter[str] = Counter()
    by_mode: Counter[str] = Counter()
    rungs: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    strata: dict[str, list[ZoneSet]] = {}
    by_guidelines: dict[tuple[str, str | None], GuidelineFigures] = {}
    blockers = fixes = 0
    for account_id, zs, error in _zone_sets(store, campaign.tenant, campaign.campaign):
        report.accounts += 1
        findings = (
            [QaFinding(severity="blocker", code="undecodable", account_id=account_id, detail=error)]
            if zs is None
            else _recheck(zs, campaign, zones, now)
        )
        for finding in findings:
            codes[finding.code] += 1
            blockers += finding.severity == "blocker"
            fixes += finding.severity == "fix"
            if len(report.findings) < MAX_FINDINGS_LISTED:
                report.findings.append(finding)
        if facts is not None:
            facts.add(account_id)
        if zs is None:
            if cohorts is not None:
                cohorts.add_undecodable(account_id)
            continue
        if cohorts is not None:
            cohorts.add(zs, [(f.code, f.zone_id) for f in findings])
        by_status[zs.status.value] += 1
        by_mode[zs.mode.value] += 1
        figures = by_guidelines.setdefault(
            (zs.guideline_version, zs.guideline_hash),
            GuidelineFigures(guideline_version=zs.guideline_version, guideline_hash=zs.guideline_hash),
        )
        figures.accounts += 1
        for zone in zs.zones:
            rungs[zone.rung.value] += 1
            if zone.rung is Rung.PERSONAL:
                report.personal_attempts += 1
                figures.personal_zones += 1
                figures.personal_attempts += 1
            else:
                reasons[zone.reason] += 1
                code = parse_reason(zone.reason).code
                if code is ZoneReason.NOT_SPECIFIC:  # a draft that passed every check, not specific
                    report.personal_attempts += 1
                    figures.personal_attempts += 1
                elif code is ZoneReason.CHECK:
                    report.personal_attempts += 1
                    report.check_failed += 1
                    figures.personal_attempts += 1
                    figures.check_failed += 1
        strata.setdefault(f"{zs.segment or '-'}/{zs.mode.value}", []).append(zs)

    if cohorts is not None:
        report.cohort_findings = cohorts.findings()
    if facts is not None:
        report.fact_refusals = facts.top()
    report.by_status, report.by_mode, report.zones_by_rung = dict(by_status), dict(by_mode), dict(rungs)
    report.by_guideline_version = [
        by_guidelines[k] for k in sorted(by_guidelines, key=lambda k: (k[0], k[1] or ""))
    ]
    report.fallback_reasons = dict(reasons.most_common())
    report.findings_by_code = dict(codes.most_common())
    report.check_failure_rate = (
        round(report.check_failed / report.personal_attempts, 4) if report.personal_attempts else 0.0
    )
    report.fallback_rate = round(by_mode.get("fallback", 0) / report.accounts, 4) if report.accounts else 0.0
    qa = campaign.qa
    report.thresholds = {
        "max_check_failure_rate": qa.max_check_failure_rate,
        "max_fallback_rate": qa.max_fallback_rate,
        "fixes_margin": qa.fixes_margin,
    }
    over = (
        report.check_failure_rate > qa.max_check_failure_rate or report.fallback_rate > qa.max_fallback_rate
    )
    near = (
        report.check_failure_rate > qa.max_check_failure_rate - qa.fixes_margin
        or report.fallback_rate > qa.max_fallback_rate - qa.fixes_margin
    )
    if blockers or over or report.accounts == 0:
        report.verdict = "NO GO"
    elif fixes or near:
        report.verdict = "GO WITH FIXES"
    report.sample = [
        SampledAccount(
            account_id=zs.account_id,
            stratum=stratum,
            status=zs.status.value,
            zones=[
                SampleZone(zone_id=z.zone_id, rung=z.rung.value, reason=z.reason, text=z.text)
                for z in zs.zones
            ],
        )
        for stratum, sets in sorted(strata.items())
        for zs in sorted(sets, key=lambda s: _rank(s.account_id))[:sample_per_stratum]
    ]
    return report
