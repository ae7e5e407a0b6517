"""`welcomemat erase` and `welcomemat subject-export`: data-subject requests
(`welcomemat.records.subject_requests`).

SUBJECT is an account id or a person's e-mail address. Where to look: `--campaign` (its
tenant) or `--tenant`; without either, an address is looked for in every tenant (a person may
be a contact of accounts of several), and an account id needs the tenant named when more than
one is known (account ids are per tenant). Both are audit-logged as `--by` (else
`WELCOMEMAT_OPERATOR`, else the login name).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis

from welcomemat import keys
from welcomemat.campaign.ref import resolve_campaign_ref
from welcomemat.errors import InputError
from welcomemat.ids import is_valid_id
from welcomemat.records.audit import AuditAction, Auditor, audit_tenants, check_reason
from welcomemat.records.subject_requests import (
    Subject,
    account_known,
    erase,
    export_subject,
    find_subjects,
    readmit,
)
from welcomemat.settings import Settings
from welcomemat.storage.connection import connect, resolve_redis

__all__ = ["run_erase", "run_subject_export", "subject_tenants"]


def subject_tenants(
    client: redis.Redis, settings: Settings, subject: str, *, tenant: str | None, campaign: str | None
) -> list[str]:
    """The tenants to look for `subject` in (see the module docstring)."""
    if campaign is not None:
        named, _ = resolve_campaign_ref(campaign, settings)
        if tenant is not None and tenant != named:
            raise InputError(f"campaign {campaign!r} is {named!r}'s, not {tenant!r}'s", field="--campaign")
        return [named]
    if tenant is not None:
        if not is_valid_id(tenant):
            raise InputError(f"{tenant!r} is not a tenant id", field="--tenant")
        return [tenant]
    index: list[Any] = client.hkeys(keys.campaigns_index_key())
    known = {_text(name).partition("/")[0] for name in index} | set(audit_tenants(client))
    known = {t for t in known if is_valid_id(t)}
    if "@" not in subject and len(known) != 1:
        listed = ", ".join(sorted(known)) or "none yet"
        raise InputError(
            f"account ids are per tenant: name it with --tenant or --campaign (tenants: {listed})",
            field="--tenant",
        )
    return sorted(known)


def run_erase(
    subject: str,
    *,
    tenant: str | None,
    campaign: str | None,
    reason: str | None,
    auditor: Auditor,
    readmit_only: bool,
    as_json: bool,
    force: bool = False,
) -> int:
    """Erase (or, with `readmit_only`, readmit) every subject `subject` names; exit 0, also when
    nothing is left of a subject erased before (an erasure done twice reports `nothing left`).

    An account id the tenant holds nothing about and never erased (a typo, another tenant's id)
    is refused, exit 1, nothing written; `force` erases it anyway, which writes its suppression
    mark (precompute never publishes it should it arrive later) and the audit entry."""
    action = AuditAction.READMIT if readmit_only else AuditAction.ERASE
    if force and readmit_only:
        raise InputError("--force goes with an erasure, not with --readmit", field="--force")
    reason = check_reason(reason, action, source="--reason")
    settings = Settings.from_env()
    client = connect(resolve_redis(settings))
    subjects: list[Subject] = []
    for name in subject_tenants(client, settings, subject, tenant=tenant, campaign=campaign):
        subjects += find_subjects(client, name, subject)
    if not subjects:
        print(f"nothing held about {subject}")
        return 0
    if not readmit_only and not force:
        unknown = [
            s for s in subjects if s.contact is None and not account_known(client, s.tenant, s.account)
        ]
        for found in unknown:
            print(
                f"welcomemat: {found.describe()} is unknown: nothing is held about it and it was never "
                "erased, so nothing was written (check the id and --tenant; --force erases it anyway, "
                "keeping precompute from publishing it should it arrive later)",
                file=sys.stderr,
            )
        if unknown:
            return 1
    for found in subjects:
        if readmit_only:
            done = readmit(client, found, auditor=auditor, reason=reason)
            verb = "readmitted" if done else "not on the erasure list (nothing to readmit):"
            print(f"{verb} {found.describe()}" + ("; precompute may publish it again" if done else ""))
            continue
        report = erase(client, found, auditor=auditor, reason=reason)
        if as_json:
            print(
                json.dumps(
                    {
                        "tenant": found.tenant,
                        "account": found.account,
                        "contact": found.contact,
                        "removed": dict(report.removed),
                        "total": report.total,
                    }
                )
            )
        else:
            print(f"erased {found.describe()}: {report.summary()}")
    return 0


def run_subject_export(
    subject: str,
    *,
    tenant: str | None,
    campaign: str | None,
    out: str | None,
    auditor: Auditor,
) -> int:
    """Everything held about the subject as one JSON document, on stdout or in `out` (written
    whole or not at all, readable by its owner only)."""
    settings = Settings.from_env()
    client = connect(resolve_redis(settings))
    held: list[dict[str, Any]] = []
    for name in subject_tenants(client, settings, subject, tenant=tenant, campaign=campaign):
        for found in find_subjects(client, name, subject):
            held.append(export_subject(client, found, auditor=auditor))
    document = {
        "subject": subject,
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "held": held,
    }
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if out is None:
        sys.stdout.write(text)
        return 0
    path = Path(out)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600: personal data
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    print(f"wrote {len(held)} record(s) about {subject} to {path}", file=sys.stderr)
    return 0


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
