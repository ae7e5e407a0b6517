"""`welcomemat guidelines propose|promote|rollback`: guideline versions changed like code.

Files, in the campaign folder (beside `campaign.yaml`, which precompute reads):

- `guideline_sets/{replay,held_out,regression}.jsonl`: the account sets a candidate is
  replayed against (`precompute.guideline_replay`);
- `guidelines/<version>.yaml`: each version as it was when it was active (written at
  promotion and rollback), so a rollback restores the file precompute reads;
- `guidelines/<version>.report.json`: a candidate report (`propose`, unless `--out`).

Redis (`welcomemat.campaign.guidelines.GuidelineStore`) keeps each version's change record and which
version is active. `propose` writes a report and a candidate record and publishes nothing;
`signoff` records that one person checked the report's diagnosis
(`welcomemat.campaign.guideline_signoff`, as the admin's guidelines page does); `promote` takes a READY
report and writes the candidate's guideline bundle into `campaign.yaml`, keeping every other
field (and line) of it, and refuses a candidate that differs outside the bundle. With
`risk_tier: high` (either version) these are two steps by two different people: a sign-off,
then a promotion by someone else. `rollback` puts the previous version back. Each is
audit-logged. Zone sets change only when `welcomemat precompute` runs again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import redis
from pydantic import ValidationError

from cli.precompute_command import make_provider
from precompute.guideline_replay import (
    READY,
    REGRESSION,
    CandidateReport,
    file_sha256,
    read_account_sets,
    replay_candidate,
    replay_day,
)
from precompute.inputs import CampaignInputs, find_zones_folder, load_campaign_inputs
from welcomemat.bounded_time import parse_day
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.guideline_merge import merge_bundle_data, merge_bundle_text
from welcomemat.campaign.guideline_signoff import next_step, sign_off_candidate
from welcomemat.campaign.guidelines import (
    ActivationState,
    GuidelineChange,
    GuidelineStore,
    guideline_hash,
    outside_bundle,
)
from welcomemat.campaign.owner import read_ownership, refuse_other_tenant
from welcomemat.errors import InputError
from welcomemat.records.audit import AuditAction, Auditor, append_entry, check_reason
from welcomemat.settings import Settings
from welcomemat.storage.connection import connect, resolve_redis
from welcomemat.validation_errors import dotted
from welcomemat.yamlfile import line_of_field, read_yaml

__all__ = [
    "ARCHIVE_FOLDER",
    "active_record",
    "audit_change",
    "campaign_client",
    "campaign_file",
    "check_active",
    "format_report",
    "run_promote",
    "run_propose",
    "run_rollback",
    "run_signoff",
    "write_atomically",
]

ARCHIVE_FOLDER = "guidelines"  # beside campaign.yaml: versions as they were, and candidate reports
_BOOTSTRAP_REASON = "in force when versioned guidelines began"


def campaign_file(arg: str) -> Path:
    path = Path(arg)
    if not path.is_file():
        raise InputError(
            "guidelines need the campaign's campaign.yaml (its folder holds the account sets and versions)",
            file=path,
            field="CAMPAIGN",
        )
    return path


def _approvers_required(*campaigns: Campaign) -> int:
    """Two (a sign-off, then a promotion by someone else) when the active or the candidate
    guidelines say `risk_tier: high`: lowering the tier is itself a change two people approve."""
    return 2 if any(c.risk_tier == "high" for c in campaigns) else 1


def campaign_client(campaign: Campaign) -> redis.Redis:
    client = connect(resolve_redis(Settings.from_env()))
    refuse_other_tenant(read_ownership(client, campaign.campaign), campaign.tenant, action="change")
    return client


def write_atomically(path: Path, data: bytes) -> None:
    """Write a whole file or nothing: a reader never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def active_record(store: GuidelineStore, campaign: Campaign, now: datetime) -> GuidelineChange:
    """The active version's record; the first time, one for the version campaign.yaml holds."""
    found = store.get(campaign.tenant, campaign.campaign, campaign.guideline_version)
    if found is not None:
        return found
    return GuidelineChange(
        tenant=campaign.tenant,
        campaign=campaign.campaign,
        version=campaign.guideline_version,
        hash=guideline_hash(campaign),
        reason=_BOOTSTRAP_REASON,
        state=ActivationState.ACTIVE,
        proposed_at=now,
        activated_at=now,
    )


