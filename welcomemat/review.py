"""Human review: zone sets a person must approve before they are served as personal.

Tiers the campaign names (`approval.review_tiers`) are published as `pending_review` and
queued; the renderer serves them the fallback until a person approves. A stratified
sample of the rest is queued too, to be read (they are already live). Approving names the
version the reviewer saw, so a newer version published meanwhile is not approved blind.

Every decision that changes something (approve, reject, rollback) is recorded in the
tenant's audit log (`welcomemat.audit`) right after it is made, with who made it and, for a
rejection or a rollback, why (required: `InputError` before anything is done without one).
The log is the tenant's and the zone set the campaign's (two hash slots), so the entry
follows the decision's transaction; if it cannot be written, `AuditError` says the decision
stands but is not in the log.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import redis

from welcomemat import keys
from welcomemat.audit import AuditAction, Auditor, append_entry, check_reason
from welcomemat.store import PublishResult, ZoneSetStore
from welcomemat.zoneset import ZoneSet, ZoneSetStatus

__all__ = ["ReviewItem", "ReviewOutcome", "decide", "list_queue", "roll_back", "show"]


@dataclass(frozen=True)
class ReviewItem:
    account_id: str
    queue: str  # "approval": must be approved to go live; "sample": live, to be read
    queued_at: float
    zone_set: ZoneSet | None


@dataclass(frozen=True)
class ReviewOutcome:
    account_id: str
    applied: bool
    detail: str
    result: PublishResult | None


def list_queue(client: redis.Redis, tenant: str, campaign: str) -> list[ReviewItem]:
    store = ZoneSetStore(client)
    items: list[ReviewItem] = []
    for queue, key in (
        ("approval", keys.review_queue_key(tenant, campaign)),
        ("sample", keys.review_sample_key(tenant, campaign)),
    ):
        entries: list[tuple[bytes, float]] = client.zrange(key, 0, -1, withscores=True)  # type: ignore[assignment]
        ids = [raw.decode() for raw, _ in entries]
        sets = store.get_many(tenant, campaign, ids)
        items.extend(
            ReviewItem(a, queue, float(score), sets.get(a))
            for a, (_, score) in zip(ids, entries, strict=True)
        )
    return items


def show(client: redis.Redis, tenant: str, campaign: str, account_id: str) -> dict[str, Any] | None:
    """The explain record of an account (what the reviewer reads), or None."""
    raw = client.get(keys.explain_key(tenant, campaign, account_id))
    return json.loads(raw) if raw else None


def decide(
    client: redis.Redis,
    tenant: str,
    campaign: str,
    account_id: str,
    *,
    approve: bool,
    auditor: Auditor,
    reason: str | None = None,
    expected_version: int | None = None,
) -> ReviewOutcome:
    """Approve (publish) or reject a zone set; only the version the reviewer saw, if given.

    A rejection needs a `reason`. A decision that changed the zone set is audit-logged.
    """
    action = AuditAction.APPROVE if approve else AuditAction.REJECT
    reason = check_reason(reason, action, source="reason")
    store = ZoneSetStore(client)
    current = store.get(tenant, campaign, account_id)
    if current is None:
        return ReviewOutcome(account_id, False, "no zone set is published for this account", None)
    if expected_version is not None and current.version != expected_version:
        return ReviewOutcome(
            account_id,
            False,
            f"version {expected_version} is no longer current (now v{current.version}); "
            "review the current version",
            None,
        )
    status = ZoneSetStatus.PUBLISHED if approve else ZoneSetStatus.REJECTED
    result = store.set_status(tenant, campaign, account_id, status, expected_version=current.version)
    if result is None or not result.changed:
        verb = "approved" if approve else "rejected"
        return ReviewOutcome(
            account_id, result is not None, f"already {verb}" if result else "changed meanwhile", result
        )
    client.zrem(keys.review_queue_key(tenant, campaign), account_id)
    entry = auditor.entry(
        action,
        tenant=tenant,
        campaign=campaign,
        account=account_id,
        version=result.version,
        reason=reason,
        detail=f"reviewed v{current.version}",
    )
    append_entry(client, entry)
    return ReviewOutcome(account_id, True, f"v{result.version} is now {status.value}", result)


def roll_back(
    client: redis.Redis,
    tenant: str,
    campaign: str,
    account_id: str,
    *,
    auditor: Auditor,
    reason: str | None,
) -> ZoneSet | None:
    """Make the account's previous zone set current again (`ZoneSetStore.rollback`), audit-logged.

    Needs a `reason`. None when there is no previous version (nothing done, nothing logged).
    """
    reason = check_reason(reason, AuditAction.ROLLBACK, source="reason")
    restored = ZoneSetStore(client).rollback(tenant, campaign, account_id)
    if restored is None:
        return None
    entry = auditor.entry(
        AuditAction.ROLLBACK,
        tenant=tenant,
        campaign=campaign,
        account=account_id,
        version=restored.version,
        reason=reason,
        detail=f"restores what was published before, now {restored.status.value}",
    )
    append_entry(client, entry)
    return restored
