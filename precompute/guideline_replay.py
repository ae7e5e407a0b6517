"""A candidate guideline version, replayed against the campaign's account sets: the candidate report.

Three named sets of accounts live as JSON Lines files in the campaign folder
(`guideline_sets/`): `replay`, the records that exposed the defect; `held_out`, similar
records not used to write the fix; `regression`, previously good records and edge cases.
Each set is assembled twice with the same provider, under the active guidelines and under
the candidate, and nothing is published. For each set the report gives the accounts that
pass (no blocker, no zone that failed a check), every zone whose rung or text changed,
the blockers the candidate adds, and the deterministic check-failure rate before → after.

A blocker is what population QA refuses in a published zone set (`precompute.qa`), and any
zone text that either version's banned phrases, banned openers or prohibited claim classes
refuse: a candidate that drops a banned line and then writes it is caught by the rules it
drops. The candidate is READY FOR PROMOTION only when no set gains a blocker, no held-out or
regression account that passed fails, no set's failure rate rises, the replay set changes, and
every regression case keeps its rung and text unless the proposal names it as an intended
change (`intended_changes`; each name must be a case of the regression set).

The report also lists the bundle fields the candidate changes and every field outside the
bundle in which it differs from the active file (`welcomemat.campaign.guidelines.outside_bundle`):
those are not the guidelines' to change, and promotion refuses them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from precompute.assemble import Assembler, neutral_context
from precompute.checks import (
    CheckInput,
    build_vocabulary,
    check_banned_phrases,
    check_prohibited_claims,
)
from precompute.company_names import short_name
from precompute.context import GovernedContext
from precompute.inputs import CampaignInputs
from precompute.providers.base import Provider, ZoneDraft
from precompute.qa import recheck_zone_set
from welcomemat.bounded_time import parse_day
from welcomemat.campaign.guidelines import (
    READY_FOR_PROMOTION,
    FieldDifference,
    SetValidation,
    bundle_differences,
    guideline_hash,
    outside_bundle,
)
from welcomemat.errors import InputError
from welcomemat.reasons import ZoneReason, parse_reason
from welcomemat.records.accounts import Account, read_accounts
from welcomemat.zones.zoneset import Rung, ZoneSet

__all__ = [
    "NOT_READY",
    "READY",
    "REGRESSION",
    "SETS_FOLDER",
    "SET_NAMES",
    "Blocker",
    "CandidateReport",
    "GuidelineSide",
    "SetReport",
    "ZoneChange",
    "check_intended",
    "file_sha256",
    "read_account_sets",
    "replay_candidate",
    "replay_day",
]

SETS_FOLDER = "guideline_sets"  # beside campaign.yaml
SET_NAMES = ("replay", "held_out", "regression")
REGRESSION = "regression"  # the set whose cases keep their copy unless named as intended changes
READY = READY_FOR_PROMOTION
NOT_READY = "NOT READY"
Recommendation = Literal["READY FOR PROMOTION", "NOT READY"]
_TEXT_CLIP = 160


class ZoneChange(BaseModel):
    """One zone whose rung or text differs between the active guidelines and the candidate."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    account_id: str
    zone_id: str
    rung_before: str | None
    rung_after: str | None
    text_before: str | None
    text_after: str | None


class Blocker(BaseModel):
    """A zone set the candidate wrote that must not be published, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    account_id: str
    zone_id: str | None = None
    code: str
    detail: str = ""


class SetReport(BaseModel):
    """One account set, before (active guidelines) and after (candidate)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    file: str
    accounts: int
    passed_before: int
    passed_after: int
    failure_rate_before: float
    failure_rate_after: float
    changes: tuple[ZoneChange, ...] = ()
    new_blockers: tuple[Blocker, ...] = ()
    broken_accounts: tuple[str, ...] = ()  # passed before, fail after
    fixed_accounts: tuple[str, ...] = ()  # failed before, pass after

    def validation(self) -> SetValidation:
        return SetValidation(
            set=self.name,
            accounts=self.accounts,
            passed_before=self.passed_before,
            passed_after=self.passed_after,
            failure_rate_before=self.failure_rate_before,
            failure_rate_after=self.failure_rate_after,
            changed_zones=len(self.changes),
            new_blockers=len(self.new_blockers),
        )