def check_active(store: GuidelineStore, campaign: Campaign, path: Path) -> None:
    """campaign.yaml must hold the version Redis says is active (when it says one)."""
    active = store.active_version(campaign.tenant, campaign.campaign)
    if active is not None and active != campaign.guideline_version:
        raise InputError(
            f"campaign.yaml holds guideline version {campaign.guideline_version!r} but {active!r} is the "
            "active one: restore it (guidelines/ keeps every version) or propose this one",
            file=path,
            line=line_of_field(path, ("guideline_version",)),
            field="guideline_version",
        )


def _load_candidate(candidate_path: Path, campaign_path: Path, active: CampaignInputs) -> CampaignInputs:
    if not candidate_path.is_file():
        raise InputError("file not found", file=candidate_path, field="NEW")
    zones = str(find_zones_folder(campaign_path, None))
    candidate = load_campaign_inputs(candidate_path, zones, active.tenant_file)
    for field in ("tenant", "campaign"):
        if getattr(candidate.campaign, field) != getattr(active.campaign, field):
            raise InputError(
                f"the candidate is for another {field} ({getattr(candidate.campaign, field)!r}, not "
                f"{getattr(active.campaign, field)!r})",
                file=candidate_path,
                line=line_of_field(candidate_path, (field,)),
                field=field,
            )
    new, old = candidate.campaign, active.campaign
    problem = None
    if new.guideline_version == old.guideline_version:
        problem = (
            f"guideline_version {new.guideline_version!r} is the active one: give the candidate a new version"
        )
    elif guideline_hash(new) == guideline_hash(old):
        problem = (
            "the candidate changes none of the guideline fields"
            " (welcomemat.campaign.guidelines.GUIDELINE_FIELDS)"
        )
    if problem is not None:
        raise InputError(
            problem,
            file=candidate_path,
            line=line_of_field(candidate_path, ("guideline_version",)),
            field="guideline_version",
        )
    return candidate


def format_report(report: CandidateReport, path: Path) -> str:
    """The candidate report as `propose` prints it: per set, figures, changed zones, new blockers."""
    lines = [
        f"guidelines {report.tenant}/{report.campaign}: {report.active.version} ({report.active.hash[:12]}) "
        f"-> {report.candidate.version} ({report.candidate.hash[:12]}), provider {report.provider}, "
        f"as of {report.as_of}",
    ]
    for s in report.sets:
        lines += [
            "",
            f"{s.name} ({s.accounts} accounts, {s.file}): passed {s.passed_before} -> {s.passed_after}; "
            f"check failures {s.failure_rate_before:.1%} -> {s.failure_rate_after:.1%}; "
            f"{len(s.changes)} zones changed; {len(s.new_blockers)} new blockers",
        ]
        intended = set(report.intended_changes) if s.name == REGRESSION else set()
        for c in s.changes:
            mark = " (intended)" if c.account_id in intended else ""
            lines.append(f"  ~ {c.account_id} {c.zone_id}: {c.rung_before} -> {c.rung_after}{mark}")
            if c.text_before != c.text_after:
                lines += [f"      - {c.text_before}", f"      + {c.text_after}"]
        lines += [f"  ! {b.account_id} {b.zone_id or ''} {b.code}: {b.detail}" for b in s.new_blockers]
        if s.broken_accounts:
            lines.append(f"  breaks: {', '.join(s.broken_accounts)}")
    if report.intended_changes:
        lines += ["", f"intended regression changes: {', '.join(report.intended_changes)}"]
    lines += [
        "",
        "guideline fields changed: " + (", ".join(d.field for d in report.bundle_changes) or "none"),
    ]
    if report.outside_bundle:
        lines.append(
            "outside the guideline bundle (promotion refuses these until campaign.yaml has the "
            "candidate's values; apply them separately, or drop them from the candidate):"
        )
        lines += [f"  * {d.describe()}" for d in report.outside_bundle]
    lines += ["", report.recommendation, *(f"  - {r}" for r in report.reasons), f"report: {path}"]
    return "\n".join(lines)


