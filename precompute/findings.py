"""Cohort findings: failures across the population, grouped, each with its most likely layer.

`welcomemat qa --findings` reads only what is already stored per account: the zone set
(rung, reason, segment, guideline version), the explain record precompute wrote beside it
(each fact's trust decision, each zone's failed draft, the facts it cited) and QA's own
re-checks. Every failure is one of:

- `fact`: a fact the trust policy rejected (`fact:<reason>`, by the fact's type);
- `draft`: a written draft that was refused (`check:<reason>`, `cta_link_refused`, a
  self-review rejection ...), by the fact types it cited;
- `attempt`: a zone with no draft although the account had trusted facts the zone may use
  (`no_pattern_filled`, `model_declined` ...), by those facts' types;
- `zone`: a zone with no draft and no usable fact (`no_trusted_fact`, `identity:<detail>`),
  or a QA re-check on a zone (`qa:<code>`);
- `account`: a QA re-check of the whole set (`qa:expired`), or `fallback_overused`.

Groups are (reason, fact type, guideline version), with a breakdown by segment. Each is a
rate with its count and denominator — facts of that type, drafts citing that type, zones
whose account had usable facts of that type, zones, or accounts, in the same guideline
version — and the accounts it touches; most accounts
first. The layer comes from `precompute.layers`. Drafts are matched to the campaign's
patterns (a pattern's slots match any text) so a check failing on one pattern's drafts is
told from one failing across them.
"""

from __future__ import annotations

import re
import string
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import redis
from pydantic import BaseModel, ConfigDict

from precompute.explain import decode_explain_record
from precompute.layers import (
    FALLBACK_SUFFIX,
    MIN_PATTERN_DRAFTS,
    PATTERN_FAILURE_SHARE,
    QA_ON_FALLBACK_CODES,
    Layer,
    PatternShare,
    attribute,
)
from welcomemat import keys
from welcomemat.campaign.contract import Campaign
from welcomemat.reasons import ZoneReason, parse_reason
from welcomemat.zones.contract import ZoneContract
from welcomemat.zones.zoneset import Rung, ZoneSet, ZoneSetMode

__all__ = ["CohortCollector", "CohortFinding", "SegmentRate", "format_findings"]

Unit = Literal["fact", "draft", "attempt", "zone", "account"]
EXPLAIN_CHUNK = 500  # explain records read per MGET
MAX_EXAMPLES = 3  # account ids named per finding
NO_VALUE = "-"  # no fact type / no segment
QA_NOT_FAILURES = frozenset({"pending_review"})  # waiting for a person is not a failure


class SegmentRate(BaseModel):
    """One segment's share of a group: `failures` of `of`, in `accounts` accounts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    segment: str
    failures: int
    of: int
    rate: float
    accounts: int


class CohortFinding(BaseModel):
    """One group of failures: `failures` of `of` (`rate`), in `accounts` of `of_accounts`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    layer: Layer
    rule: str
    because: str
    reason: str
    unit: Unit
    fact_type: str
    guideline_version: str
    failures: int
    of: int
    rate: float
    accounts: int
    of_accounts: int
    zones: list[str]
    segments: list[SegmentRate]
    examples: list[str]


@dataclass
class _Tally:
    n: int = 0
    accounts: int = 0
    zones: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)


# Counted per (reason, fact type, segment, guideline version); reported per
# (reason, fact type, guideline version) with the segments as a breakdown.
_Key = tuple[str, str, str, str]
_Top = tuple[str, str, str]


@dataclass(frozen=True)
class _Pattern:
    label: str
    fact_type: str
    zone_id: str
    text: str
    regex: re.Pattern[str]


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    parts = []
    for literal, name, _, _ in string.Formatter().parse(pattern):
        parts.append(re.escape(literal))
        if name is not None:
            parts.append(r".+?")
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