class GuidelineSide(BaseModel):
    """A guideline version as the report saw it: version, bundle hash, file (and its bytes' hash)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str
    hash: str
    file: str
    sha256: str


class CandidateReport(BaseModel):
    """What `welcomemat guidelines propose` writes; `promote` accepts only a READY one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["welcomemat.guideline_candidate_report"] = "welcomemat.guideline_candidate_report"
    tenant: str
    campaign: str
    created_at: datetime
    as_of: date
    provider: str
    active: GuidelineSide
    candidate: GuidelineSide
    sets: tuple[SetReport, ...]
    recommendation: Recommendation
    reasons: tuple[str, ...] = Field(default=(), description="why NOT READY, one line each")
    intended_changes: tuple[str, ...] = Field(
        default=(), description="regression cases (account ids) the proposal names as meant to change"
    )
    bundle_changes: tuple[FieldDifference, ...] = Field(
        default=(), description="the guideline fields the candidate changes: what promotion writes"
    )
    outside_bundle: tuple[FieldDifference, ...] = Field(
        default=(), description="fields outside the bundle that differ: promotion refuses them"
    )

    def validation(self) -> tuple[SetValidation, ...]:
        return tuple(s.validation() for s in self.sets)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_account_sets(campaign_path: Path) -> dict[str, tuple[Path, list[Account]]]:
    """The three named sets beside the campaign; InputError (file, line, field) on any bad line."""
    folder = campaign_path.parent / SETS_FOLDER
    sets: dict[str, tuple[Path, list[Account]]] = {}
    for name in SET_NAMES:
        path = folder / f"{name}.jsonl"
        if not path.is_file():
            raise InputError(
                f"no {name} set: a guideline change is replayed against {', '.join(SET_NAMES)} "
                f"(JSON Lines, one account a line) in {folder}",
                file=path,
            )
        found = read_accounts(path)
        if found.problems:
            raise found.problems[0]
        if not found.accounts:
            raise InputError(f"the {name} set has no account", file=path)
        sets[name] = (path, found.accounts)
    return sets


def replay_day(sets: Mapping[str, tuple[Path, Sequence[Account]]]) -> date:
    """The day a replay runs as: the day after the newest fact in the sets (today when none).

    The sets are records kept as they were when they exposed a defect; replaying them as of
    their own time gives the same report on any day.
    """
    days: list[date] = []
    for _, accounts in sets.values():
        for fact in (f for a in accounts for f in a.facts):
            try:  # bounded: a fact dated 9999-12-31 would put the day after it past any calendar
                days.append(parse_day((fact.published_at or "")[:10]))
            except ValueError:
                continue  # an undated (or out of the years) fact is refused by the trust policy either way
    return max(days) + timedelta(days=1) if days else datetime.now(UTC).date()


@dataclass(frozen=True)
class _Side:
    inputs: CampaignInputs
    assembler: Assembler
    neutral: GovernedContext  # what copy is checked in: no account's facts


def _side(inputs: CampaignInputs, provider: Provider, names: frozenset[str], now: datetime) -> _Side:
    assembler = Assembler(
        campaign=inputs.campaign,
        zones=inputs.zones,
        policy=inputs.policy,
        provider=provider,
        vocabulary=build_vocabulary(inputs.campaign),
        other_companies=names,
        now=now,
    )
    neutral = neutral_context(inputs.campaign, inputs.policy, assembler.as_of)
    assembler.prepare_fallbacks(neutral)
    return _Side(inputs, assembler, neutral)


def _banned_lines(zone_set: ZoneSet, account: Account, sides: Sequence[_Side], rung_of: str) -> list[Blocker]:
    """Zone text any version's banned lines or claim classes refuse (`rung_of`: whose output)."""
    out: list[Blocker] = []
    for side in sides:
        assembler, inputs = side.assembler, side.inputs
        for zone in zone_set.zones:
            contract = inputs.zones.get(zone.zone_id)
            if contract is None:
                continue
            check = CheckInput(
                draft=ZoneDraft(zone_id=zone.zone_id, text=zone.text, cta_id=zone.cta_id, confidence=1.0),
                contract=contract,
                context=side.neutral,
                campaign=inputs.campaign,
                policy=inputs.policy,
                vocabulary=assembler.vocabulary,
                personal=zone.rung is Rung.PERSONAL,
            )
            for failure in (check_banned_phrases(check), check_prohibited_claims(check)):
                if failure is not None:
                    out.append(
                        Blocker(
                            account_id=account.account_id,
                            zone_id=zone.zone_id,
                            code=f"banned_line:{failure.reason}",
                            detail=f"{failure.detail} (refused by guidelines "
                            f"{inputs.campaign.guideline_version}, in {rung_of} output)",
                        )
                    )
    return out