def run_propose(
    campaign_arg: str,
    candidate_arg: str,
    *,
    reason: str | None,
    evidence: list[str] | None,
    out: str | None,
    as_of: str | None,
    provider: str,
    auditor: Auditor,
    as_json: bool = False,
    intended: list[str] | None = None,
) -> int:
    """Replay the candidate, write its report and candidate record; exit 0 READY, 1 NOT READY."""
    recorded_reason = check_reason(reason, AuditAction.GUIDELINES_PROPOSE, source="--reason")
    if recorded_reason is None:
        raise InputError("say why the guidelines change, for the change record", field="--reason")
    campaign_path = campaign_file(campaign_arg)
    active = load_campaign_inputs(campaign_path, None, None)
    candidate_path = Path(candidate_arg)
    candidate = _load_candidate(candidate_path, campaign_path, active)
    sets = read_account_sets(campaign_path)
    try:
        day = parse_day(as_of) if as_of else replay_day(sets)
    except ValueError as exc:
        raise InputError(str(exc), field="--as-of") from None
    now = datetime.now(UTC)
    report = replay_candidate(
        active,
        candidate,
        sets,
        provider=make_provider(provider, Settings.from_env()),
        as_of=day,
        files=(campaign_path.resolve(), candidate_path.resolve()),
        created_at=now,
        intended=intended or (),
    )
    version = candidate.campaign.guideline_version
    report_path = Path(out) if out else campaign_path.parent / ARCHIVE_FOLDER / f"{version}.report.json"
    body = report.model_dump_json(indent=2).encode()

    client = campaign_client(active.campaign)
    try:
        store = GuidelineStore(client)
        check_active(store, active.campaign, campaign_path)
        before = store.get(active.campaign.tenant, active.campaign.campaign, version)
        if before is not None and before.state is not ActivationState.CANDIDATE:
            raise InputError(
                f"guideline version {version!r} was {before.state.value} before: "
                "give the candidate a new one",
                file=candidate_path,
                line=line_of_field(candidate_path, ("guideline_version",)),
                field="guideline_version",
            )
        write_atomically(report_path, body)
        replay_accounts = [c.account_id for s in report.sets if s.name == "replay" for c in s.changes]
        record = GuidelineChange(
            tenant=active.campaign.tenant,
            campaign=active.campaign.campaign,
            version=version,
            hash=report.candidate.hash,
            previous_version=active.campaign.guideline_version,
            previous_hash=report.active.hash,
            reason=recorded_reason,
            evidence=tuple(evidence or ())
            + (f"replay set changes: {', '.join(dict.fromkeys(replay_accounts)) or 'none'}",)
            + tuple(f"intended regression change: {case}" for case in report.intended_changes),
            approvers_required=_approvers_required(active.campaign, candidate.campaign),
            validation=report.validation(),
            recommendation=report.recommendation,
            report_sha256=hashlib.sha256(body).hexdigest(),
            state=ActivationState.CANDIDATE,
            rollback_target=active.campaign.guideline_version,
            proposed_at=now,
        )
        activated = store.get(
            active.campaign.tenant, active.campaign.campaign, active.campaign.guideline_version
        )
        if activated is None:  # the first versioned change: what campaign.yaml holds is the active version
            bootstrap = active_record(store, active.campaign, now)
            store.save(record, bootstrap, active=bootstrap.version)
        else:
            store.save(record)
        detail = (
            f"{report.active.version} -> {version} ({report.candidate.hash[:12]}): "
            f"{report.recommendation}; report {report_path}"
        )
        where = (active.campaign.tenant, active.campaign.campaign)
        audit_change(client, auditor, AuditAction.GUIDELINES_PROPOSE, where, detail, recorded_reason)
    finally:
        client.close()
    print(body.decode() if as_json else format_report(report, report_path))
    return 0 if report.recommendation == READY else 1


