"""The sign-off of a guideline candidate: a high-risk change's first step, recorded in Redis.

One implementation for `welcomemat guidelines signoff` (which first checks the report file
against `campaign.yaml`) and the admin page's Sign off button (which cannot reach those files,
and shows the change record `propose` wrote from the report). Both call `sign_off_candidate`:

- it reads the candidate's change record and the active version under WATCH, and writes the
  signed record in one transaction, so of two sign-offs, racing or not, one is recorded and
  the other refused ("signed off by ...");
- it refuses (`InputError`) a version that is not a candidate, one whose report says NOT READY,
  one proposed against a version that is no longer active, one already signed off, and, when
  the caller names the report it read (`report_sha256`), a candidate proposed again since;
- it then appends the `guidelines_signoff` audit entry (the log is the tenant's, another hash
  slot: `AuditError` when it could not be written, and the sign-off stands).

It refuses nothing for its risk tier: a standard-risk candidate (one approver) may be signed off
too, a record of who checked its report, and its promotion is then anyone's (`next_step`). Of a
high-risk one (two approvers) the signer may not promote: `welcomemat guidelines promote` refuses them.
"""

from __future__ import annotations

from datetime import datetime

import redis

from welcomemat import keys
from welcomemat.campaign.guidelines import (
    READY_FOR_PROMOTION,
    ActivationState,
    GuidelineChange,
    GuidelineStore,
)
from welcomemat.errors import InputError
from welcomemat.records.audit import AuditAction, Auditor, append_entry

__all__ = ["SIGNOFF_ATTEMPTS", "next_step", "sign_off_candidate", "sign_off_refusal"]

SIGNOFF_ATTEMPTS = 5  # WATCH retries while other writes of the campaign's versions race this one


def next_step(signed: GuidelineChange) -> str:
    """What comes after `signed`'s sign-off, in words: the audit entry, the command and the page say it."""
    if signed.approvers_required >= 2:
        return f"promotion by someone other than {signed.signed_off_by} next"
    return "promotion next (risk_tier: standard: one approver, the signer too)"


def sign_off_refusal(
    record: GuidelineChange | None, version: str, active: str | None, report_sha256: str | None
) -> str | None:
    """Why this record cannot be signed off now, or None: the one rule, for the command, the page's
    button and its answer (`active`: the active version; `report_sha256`: the report read, if named)."""
    if record is None:
        return f"guideline version {version!r} was never proposed"
    if record.state is not ActivationState.CANDIDATE:
        return f"guideline version {version!r} is {record.state.value.replace('_', ' ')}, not a candidate"
    if record.recommendation != READY_FOR_PROMOTION:
        return (
            f"{version}'s report says {record.recommendation or 'nothing'}: only a READY FOR PROMOTION "
            "candidate is signed off (fix the candidate and propose again)"
        )
    if active is not None and record.previous_version is not None and active != record.previous_version:
        return (
            f"{version} was proposed against {record.previous_version}, but {active} is active now: "
            "propose it again"
        )
    if record.signed_off_by is not None:
        return (
            f"{version} was signed off by {record.signed_off_by} at {record.signed_off_at}: "
            "promote it (someone else), or propose again for a new report"
        )
    if report_sha256 is not None and record.report_sha256 != report_sha256:
        return f"{version} was proposed again since that report: read the new one"
    return None


def sign_off_candidate(
    client: redis.Redis,
    tenant: str,
    campaign: str,
    version: str,
    *,
    auditor: Auditor,
    now: datetime,
    report_sha256: str | None = None,
    approvers_required: int | None = None,
    report_name: str | None = None,
) -> GuidelineChange:
    """Record `auditor.actor`'s sign-off of candidate `version` and audit-log it; the signed record.

    `report_sha256`: the report the signer read (refused if the candidate was proposed again
    since); `approvers_required`: raised to this when the caller knows more than the record
    (never lowered); `report_name`: the report's file, for the audit entry.
    """
    key = keys.guidelines_key(tenant, campaign)
    signed: GuidelineChange | None = None
    for _ in range(SIGNOFF_ATTEMPTS):
        with client.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(key)  # type: ignore[no-untyped-call]
                watched = GuidelineStore(pipe)  # reads run at once while watching
                record = watched.get(tenant, campaign, version)
                problem = sign_off_refusal(
                    record, version, watched.active_version(tenant, campaign), report_sha256
                )
                if problem is not None:
                    raise InputError(problem, field="version")
                assert record is not None
                signed = record.model_copy(
                    update={
                        "signed_off_by": auditor.actor,
                        "signed_off_at": now,
                        "approvers_required": max(record.approvers_required, approvers_required or 1),
                    }
                )
                pipe.multi()
                pipe.hset(key, version, signed.model_dump_json())
                pipe.expire(key, keys.GUIDELINES_TTL_S)
                pipe.execute()
                break
            except redis.WatchError:
                signed = None
                continue
    if signed is None:
        raise InputError(
            f"{version}'s record kept changing while it was signed off: try again", field="version"
        )
    where = f"diagnosis in {report_name}" if report_name else "the report's diagnosis"
    detail = (
        f"{version}: {where} (sha256 {(signed.report_sha256 or '')[:12]}) signed off; {next_step(signed)}"
    )
    append_entry(
        client,
        auditor.entry(AuditAction.GUIDELINES_SIGNOFF, tenant=tenant, campaign=campaign, detail=detail),
    )
    return signed