@dataclass(frozen=True)
class _Result:
    zone_set: ZoneSet
    blockers: tuple[Blocker, ...]
    attempts: int
    failed: int

    @property
    def passed(self) -> bool:
        return not self.blockers and self.failed == 0


def _run(side: _Side, both: Sequence[_Side], account: Account, rung_of: str) -> _Result:
    outcome = side.assembler.assemble(account, f"replay-{side.assembler.guideline_hash[:16]}")
    zone_set = outcome.zone_set
    blockers = [
        Blocker(
            account_id=f.account_id or account.account_id, zone_id=f.zone_id, code=f.code, detail=f.detail
        )
        for f in recheck_zone_set(zone_set, side.inputs.campaign, side.inputs.zones, side.assembler.now)
        if f.severity == "blocker"
    ]
    blockers += _banned_lines(zone_set, account, both, rung_of)
    attempts = failed = 0
    for zone in zone_set.zones:
        if zone.rung is Rung.PERSONAL:
            attempts += 1
        elif parse_reason(zone.reason).code is ZoneReason.CHECK:
            attempts += 1
            failed += 1
    return _Result(zone_set, tuple(dict.fromkeys(blockers)), attempts, failed)


def _clip(text: str | None) -> str | None:
    return text if text is None or len(text) <= _TEXT_CLIP else text[: _TEXT_CLIP - 1] + "…"


def _changes(account_id: str, before: ZoneSet, after: ZoneSet) -> list[ZoneChange]:
    out: list[ZoneChange] = []
    ids = dict.fromkeys([z.zone_id for z in before.zones] + [z.zone_id for z in after.zones])
    for zone_id in ids:
        b, a = before.zone(zone_id), after.zone(zone_id)
        rb, ra = (b.rung.value if b else None), (a.rung.value if a else None)
        tb, ta = (b.text if b else None), (a.text if a else None)
        if rb != ra or tb != ta:
            out.append(
                ZoneChange(
                    account_id=account_id,
                    zone_id=zone_id,
                    rung_before=rb,
                    rung_after=ra,
                    text_before=_clip(tb),
                    text_after=_clip(ta),
                )
            )
    return out


def _blocker_key(blocker: Blocker) -> tuple[str | None, str, str]:
    """The same blocker before and after, whichever version's rules named it."""
    return blocker.zone_id, blocker.code, blocker.detail.split(" (refused by")[0]


def _rate(failed: int, attempts: int) -> float:
    return round(failed / attempts, 4) if attempts else 0.0


def _set_report(
    name: str, path: Path, accounts: Sequence[Account], active: _Side, candidate: _Side
) -> SetReport:
    both = (active, candidate)
    changes: list[ZoneChange] = []
    new_blockers: list[Blocker] = []
    broken: list[str] = []
    fixed: list[str] = []
    passed = [0, 0]
    attempts = [0, 0]
    failed = [0, 0]
    for account in accounts:
        before = _run(active, both, account, "active")
        after = _run(candidate, both, account, "candidate")
        for i, result in enumerate((before, after)):
            passed[i] += result.passed
            attempts[i] += result.attempts
            failed[i] += result.failed
        changes += _changes(account.account_id, before.zone_set, after.zone_set)
        seen = {_blocker_key(b) for b in before.blockers}
        new_blockers += [b for b in after.blockers if _blocker_key(b) not in seen]
        if before.passed and not after.passed:
            broken.append(account.account_id)
        if after.passed and not before.passed:
            fixed.append(account.account_id)
    return SetReport(
        name=name,
        file=str(path),
        accounts=len(accounts),
        passed_before=passed[0],
        passed_after=passed[1],
        failure_rate_before=_rate(failed[0], attempts[0]),
        failure_rate_after=_rate(failed[1], attempts[1]),
        changes=tuple(changes),
        new_blockers=tuple(new_blockers),
        broken_accounts=tuple(broken),
        fixed_accounts=tuple(fixed),
    )