def _read_report(path: Path) -> CandidateReport:
    if not path.is_file():
        raise InputError("file not found", file=path, field="REPORT")
    try:
        return CandidateReport.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(
            f"not a candidate report: {first['msg']}", file=path, field=dotted(first["loc"])
        ) from None


def _read_ready(
    campaign_path: Path, report_path: Path
) -> tuple[CandidateReport, CampaignInputs, CampaignInputs]:
    """A READY report for this campaign, replayed against its current guidelines, and the
    campaign and candidate as they are now (both unchanged since the replay)."""
    report = _read_report(report_path)
    if report.recommendation != READY:
        raise InputError(
            f"the report says {report.recommendation}: only a READY FOR PROMOTION candidate is promoted "
            f"({'; '.join(report.reasons)})",
            file=report_path,
            field="recommendation",
        )
    active = load_campaign_inputs(campaign_path, None, None)
    if (report.tenant, report.campaign) != (active.campaign.tenant, active.campaign.campaign):
        raise InputError(
            f"the report is for {report.tenant}/{report.campaign}", file=report_path, field="campaign"
        )
    if guideline_hash(active.campaign) != report.active.hash:
        raise InputError(
            "campaign.yaml's guidelines changed since the candidate was replayed against them: propose again",
            file=report_path,
            field="active.hash",
        )
    candidate_path = Path(report.candidate.file)
    if not candidate_path.is_file() or file_sha256(candidate_path) != report.candidate.sha256:
        raise InputError(
            f"{candidate_path} is not the file the report replayed (missing or changed since): propose again",
            file=report_path,
            field="candidate.sha256",
        )
    candidate = load_campaign_inputs(
        candidate_path, str(find_zones_folder(campaign_path, None)), active.tenant_file
    )
    return report, active, candidate


def _candidate_record(
    store: GuidelineStore, report: CandidateReport, report_path: Path, active: Campaign, campaign_path: Path
) -> GuidelineChange:
    """The candidate's change record, written by `propose` with this very report."""
    check_active(store, active, campaign_path)
    version = report.candidate.version
    record = store.get(report.tenant, report.campaign, version)
    if record is None or record.state is not ActivationState.CANDIDATE:
        state = "never proposed" if record is None else record.state.value
        raise InputError(f"guideline version {version!r} is {state}, not a candidate", field="REPORT")
    if record.report_sha256 != file_sha256(report_path):
        raise InputError(
            "not the report `propose` wrote for this candidate (changed, or an older one)", file=report_path
        )
    return record


def run_signoff(campaign_arg: str, report_arg: str, *, auditor: Auditor, now: datetime) -> int:
    """Record the actor's sign-off of a READY report's diagnosis: a high-risk change's first step.

    The files are checked here (the report is the candidate's latest, replayed against the
    guidelines campaign.yaml holds); the sign-off itself is `sign_off_candidate`'s, as the admin
    page's button records it."""
    campaign_path, report_path = campaign_file(campaign_arg), Path(report_arg)
    report, active, candidate = _read_ready(campaign_path, report_path)
    version = report.candidate.version
    client = campaign_client(active.campaign)
    try:
        store = GuidelineStore(client)
        record = _candidate_record(store, report, report_path, active.campaign, campaign_path)
        try:
            signed = sign_off_candidate(
                client,
                report.tenant,
                report.campaign,
                version,
                auditor=auditor,
                now=now,
                report_sha256=record.report_sha256,
                approvers_required=_approvers_required(active.campaign, candidate.campaign),
                report_name=report_path.name,
            )
        except InputError as exc:
            raise InputError(exc.message, field="--by") from None
    finally:
        client.close()
    print(
        f"guidelines {report.tenant}/{report.campaign} {version}: {auditor.actor} signed off the report's "
        f"diagnosis at {now.isoformat()}; {next_step(signed)} "
        "(`welcomemat guidelines promote` makes it active)"
    )
    return 0