class CohortCollector:
    """Folds every published account into counters; `findings()` groups and attributes them.

    `add` takes an account's zone set and QA's findings on it; explain records are read in
    one MGET per `EXPLAIN_CHUNK` accounts, so memory stays one chunk deep.
    """

    def __init__(self, client: redis.Redis, campaign: Campaign, zones: Mapping[str, ZoneContract]) -> None:
        self._client = client
        self._campaign = campaign
        self._contracts = zones
        self._pending: list[tuple[ZoneSet, list[tuple[str, str | None]]]] = []
        self._groups: dict[_Key, _Tally] = {}
        self._units: dict[str, Unit] = {}
        # denominators, per (what, segment, version): what is a fact type for facts and
        # drafts, "" for zones and accounts
        self._of: dict[Unit, Counter[tuple[str, str, str]]] = defaultdict(Counter)
        self._of_accounts: dict[Unit, Counter[tuple[str, str, str]]] = defaultdict(Counter)
        self._fallback_accounts: Counter[tuple[str, str]] = Counter()
        self._pattern_drafts: Counter[tuple[str, str]] = Counter()  # (label, version)
        self._pattern_fails: Counter[tuple[_Top, str]] = Counter()
        self._patterns = [
            _Pattern(f"{fact_type}/{zone_id}#{i + 1}", fact_type, zone_id, text, _pattern_regex(text))
            for fact_type, by_zone in sorted(campaign.patterns.items())
            for zone_id, texts in sorted(by_zone.items())
            for i, text in enumerate(texts)
        ]

    # -- folding ----------------------------------------------------------------------------

    def add(self, zone_set: ZoneSet, qa_findings: Iterable[tuple[str, str | None]]) -> None:
        """One account: its zone set and QA's findings on it, as (code, zone id or None)."""
        self._pending.append((zone_set, list(qa_findings)))
        if len(self._pending) >= EXPLAIN_CHUNK:
            self.flush()

    def add_undecodable(self, account_id: str) -> None:
        self._count(("qa:undecodable", NO_VALUE, NO_VALUE, NO_VALUE), "account", account_id, None, set())

    def flush(self) -> None:
        if not self._pending:
            return
        tenant, campaign = self._campaign.tenant, self._campaign.campaign
        raws = self._client.mget(
            [keys.explain_key(tenant, campaign, zs.account_id) for zs, _ in self._pending]
        )
        for (zs, qa), raw in zip(self._pending, raws, strict=True):
            self._fold(zs, qa, decode_explain_record(raw))
        self._pending.clear()

    def _count(self, key: _Key, unit: Unit, account_id: str, zone_id: str | None, seen: set[_Key]) -> None:
        tally = self._groups.setdefault(key, _Tally())
        self._units[key[0]] = unit
        tally.n += 1
        if zone_id:
            tally.zones[zone_id] += 1
        if key not in seen:
            seen.add(key)
            tally.accounts += 1
            if len(tally.examples) < MAX_EXAMPLES:
                tally.examples.append(account_id)

    def _denominator(self, unit: Unit, what: str, segment: str, version: str, first: bool) -> None:
        self._of[unit][(what, segment, version)] += 1
        if first:
            self._of_accounts[unit][(what, segment, version)] += 1

    def _fold(self, zs: ZoneSet, qa: list[tuple[str, str | None]], record: Mapping[str, Any]) -> None:
        segment, version, account = zs.segment or NO_VALUE, zs.guideline_version, zs.account_id
        seen: set[_Key] = set()
        firsts: set[tuple[Unit, str]] = set()

        def denominator(unit: Unit, what: str) -> None:
            self._denominator(unit, what, segment, version, (unit, what) not in firsts)
            firsts.add((unit, what))

        denominator("account", "")
        self._fallback_accounts[(segment, version)] += zs.mode is ZoneSetMode.FALLBACK

        facts = [f for f in record.get("facts", []) if isinstance(f, dict)]
        type_of = {str(f.get("id")): str(f.get("type") or NO_VALUE) for f in facts}
        for fact in facts:
            fact_type = str(fact.get("type") or NO_VALUE)
            denominator("fact", fact_type)
            if not fact.get("trusted"):
                self._count(
                    (f"fact:{fact.get('reason') or 'untrusted'}", fact_type, segment, version),
                    "fact",
                    account,
                    None,
                    seen,
                )

        trusted_types = {str(f.get("type")) for f in facts if f.get("trusted")}
        explained = {z.get("zone_id"): z for z in record.get("zones", []) if isinstance(z, dict)}
        for zone in zs.zones:
            denominator("zone", "")
            contract = self._contracts.get(zone.zone_id)
            usable = "+".join(sorted(trusted_types & set(contract.fact_types))) if contract else ""
            if usable:
                denominator("attempt", usable)
            parsed = parse_reason(zone.reason)
            if zone.rung is Rung.PERSONAL:
                fact_type, draft = parsed.detail or NO_VALUE, zone.text
            else:
                note = explained.get(zone.zone_id, {})
                cited = sorted({type_of.get(str(f), NO_VALUE) for f in note.get("draft_facts") or []})
                fact_type, draft = ("+".join(cited) if cited else NO_VALUE), str(note.get("draft") or "")
            if draft:
                denominator("draft", fact_type)
            pattern = self._pattern_of(zone.zone_id, fact_type, draft)
            if pattern is not None:
                self._pattern_drafts[(pattern, version)] += 1
            if parsed.unknown_segment:
                self._count(
                    ("unknown_segment", NO_VALUE, segment, version), "zone", account, zone.zone_id, seen
                )
            if zone.rung is Rung.PERSONAL:
                continue
            if parsed.code is ZoneReason.CHECK:
                reason = f"check:{parsed.detail}"
            elif parsed.code is ZoneReason.IDENTITY:
                reason = zone.reason.partition(";")[0]
            else:
                reason = parsed.name
            unit: Unit = "draft" if draft else "attempt" if usable else "zone"
            key = (reason, fact_type if draft else usable or NO_VALUE, segment, version)
            self._count(key, unit, account, zone.zone_id, seen)
            if pattern is not None:
                self._pattern_fails[((key[0], key[1], version), pattern)] += 1

        rungs = {z.zone_id: z.rung for z in zs.zones}
        for code, zone_id in qa:
            if code in QA_NOT_FAILURES:
                continue
            on_fallback = (
                code in QA_ON_FALLBACK_CODES
                and zone_id is not None
                and rungs.get(zone_id, Rung.PERSONAL) is not Rung.PERSONAL
            )
            reason = f"qa:{code}" + (FALLBACK_SUFFIX if on_fallback else "")
            self._count(
                (reason, NO_VALUE, segment, version), "zone" if zone_id else "account", account, zone_id, seen
            )

    def _pattern_of(self, zone_id: str, fact_type: str, text: str) -> str | None:
        if not text:
            return None
        types = set(fact_type.split("+"))
        for p in self._patterns:
            if p.zone_id == zone_id and p.fact_type in types and p.regex.fullmatch(text):
                return p.label
        return None

    # -- grouping ---------------------------------------------------------------------------

    def findings(self) -> list[CohortFinding]:
        """Every group, most accounts affected first (then most failures, highest rate, name)."""
        self.flush()
        by_top: dict[_Top, dict[str, _Tally]] = defaultdict(dict)
        for (reason, fact_type, segment, version), tally in self._groups.items():
            by_top[(reason, fact_type, version)][segment] = tally
        out = [self._finding(top, segments) for top, segments in by_top.items()]
        out.extend(self._fallback_overused())
        out.sort(
            key=lambda f: (-f.accounts, -f.failures, -f.rate, f.reason, f.fact_type, f.guideline_version)
        )
        return out

    def _finding(self, top: _Top, segments: dict[str, _Tally]) -> CohortFinding:
        reason, fact_type, version = top
        unit = self._units[reason]
        what = fact_type if unit in ("fact", "draft", "attempt") else ""
        rates: list[SegmentRate] = []
        for (w, segment, v), of in sorted(self._of[unit].items()):
            if w != what or v != version:
                continue
            tally = segments.get(segment, _Tally())
            of = max(of, tally.n)
            rates.append(
                SegmentRate(
                    segment=segment, failures=tally.n, of=of, rate=_rate(tally.n, of), accounts=tally.accounts
                )
            )
        for segment, tally in segments.items():  # undecodable sets have no denominator
            if not any(r.segment == segment for r in rates):
                rates.append(
                    SegmentRate(
                        segment=segment, failures=tally.n, of=tally.n, rate=1.0, accounts=tally.accounts
                    )
                )
        rates.sort(key=lambda r: (-r.rate, -r.failures, r.segment))
        failures = sum(t.n for t in segments.values())
        accounts = sum(t.accounts for t in segments.values())  # an account has one segment
        of = sum(r.of for r in rates)
        of_accounts = sum(n for (w, _, v), n in self._of_accounts[unit].items() if w == what and v == version)
        rate = _rate(failures, of)
        judged = attribute(reason, fact_type, failures=failures, rate=rate, worst=self._worst_pattern(top))
        zones: Counter[str] = Counter()
        for tally in segments.values():
            zones.update(tally.zones)
        examples = sorted(a for t in segments.values() for a in t.examples)[:MAX_EXAMPLES]
        return CohortFinding(
            layer=judged.layer,
            rule=judged.rule,
            because=judged.because,
            reason=reason,
            unit=unit,
            fact_type=fact_type,
            guideline_version=version,
            failures=failures,
            of=of,
            rate=rate,
            accounts=accounts,
            of_accounts=max(of_accounts, accounts),
            zones=sorted(zones),
            segments=rates,
            examples=examples,
        )

    def _worst_pattern(self, top: _Top) -> PatternShare | None:
        worst: PatternShare | None = None
        for (group, label), failed in sorted(self._pattern_fails.items()):
            drafts = self._pattern_drafts[(label, top[2])]
            if group != top or drafts < MIN_PATTERN_DRAFTS or failed / drafts <= PATTERN_FAILURE_SHARE:
                continue
            if worst is None or failed / drafts > worst.failed / worst.drafts:
                text = next(p.text for p in self._patterns if p.label == label)
                worst = PatternShare(label=label, text=text, failed=failed, drafts=drafts)
        return worst

    def _fallback_overused(self) -> list[CohortFinding]:
        """Segments (per guideline version) where over `max_fallback_rate` of accounts get only fallback."""
        limit = self._campaign.qa.max_fallback_rate
        by_version: dict[str, list[SegmentRate]] = defaultdict(list)
        for (_, segment, version), accounts in sorted(self._of["account"].items()):
            fallback = self._fallback_accounts[(segment, version)]
            if fallback / accounts > limit:
                rate = SegmentRate(
                    segment=segment,
                    failures=fallback,
                    of=accounts,
                    rate=_rate(fallback, accounts),
                    accounts=fallback,
                )
                by_version[version].append(rate)
        out = []
        for version, rates in sorted(by_version.items()):
            judged = attribute("fallback_overused", NO_VALUE, failures=0, rate=0.0, worst=None)
            failures, of = sum(r.failures for r in rates), sum(r.of for r in rates)
            out.append(
                CohortFinding(
                    layer=judged.layer,
                    rule=judged.rule,
                    because=f"{judged.because} (over max_fallback_rate {limit:.0%} in "
                    + ", ".join(r.segment for r in rates)
                    + "): read that copy, and fix the causes of the groups above",
                    reason="fallback_overused",
                    unit="account",
                    fact_type=NO_VALUE,
                    guideline_version=version,
                    failures=failures,
                    of=of,
                    rate=_rate(failures, of),
                    accounts=failures,
                    of_accounts=of,
                    zones=[],
                    segments=sorted(rates, key=lambda r: (-r.rate, r.segment)),
                    examples=[],
                )
            )
        return out