def check_intended(intended: Sequence[str], sets: Mapping[str, tuple[Path, Sequence[Account]]]) -> None:
    """Each name must be a case (an account id) of the regression set: InputError names the first
    that is not, and the file it is not in."""
    path, accounts = sets[REGRESSION]
    cases = {a.account_id for a in accounts}
    for name in intended:
        if name not in cases:
            raise InputError(
                f"{name!r} is not a case of the regression set (its cases: {', '.join(sorted(cases))})",
                file=path,
                field="--intended-change",
            )


def _shown_zone(rung: str | None, text: str | None) -> str:
    return f"{rung or 'none'} {text!r}" if text is not None else rung or "none"


def _unnamed_changes(s: SetReport, intended: frozenset[str]) -> list[str]:
    """One line per regression case that changed without being named, with old and new copy."""
    by_case: dict[str, list[ZoneChange]] = {}
    for c in s.changes:
        if c.account_id not in intended:
            by_case.setdefault(c.account_id, []).append(c)
    return [
        f"{s.name}: {case} changed without being named as an intended change "
        f"(--intended-change {case}): "
        + "; ".join(
            f"{c.zone_id} {_shown_zone(c.rung_before, c.text_before)} -> "
            f"{_shown_zone(c.rung_after, c.text_after)}"
            for c in changes
        )
        for case, changes in by_case.items()
    ]


def _reasons(sets: Sequence[SetReport], intended: frozenset[str]) -> list[str]:
    out: list[str] = []
    for s in sets:
        if s.name == REGRESSION:
            out += _unnamed_changes(s, intended)
        if s.new_blockers:
            names = ", ".join(dict.fromkeys(b.account_id for b in s.new_blockers))
            codes = ", ".join(dict.fromkeys(b.code for b in s.new_blockers))
            out.append(f"{s.name}: {len(s.new_blockers)} new blocker(s) ({codes}) in {names}")
        if s.name != "replay" and s.broken_accounts:
            out.append(f"{s.name}: breaks {', '.join(s.broken_accounts)} (passed before, fail after)")
        if s.failure_rate_after > s.failure_rate_before:
            out.append(
                f"{s.name}: check-failure rate rises "
                f"{s.failure_rate_before:.1%} -> {s.failure_rate_after:.1%}"
            )
        if s.name == "replay" and not s.changes:
            out.append("replay: the candidate changes no zone of the records that exposed the defect")
    return out


def replay_candidate(
    active: CampaignInputs,
    candidate: CampaignInputs,
    sets: Mapping[str, tuple[Path, Sequence[Account]]],
    *,
    provider: Provider,
    as_of: date,
    files: tuple[Path, Path],
    created_at: datetime,
    intended: Sequence[str] = (),
) -> CandidateReport:
    """Replay every set under both versions; `files`: the active campaign.yaml and the candidate's;
    `intended`: the regression cases the proposal names as meant to change (`check_intended`)."""
    check_intended(intended, sets)
    now = datetime.combine(as_of, time(12), tzinfo=UTC)
    names = frozenset(short_name(a.name).casefold() for _, accounts in sets.values() for a in accounts)
    before, after = _side(active, provider, names, now), _side(candidate, provider, names, now)
    reports = tuple(
        _set_report(name, path, accounts, before, after) for name, (path, accounts) in sets.items()
    )
    reasons = _reasons(reports, frozenset(intended))
    return CandidateReport(
        tenant=active.campaign.tenant,
        campaign=active.campaign.campaign,
        created_at=created_at,
        as_of=as_of,
        provider=getattr(provider, "name", type(provider).__name__),
        active=GuidelineSide(
            version=active.campaign.guideline_version,
            hash=guideline_hash(active.campaign),
            file=str(files[0]),
            sha256=file_sha256(files[0]),
        ),
        candidate=GuidelineSide(
            version=candidate.campaign.guideline_version,
            hash=guideline_hash(candidate.campaign),
            file=str(files[1]),
            sha256=file_sha256(files[1]),
        ),
        sets=reports,
        recommendation=NOT_READY if reasons else READY,
        reasons=tuple(reasons),
        intended_changes=tuple(dict.fromkeys(intended)),
        bundle_changes=bundle_differences(active.campaign, candidate.campaign),
        outside_bundle=outside_bundle(active.campaign, candidate.campaign),
    )