def _refuse_outside_bundle(
    report: CandidateReport, active: Campaign, candidate: Campaign, candidate_path: Path, campaign_path: Path
) -> None:
    """Promotion writes only the guideline bundle: a field outside it that the candidate changed
    (the report lists them) is refused until campaign.yaml has the candidate's value. A field
    edited in campaign.yaml since the proposal is campaign.yaml's: the merge keeps it."""
    flagged = {d.field for d in report.outside_bundle}
    differences = [d for d in outside_bundle(active, candidate) if d.field in flagged]
    if not differences:
        return
    first = differences[0]
    raise InputError(
        "the candidate differs from campaign.yaml outside the guideline bundle: "
        + ", ".join(d.describe() for d in differences)
        + f". Promotion changes only the guidelines: apply these to {campaign_path} separately (a settings "
        "edit), or drop them from the candidate and propose again",
        file=candidate_path,
        line=None if first.change == "removed" else line_of_field(candidate_path, (first.field,)),
        field=", ".join(d.field for d in differences),
    )


def _merges(campaign_path: Path, candidate_path: Path) -> Iterator[tuple[str, bool]]:
    """The text merge (its lines kept: True), then the value merge for a layout the first cannot
    rewrite (False: written again from its values, without comments)."""
    merged = merge_bundle_text(campaign_path.read_text("utf-8"), candidate_path.read_text("utf-8"))
    if merged is not None:
        yield merged, True
    yield merge_bundle_data(read_yaml(campaign_path).data, read_yaml(candidate_path).data), False


def _bundle_written(
    campaign_path: Path, candidate_path: Path, active: CampaignInputs, candidate: Campaign
) -> tuple[bytes, bool]:
    """campaign.yaml with the candidate's guideline bundle and every other field (and line) its own:
    loaded as precompute would, and kept only when it holds exactly the candidate's bundle and
    version and the active file's other fields. The flag: its other lines kept as they were."""
    zones = str(find_zones_folder(campaign_path, None))
    for text, lines_kept in _merges(campaign_path, candidate_path):
        probe = campaign_path.with_name(f".{campaign_path.name}.{os.getpid()}.merge.yaml")
        probe.write_text(text, encoding="utf-8")
        try:
            merged = load_campaign_inputs(probe, zones, active.tenant_file).campaign
        except InputError:
            continue
        finally:
            probe.unlink(missing_ok=True)
        if (
            guideline_hash(merged) == guideline_hash(candidate)
            and merged.guideline_version == candidate.guideline_version
            and not outside_bundle(active.campaign, merged)
        ):
            return text.encode("utf-8"), lines_kept
    raise InputError(
        "could not write the candidate's guidelines into campaign.yaml and keep its other fields: "
        "copy the guideline fields into it by hand and propose again",
        file=campaign_path,
    )


def run_promote(campaign_arg: str, report_arg: str, *, auditor: Auditor, now: datetime) -> int:
    """Make a READY candidate's guidelines active: its bundle written into campaign.yaml (the rest
    kept); a high-risk change only after someone else signed off its report."""
    campaign_path, report_path = campaign_file(campaign_arg), Path(report_arg)
    report, active, candidate = _read_ready(campaign_path, report_path)
    candidate_path = Path(report.candidate.file)
    _refuse_outside_bundle(report, active.campaign, candidate.campaign, candidate_path, campaign_path)
    where = (report.tenant, report.campaign)
    version = report.candidate.version
    client = campaign_client(active.campaign)
    try:
        store = GuidelineStore(client)
        record = _candidate_record(store, report, report_path, active.campaign, campaign_path)
        required = max(record.approvers_required, _approvers_required(active.campaign, candidate.campaign))
        signer = record.signed_off_by
        if required == 2 and signer is None:
            raise InputError(
                f"{version} is a high-risk change (risk_tier: high): someone must first sign off the "
                f"report's diagnosis (`welcomemat guidelines signoff {campaign_path} {report_path} "
                "--by NAME`), then someone else promotes it",
                file=report_path,
                field="--by",
            )
        if required == 2 and signer == auditor.actor:
            raise InputError(
                f"{auditor.actor} signed off {version}'s report: the promotion must be by someone else",
                field="--by",
            )
        approvers = tuple(dict.fromkeys(a for a in (signer, auditor.actor) if a is not None))
        written, lines_kept = _bundle_written(campaign_path, candidate_path, active, candidate.campaign)
        archive = campaign_path.parent / ARCHIVE_FOLDER
        previous = active_record(store, active.campaign, now)
        write_atomically(archive / f"{previous.version}.yaml", campaign_path.read_bytes())
        write_atomically(archive / f"{version}.yaml", written)
        write_atomically(campaign_path, written)
        promoted = record.model_copy(
            update={
                "approvers": approvers,
                "approvers_required": required,
                "state": ActivationState.ACTIVE,
                "activated_at": now,
                "rollback_target": previous.version,
            }
        )
        store.save(
            promoted, previous.model_copy(update={"state": ActivationState.SUPERSEDED}), active=version
        )
        steps = (
            f"signed off by {signer}, promoted by {auditor.actor}"
            if signer
            else f"promoted by {auditor.actor}"
        )
        detail = f"{previous.version} -> {version} active ({steps})"
        audit_change(client, auditor, AuditAction.GUIDELINES_PROMOTE, where, detail)
    finally:
        client.close()
    changed = ", ".join(d.field for d in report.bundle_changes) or "none"
    kept = "every other field and line kept" if lines_kept else "every other field kept, its comments not"
    print(
        f"guidelines {report.tenant}/{report.campaign}: {detail}; {campaign_path} now holds its guidelines "
        f"({changed}; {kept}; the previous version: {archive / f'{previous.version}.yaml'}). "
        "Run `welcomemat precompute` to publish with it."
    )
    return 0


