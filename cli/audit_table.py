"""`welcomemat audit`: the audit log, as a table or JSON Lines (`welcomemat.records.audit`).

Without `--tenant` (or a `--campaign` that names one) every tenant's log is read, and the log
of actions on no one tenant (key rotations); entries are listed oldest first, by their time and
then their stream id. An entry that does not decode is named on stderr and the exit is 1.
"""

from __future__ import annotations

import sys
from datetime import UTC, date, datetime

from welcomemat.bounded_time import bounded_instant
from welcomemat.campaign.ref import resolve_campaign_ref
from welcomemat.errors import InputError, StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.records.audit import AuditEntry, audit_tenants, read_entries
from welcomemat.settings import Settings
from welcomemat.storage.connection import connect, resolve_redis

__all__ = ["format_entry", "parse_since", "run_audit"]

_HEADER = ("id", "at", "who", "action", "campaign", "account", "version", "why / what")


def parse_since(text: str) -> datetime:
    """`--since`: an ISO 8601 date or date-time; without a UTC offset, UTC."""
    try:
        value = datetime.fromisoformat(text) if "T" in text or " " in text else None
        if value is None:
            day = date.fromisoformat(text)
            value = datetime(day.year, day.month, day.day)
    except ValueError:
        raise InputError(
            f"{text!r} is not an ISO 8601 date or date-time (2026-12-01, 2026-12-01T09:30:00+01:00)",
            field="--since",
        ) from None
    try:  # bounded like every stored time: one past year 9999 in UTC cannot be compared with
        return bounded_instant(value if value.tzinfo is not None else value.replace(tzinfo=UTC))
    except ValueError as exc:
        raise InputError(str(exc), field="--since") from None


def format_entry(entry: AuditEntry) -> tuple[str, ...]:
    """The entry as a table row (tenant-less entries show `-` for what they are not about)."""
    why = " · ".join(part for part in (entry.reason, entry.detail) if part)
    return (
        entry.id or "",
        entry.at.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        f"{entry.actor} ({entry.via.value})",
        entry.action.value,
        f"{entry.tenant}/{entry.campaign}" if entry.campaign else (entry.tenant or "-"),
        entry.account + (f"/{entry.contact}" if entry.contact else "") if entry.account else "-",
        "" if entry.version is None else f"v{entry.version}",
        why,
    )


def run_audit(
    *,
    tenant: str | None,
    campaign: str | None,
    account: str | None,
    since: str | None,
    as_json: bool,
) -> int:
    settings = Settings.from_env()
    after = parse_since(since) if since is not None else None
    campaign_id = None
    if campaign is not None:
        named, campaign_id = resolve_campaign_ref(campaign, settings)
        if tenant is not None and tenant != named:
            raise InputError(
                f"campaign {campaign!r} is tenant {named!r}'s, not {tenant!r}", field="--campaign"
            )
        tenant = named
    for flag, value in (("--tenant", tenant), ("--account", account)):
        if value is not None and not is_valid_id(value):
            raise InputError(f"{value!r} is not an id", field=flag)
    client = connect(resolve_redis(settings))
    logs: list[str | None] = [tenant] if tenant is not None else [*audit_tenants(client), None]
    problems: list[StoredValueError] = []
    entries: list[AuditEntry] = []
    for log in logs:
        if log is None and (campaign_id is not None or account is not None):
            continue  # the log of no one tenant is about no campaign or account
        entries += read_entries(
            client, log, since=after, campaign=campaign_id, account=account, problems=problems
        )
    entries.sort(key=lambda e: (e.at, _id_order(e.id)))
    if as_json:
        for entry in entries:
            print(entry.model_dump_json(exclude_none=True))
    elif not entries:
        print("no audit entries" + (" match" if (tenant or campaign or account or since) else ""))
    else:
        rows = [_HEADER, *(format_entry(e) for e in entries)]
        widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER) - 1)]
        for row in rows:
            print(
                "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
                + "  "
                + row[-1]
            )
    for problem in problems:
        print(f"welcomemat: unreadable audit entry: {problem}", file=sys.stderr)
    return 1 if problems else 0


def _id_order(entry_id: str | None) -> tuple[int, int]:
    ms, _, seq = (entry_id or "0-0").partition("-")
    return int(ms), int(seq or 0)
