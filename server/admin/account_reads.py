"""What the preview and the account page both read of one account: its latest audit entries and
its explain record, each degraded (not refused) when stored values do not decode."""

from __future__ import annotations

from dataclasses import dataclass

from server.admin.endpoint import guarded_read
from server.admin.payloads import ExplainPayload, parse_explain_record
from server.renderer_state import RendererState
from welcomemat import keys
from welcomemat.errors import StoredValueError
from welcomemat.records.audit import AuditEntry, read_entries
from welcomemat.zones.zoneset import ZoneSet

__all__ = ["AUDIT_ENTRIES_SCANNED", "AUDIT_ENTRIES_SHOWN", "AccountAudit", "account_audit", "account_explain"]

# Entries shown per account, looking back this far in the tenant's log (newest first; a run logs
# one entry per account it publishes): older ones are `welcomemat audit`'s.
AUDIT_ENTRIES_SHOWN = 50
AUDIT_ENTRIES_SCANNED = 10_000


@dataclass(frozen=True)
class AccountAudit:
    """An account's latest audit entries, and how many entries on the way did not decode."""

    entries: list[AuditEntry]
    unreadable: int


async def account_audit(renderer: RendererState, op: str, tenant: str, account: str) -> AccountAudit:
    """The account's latest entries, newest first; undecodable ones counted (and in the metric)."""
    problems: list[StoredValueError] = []
    entries = await guarded_read(
        renderer,
        op,
        lambda: read_entries(
            renderer.client,
            tenant,
            account=account,
            newest_first=True,
            limit=AUDIT_ENTRIES_SHOWN,
            scan_max=AUDIT_ENTRIES_SCANNED,
            problems=problems,
        ),
    )
    if problems:
        renderer.metrics.stored_value_errors.inc(len(problems))
    return AccountAudit(entries, len(problems))


def account_explain(
    renderer: RendererState,
    raw: bytes | None,
    tenant: str,
    campaign: str,
    account: str,
    zone_set: ZoneSet | None,
) -> tuple[ExplainPayload | None, str | None]:
    """The account's explain record and None, or None and why it does not decode: the page and
    zone set still show, saying what is missing."""
    if raw is None:
        return None, None
    try:
        return parse_explain_record(raw, keys.explain_key(tenant, campaign, account), zone_set), None
    except StoredValueError as exc:
        renderer.metrics.stored_value_errors.inc()
        return None, str(exc)