def audit_change(
    client: redis.Redis,
    auditor: Auditor,
    action: AuditAction,
    where: tuple[str, str],
    detail: str,
    reason: str | None = None,
) -> None:
    """Audit-log a change of a campaign's guidelines (`where`: tenant, campaign): proposed,
    promoted, rolled back, or an experiment stopped into a new version."""
    tenant, campaign = where
    entry = auditor.entry(action, tenant=tenant, campaign=campaign, reason=reason, detail=detail)
    append_entry(client, entry)


def run_rollback(campaign_arg: str, *, reason: str | None, auditor: Auditor) -> int:
    """Restore the active version's previous one: campaign.yaml, and the records in Redis."""
    recorded_reason = check_reason(reason, AuditAction.GUIDELINES_ROLLBACK, source="--reason")
    campaign_path = campaign_file(campaign_arg)
    active = load_campaign_inputs(campaign_path, None, None).campaign
    now = datetime.now(UTC)
    client = campaign_client(active)
    try:
        store = GuidelineStore(client)
        check_active(store, active, campaign_path)
        current = store.get(active.tenant, active.campaign, active.guideline_version)
        target = None if current is None else current.rollback_target
        if current is None or target is None or current.state is not ActivationState.ACTIVE:
            raise InputError(
                f"guideline version {active.guideline_version!r} has no previous version to roll back to",
                file=campaign_path,
                field="guideline_version",
            )
        archived = campaign_path.parent / ARCHIVE_FOLDER / f"{target}.yaml"
        if not archived.is_file():
            raise InputError(f"version {target!r} is not kept in {archived.parent}", file=archived)
        restored = store.get(active.tenant, active.campaign, target)
        if restored is None:
            raise InputError(f"no change record for version {target!r}", field="guideline_version")
        write_atomically(
            campaign_path.parent / ARCHIVE_FOLDER / f"{current.version}.yaml", campaign_path.read_bytes()
        )
        write_atomically(campaign_path, archived.read_bytes())
        store.save(
            current.model_copy(update={"state": ActivationState.ROLLED_BACK}),
            restored.model_copy(update={"state": ActivationState.ACTIVE, "activated_at": now}),
            active=target,
        )
        detail = f"{current.version} -> {target}"
        where = (active.tenant, active.campaign)
        audit_change(client, auditor, AuditAction.GUIDELINES_ROLLBACK, where, detail, recorded_reason)
    finally:
        client.close()
    print(
        f"guidelines {active.tenant}/{active.campaign}: rolled back {detail}; {campaign_path} restored. "
        "Run `welcomemat precompute` to publish with it."
    )
    return 0