def _rate(n: int, of: int) -> float:
    return round(n / of, 4) if of else 0.0


def _subject(f: CohortFinding) -> str:
    if f.fact_type != NO_VALUE:
        return f"fact type {f.fact_type}"
    if f.unit == "zone" and f.zones:
        return "zone " + ", ".join(f.zones)
    return "accounts"


def format_findings(findings: list[CohortFinding], limit: int = 15) -> list[str]:
    """Lines for a terminal: one sentence per group, its segments, then the layer and why."""
    if not findings:
        return ["  cohort findings: none (no failure in the population)"]
    lines = [f"  cohort findings ({len(findings)} groups, most accounts affected first):"]
    for f in findings[:limit]:
        lines.append(
            f"    {_subject(f)} fails {f.reason} {f.rate:.0%} of the time ({f.failures} of {f.of} {f.unit}s; "
            f"{f.accounts} of {f.of_accounts} accounts), guidelines {f.guideline_version}"
        )
        worst = [s for s in f.segments if s.failures][:4]
        lines.append(
            "      by segment: "
            + ", ".join(f"{s.segment} {s.rate:.0%} ({s.failures}/{s.of})" for s in worst)
            + (f" (+{len(f.segments) - len(worst)} more)" if len(f.segments) > len(worst) else "")
        )
        lines.append(f"      most likely layer: {f.layer} — because {f.because}")
    if len(findings) > limit:
        lines.append(f"    ... and {len(findings) - limit} more groups (see --json)")
    return lines
