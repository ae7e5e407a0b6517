"""Human review: zone sets a person must approve before they are served as personal.

Tiers the campaign names (`approval.review_tiers`) are published as `pending_review` and
queued; the renderer serves them the fallback until a person approves. A stratified
sample of the rest is queued too, to be read (they are already live). Approving names the
version the reviewer saw, so a newer version published meanwhile is not approved blind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import redis

from welcomemat import keys
from welcomemat.store import PublishResult, ZoneSetStore
from welcomemat.zoneset import ZoneSet, ZoneSetStatus

__all__ = ["ReviewItem", "ReviewOutcome", "decide", "list_queue", "show"]


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
    expected_version: int | None = None,
) -> ReviewOutcome:
    """Approve (publish) or reject a zone set; only the version the reviewer saw, if given."""
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
    return ReviewOutcome(account_id, True, f"v{result.version} is now {status.value}", result)
