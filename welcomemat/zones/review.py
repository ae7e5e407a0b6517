"""Human review: zone sets a person must approve before they are served as personal.

Tiers the campaign names (`approval.review_tiers`) are published as `pending_review` and
queued; the renderer serves them the fallback until a person approves. A stratified
sample of the rest is queued too, to be read (they are already live). Approving names the
version the reviewer saw, so a newer version published meanwhile is not approved blind.

An account with a held draft (`welcomemat.zones.held`: the self-review judged it not ok, or the
model's confidence is below the threshold) is queued as `held` with the layer's note; a
person may approve that zone's draft (`approve_held`), which publishes a new version with
the zone personal. Approval never bypasses a deterministic check: a held draft that failed
one, or whose cited facts have expired, is refused.

Every decision that changes something (approve, reject, rollback) is recorded in the
tenant's audit log (`welcomemat.records.audit`) right after it is made, with who made it and, for a
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
from welcomemat.reasons import ZoneReason, parse_reason, zone_reason
from welcomemat.records.audit import AuditAction, Auditor, append_entry, check_reason
from welcomemat.zones.held import HeldDraft, held_drafts
from welcomemat.zones.store import PublishResult, ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneContent, ZoneSet, ZoneSetMode, ZoneSetStatus

__all__ = [
    "ReviewItem",
    "ReviewOutcome",
    "approve_held",
    "decide",
    "list_queue",
    "roll_back",
    "show",
]


@dataclass(frozen=True)
class ReviewItem:
    account_id: str
    # "approval": must be approved to go live; "sample": live, to be read;
    # "held": served the fallback while a zone's draft waits for a person (`held`)
    queue: str
    queued_at: float
    zone_set: ZoneSet | None
    held: tuple[HeldDraft, ...] = ()


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
        ("held", keys.review_held_key(tenant, campaign)),
    ):
        entries: list[tuple[bytes, float]] = client.zrange(key, 0, -1, withscores=True)  # type: ignore[assignment]
        ids = [raw.decode() for raw, _ in entries]
        sets = store.get_many(tenant, campaign, ids)
        for a, (_, score) in zip(ids, entries, strict=True):
            held: tuple[HeldDraft, ...] = ()
            if queue == "held":
                record = show(client, tenant, campaign, a)
                held = tuple(held_drafts(record).values()) if record else ()
            items.append(ReviewItem(a, queue, float(score), sets.get(a), held))
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
    where = (tenant, campaign, account_id)
    _log_decision(client, auditor, action, where, result.version, reason, f"reviewed v{current.version}")
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
    where = (tenant, campaign, account_id)
    _log_decision(
        client,
        auditor,
        AuditAction.ROLLBACK,
        where,
        restored.version,
        reason,
        f"restores what was published before, now {restored.status.value}",
    )
    return restored


def _log_decision(
    client: redis.Redis,
    auditor: Auditor,
    action: AuditAction,
    where: tuple[str, str, str],
    version: int,
    reason: str | None,
    detail: str,
) -> None:
    """Append a review decision on one account (`where`: tenant, campaign, account) to the audit log."""
    tenant, campaign, account_id = where
    entry = auditor.entry(
        action,
        tenant=tenant,
        campaign=campaign,
        account=account_id,
        version=version,
        reason=reason,
        detail=detail,
    )
    append_entry(client, entry)


def _mode(zones_personal: int, zones: int) -> ZoneSetMode:
    if zones_personal == zones:
        return ZoneSetMode.FULL
    return ZoneSetMode.FALLBACK if zones_personal == 0 else ZoneSetMode.DEGRADED


def approve_held(
    client: redis.Redis,
    tenant: str,
    campaign: str,
    account_id: str,
    zone_id: str,
    *,
    auditor: Auditor,
    reason: str | None = None,
    expected_version: int | None = None,
) -> ReviewOutcome:
    """Publish a zone's held draft as personal copy, as a new version, audit-logged.

    A draft that uses no specific of the facts it cites is published as what it is, segment
    copy (`not_specific`, its cited facts kept), never promoted to personal by approval.

    Refused (nothing written) when the draft was held for other inputs than the current
    set's, is already served, failed a deterministic check, or cites an expired fact; and,
    when `expected_version` is given, when that version is no longer current.
    """
    reason = check_reason(reason, AuditAction.APPROVE, source="reason")
    store = ZoneSetStore(client)
    current = store.get(tenant, campaign, account_id)
    record = show(client, tenant, campaign, account_id)
    if current is None or record is None:
        return ReviewOutcome(account_id, False, "no zone set is published for this account", None)
    if expected_version is not None and current.version != expected_version:
        return ReviewOutcome(
            account_id,
            False,
            f"version {expected_version} is no longer current (now v{current.version}); "
            "review the current version",
            None,
        )
    held = held_drafts(record).get(zone_id)
    served = current.zone(zone_id)
    if held is None or served is None or record.get("input_hash") != current.input_hash:
        return ReviewOutcome(
            account_id, False, f"zone {zone_id!r} has no held draft in v{current.version}", None
        )
    if served.rung is Rung.PERSONAL:
        return ReviewOutcome(account_id, False, f"zone {zone_id!r} is already personal", None)
    refusal = held.refusal(auditor.clock())
    if refusal is not None or held.content is None:
        return ReviewOutcome(account_id, False, f"zone {zone_id!r} cannot be approved: {refusal}", None)
    # A draft that uses no specific of its facts stays segment copy (`not_specific`) once approved.
    personal = held.content.rung is Rung.PERSONAL
    types = parse_reason(held.content.reason).detail
    content = (
        held.content.model_copy(update={"reason": zone_reason(ZoneReason.APPROVED, types)})
        if personal
        else held.content
    )
    zones = tuple(content if z.zone_id == zone_id else z for z in current.zones)
    ends = [t for t in (current.valid_until, held.valid_until) if t is not None]
    revised = current.model_copy(
        update={
            "zones": zones,
            "mode": _mode(sum(1 for z in zones if z.rung is Rung.PERSONAL), len(zones)),
            "valid_until": min(ends) if ends else None,
        }
    )
    result = store.revise(revised, expected_version=current.version)
    if result is None or not result.changed:
        return ReviewOutcome(account_id, False, "changed meanwhile; review the current version", result)
    _record_approval(client, tenant, campaign, account_id, record, content, result.version)
    where = (tenant, campaign, account_id)
    _log_decision(
        client,
        auditor,
        AuditAction.APPROVE,
        where,
        result.version,
        reason,
        f"held draft of zone {zone_id} ({held.layer.value}) from v{current.version}",
    )
    now = "now personal" if personal else "now its approved draft, as segment copy (not specific)"
    return ReviewOutcome(account_id, True, f"v{result.version}: zone {zone_id} is {now}", result)


def _record_approval(
    client: redis.Redis,
    tenant: str,
    campaign: str,
    account_id: str,
    record: dict[str, Any],
    content: ZoneContent,
    version: int,
) -> None:
    """The explain record says what is served now; the account leaves the held queue when done.

    The held layer's note stays on the zone: why it was held is part of why it is served.
    """
    for zone in record.get("zones") or ():
        if zone.get("zone_id") == content.zone_id:
            zone.update(
                rung=content.rung.value,
                reason=content.reason,
                text=content.text,
                href=content.href,
                facts=[f.fact_id for f in content.facts],
                held=None,
            )
    record["version"] = version
    key = keys.explain_key(tenant, campaign, account_id)
    pipe = client.pipeline(transaction=True)
    pipe.set(key, json.dumps(record).encode(), keepttl=True)
    if not held_drafts(record):
        pipe.zrem(keys.review_held_key(tenant, campaign), account_id)
    pipe.execute()
