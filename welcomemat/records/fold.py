"""Folding engagement events into the shared account records: one atomic Lua step a batch.

`welcomemat sync` (and the tests that play its part) folds each event into its account's
record (`welcomemat.records.account_records`, whose hash layout this step writes): mark the event seen,
update the per-campaign and per-contact counters and "last" values, queue the CRM change,
all in the tenant's hash slot. A fold is order-independent: first/last are min/max,
counters add, and "last" values (arm, version and facts) belong to the event with the
greatest (timestamp, event id), so any permutation of the same events leaves the same
record. Idempotency comes from the seen marker set in the same step: per view for a view
and per view and zone for a click (`keys.view_seen_key`: a view token replayed from any number
of addresses, or the same click sent again, counts once), per event otherwise
(`keys.event_seen_key`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import redis

from welcomemat import keys
from welcomemat.ids import is_valid_id, is_view_id
from welcomemat.records.erasure import account_field, contact_field
from welcomemat.replies import reply_text
from welcomemat.zones.zoneset import CitedFact

__all__ = ["FOLD_LUA", "EventFold", "FoldKind", "fold_events"]

# Width of the zero-padded timestamp in an order key: Unix ms fit in 15 digits until year 33658.
_TS_DIGITS = 15
# The counter an event adds to: a page view, a CTA click, a QR scan.
FoldKind = Literal["views", "clicks", "qr"]


@dataclass(frozen=True)
class EventFold:
    """One engagement event, as the fold needs it (ids already checked by the caller's boundary)."""

    tenant: str
    account_id: str
    campaign: str
    kind: FoldKind
    ts_ms: int
    event_id: str  # what makes the fold idempotent: the event's id, else its stream entry id
    arm: str | None = None
    contact: str | None = None
    zone: str | None = None
    zone_set_version: int | None = None
    # The cited facts shown with `zone_set_version` (empty: none shown, or the version is gone).
    facts: Sequence[CitedFact] = ()
    # The copy variant of `zone_set_version`, as the event carries it.
    variant: str | None = None
    # The campaign page a view was of (None: another event, or a view written before views named it).
    page: str | None = None
    # The view the event belongs to (None: unknown): a view or a click counts once per view (and zone).
    view_id: str | None = None

    def __post_init__(self) -> None:
        for name in ("tenant", "account_id", "campaign", "event_id"):
            if not is_valid_id(getattr(self, name)):
                raise ValueError(f"EventFold.{name} is not a valid id: {getattr(self, name)!r}")
        for name in ("contact", "zone", "arm", "variant", "page"):
            value = getattr(self, name)
            if value is not None and not is_valid_id(value):
                raise ValueError(f"EventFold.{name} is not a valid id: {value!r}")
        if self.view_id is not None and not is_view_id(self.view_id):
            raise ValueError(f"EventFold.view_id is not a valid view id: {self.view_id!r}")
        if self.ts_ms < 0 or self.ts_ms >= 10**_TS_DIGITS:
            raise ValueError(f"EventFold.ts_ms out of range: {self.ts_ms}")


# One call folds a batch: redis-py packs and parses every command in Python, and one
# command per event cost more than the fold itself; one call with the batch as one JSON
# argument costs a fraction. Every key is declared (3 per event, all in the tenant's slot).
# KEYS: per event i, 3i-2 seen marker, 3i-1 record, 3i CRM outbox stream; last, the tenant's
# erasure list (`welcomemat.records.erasure`).
# ARGV: 1 seen TTL s, 2 record TTL s, 3 outbox TTL s ("0": no webhook), 4 now ms, 5 the events:
# a JSON array of [campaign field prefix, contact field prefix ("" none), counter name,
# event ms, order key, arm, zone, version ("" none), facts JSON, account id, the account's and the
# contact's fields in the erasure list ("" none), copy variant of the version ("" none)].
# Returns one reply per event: -1 folded before, -2 older than an erasure of its account or
# contact (never folded), the record's new revision, or an error text.
# Each event is its own step inside pcall: an error (e.g. a record key holding another type
# fails at its first read) costs that event only, and its seen marker, written last, stays
# unset, so a retry finds it unfolded.
FOLD_LUA = """
local seen_ttl, rec_ttl, outbox_ttl, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local erased = KEYS[#KEYS]
local function revoked_before(name)
  if name == '' then return nil end
  local raw = redis.call('HGET', erased, name)
  if not raw then return nil end
  local ok, mark = pcall(cjson.decode, raw)
  if ok and type(mark) == 'table' then return tonumber(mark['revoke_before']) end
  return nil
end
local function fold(i, ev)
  local seen, rec = KEYS[3 * i - 2], KEYS[3 * i - 1]
  if redis.call('EXISTS', seen) == 1 then return -1 end
  local e, p, counter, ts_text, order = ev[1], ev[2], ev[3], ev[4], ev[5]
  local ts = tonumber(ts_text)
  for _, name in ipairs({ev[11], ev[12]}) do
    local before = revoked_before(name)
    if before and ts < before * 1000 then return -2 end
  end
  -- One read of every field the fold compares against, one write of what changes.
  local cur = redis.call('HMGET', rec, e .. 'first', e .. 'last', e .. 'arm_at', e .. 'ver_at',
    'updated_ms', p .. 'first', p .. 'last')
  local set = {}
  local function put(field, value) set[#set + 1] = field; set[#set + 1] = value end
  local first, last = tonumber(cur[1]), tonumber(cur[2])
  if not first or ts < first then put(e .. 'first', ts_text) end
  if not last or ts > last then put(e .. 'last', ts_text) end
  if ev[6] ~= '' and ((not cur[3]) or order > cur[3]) then
    put(e .. 'arm', ev[6]); put(e .. 'arm_at', order)
  end
  if ev[8] ~= '' and ((not cur[4]) or order > cur[4]) then
    put(e .. 'ver', ev[8]); put(e .. 'facts', ev[9]); put(e .. 'ver_at', order)
    put(e .. 'variant', ev[13] or '')
  end
  local updated = tonumber(cur[5])
  if not updated or now > updated then put('updated_ms', ARGV[4]) end
  if p ~= '' then
    local pfirst, plast = tonumber(cur[6]), tonumber(cur[7])
    if not pfirst or ts < pfirst then put(p .. 'first', ts_text) end
    if not plast or ts > plast then put(p .. 'last', ts_text) end
    redis.call('HINCRBY', rec, p .. counter, 1)
  end
  if #set > 0 then redis.call('HSET', rec, unpack(set)) end
  redis.call('HINCRBY', rec, e .. counter, 1)
  if ev[7] ~= '' and counter == 'clicks' then redis.call('HINCRBY', rec, e .. 'zone:' .. ev[7], 1) end
  local rev = redis.call('HINCRBY', rec, 'rev', 1)
  redis.call('EXPIRE', rec, rec_ttl)
  if outbox_ttl ~= '0' and redis.call('HSETNX', rec, 'wh_pending', '1') == 1 then
    redis.call('XADD', KEYS[3 * i], '*', 'account', ev[10], 'rev', rev)
    redis.call('EXPIRE', KEYS[3 * i], outbox_ttl)
  end
  redis.call('SET', seen, '1', 'EX', seen_ttl)
  return rev
end
local replies = {}
for i, ev in ipairs(cjson.decode(ARGV[5])) do
  local ok, reply = pcall(fold, i, ev)
  if ok then replies[i] = reply else replies[i] = tostring(reply) end
end
return replies
"""


def _seen_key(event: EventFold) -> str:
    """What makes the event count once: its view (a view), its view and zone (a click), else its id."""
    if event.view_id is not None and event.kind == "views":
        return keys.view_seen_key(event.tenant, event.view_id, None)
    if event.view_id is not None and event.kind == "clicks" and event.zone is not None:
        return keys.view_seen_key(event.tenant, event.view_id, event.zone)
    return keys.event_seen_key(event.tenant, event.event_id)


def fold_events(
    script: Any,
    client: redis.Redis,
    events: Sequence[EventFold],
    *,
    outbox: bool,
    now_ms: int | None = None,
) -> list[int | str]:
    """Fold a batch of one tenant's events, atomically and idempotently; one reply per event.

    A reply is the record's new revision (the event changed it), -1 (folded before, or its view,
    or its view's click on that zone, was: nothing changed), -2 (older than an erasure of its
    account or contact: never folded) or the error
    text of an event that could not be folded (left unfolded).
    `script` is `client.register_script(FOLD_LUA)`. With `outbox`, a fold that changes a
    record queues a CRM change on the tenant's outbox stream (one queued change per account
    at a time: the webhook sends the record as it is when it sends).
    """
    if not events:
        return []
    tenant = events[0].tenant
    if any(e.tenant != tenant for e in events):
        raise ValueError("fold_events takes events of one tenant (one hash slot)")
    outbox_key = keys.webhook_outbox_key(tenant)
    key_list: list[str] = []
    rows: list[list[str]] = []
    for event in events:
        key_list += [
            _seen_key(event),
            keys.account_record_key(tenant, event.account_id),
            outbox_key,
        ]
        rows.append(
            [
                f"e:{event.campaign}:",
                f"p:{event.campaign}:{event.contact}:" if event.contact else "",
                event.kind,
                str(event.ts_ms),
                f"{event.ts_ms:0{_TS_DIGITS}d}|{event.event_id}",
                event.arm or "",
                event.zone or "",
                "" if event.zone_set_version is None else str(event.zone_set_version),
                json.dumps([f.model_dump(mode="json") for f in event.facts], separators=(",", ":")),
                event.account_id,
                account_field(event.account_id),
                contact_field(event.account_id, event.contact) if event.contact else "",
                event.variant or "",
            ]
        )
    key_list.append(keys.erasures_key(tenant))
    replies = script(
        keys=key_list,
        args=[
            keys.EVENT_SEEN_TTL_S,
            keys.ACCOUNT_RECORD_TTL_S,
            keys.WEBHOOK_OUTBOX_TTL_S if outbox else 0,
            now_ms if now_ms is not None else int(time.time() * 1000),
            json.dumps(rows, separators=(",", ":")),
        ],
        client=client,
    )
    return [r if isinstance(r, int) else reply_text(r) for r in replies]
