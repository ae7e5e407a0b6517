"""Engagement events to the tenant's Redis Stream, off the request path.

An awaited XADD per request would cost a page most of its throughput, and a Redis outage
would make every page wait. So `EventWriter.emit` only appends to a bounded in-memory queue
(no lock, no I/O) and a background thread writes batches. A batch is one Lua call and one
stream entry per tenant (`welcomemat.records.event_entries.BATCH_FIELD`, the codec every reader
reads): the writer thread shares the GIL with the event loop, and a redis-py pipeline of one
XADD per event cost the pages a measurable share of their throughput in Python-side command
packing and reply parsing, and Redis 12-21 µs of CPU an event where an entry per batch costs it
1-2 (bench/README.md). When Redis fails, the batch goes back to the front of the queue and the
thread backs off; when the queue is full, new events are dropped and counted. At-most-once by
design: a crash loses what is queued (engagement is analytics, not money).

Every event has an `event_id` (outbound folds events idempotently by it). Server-made
events get one from `new_event_id`; beacons (`POST /v1/events`, `server.engagement.events_api`)
carry the client's, and are written with a `dedup_key`: the batch script puts the
event in the entry only if `SET dedup_key NX EX` succeeds, so a view token's view, or its click on a
zone, sent twice (or replayed from elsewhere), to any renderer process, reaches the stream
once (`keys.beacon_view_key`, under the tenant's hash tag, in the same slot as the stream).
"""

from __future__ import annotations

import enum
import itertools
import json
import logging
import os
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
from redis.exceptions import RedisError

from server.metrics import RendererMetrics
from welcomemat import keys
from welcomemat.records.event_entries import BATCH_COUNT_FIELD, BATCH_FIELD, EVENT_FIELDS
from welcomemat.security.tokens import ViewClaims

__all__ = ["EngagementEvent", "EventType", "EventWriter", "new_event_id", "token_event"]

log = logging.getLogger(__name__)

_BACKOFF_MIN_S = 0.1
_BACKOFF_MAX_S = 5.0

# The fields in the order the readers' codec lists them (`welcomemat.records.event_entries`).
_FIELDS = EVENT_FIELDS

# One stream entry per tenant and batch (`welcomemat.records.event_entries.BATCH_FIELD`: a JSON
# array of events, each the values of _FIELDS in order, null where unknown; `BATCH_COUNT_FIELD`
# beside it): Redis parses, stores and trims one entry instead of one per event (1 µs of its CPU
# an event instead of 12-21, bench/README.md). KEYS[1]: the stream, KEYS[2]: how many events it
# holds (`keys.events_held_key`). ARGV: 1 maxlen (events), 2 the stream's TTL s, 3 the events
# without a dedup key, their JSON arrays joined by commas ('' for none), 4 how many those are,
# 5 the dedup TTL s, then a (dedup key, event JSON) pair per beacon: a beacon joins the entry only
# if `SET dedup NX EX` succeeds. The rows are encoded by json.dumps in C, chunk by chunk, and
# passed as one argument (redis-py packs each argument in Python). Dedup keys are built by
# `keys.beacon_view_key` with the stream's tenant hash tag (same Cluster slot).
#
# Trimming counts events, not entries: past maxlen events, the oldest whole entries go (never the
# one just added), each by its count field. An entry's size follows the traffic (one event in a
# quiet minute, hundreds at a send's peak), so no MAXLEN in entries keeps a number of events:
# sized by the entry being added, the peak's first full batch cut a stream of quiet hours' single
# events to a few thousand entries, deleting events the sync had not read. An entry without a
# count (written before it was kept: an event, or a batch of 2026-12-04's renderers) counts as
# one, when a stream without a count starts one (XLEN) as when it goes; so a count never drifts
# below what it counted, and such a batch is held beyond maxlen until trimmed past. At most
# _TRIM_LOOK entries are looked at a call (a lowered maxlen is reached over several writes), in
# pages growing from 2, so that the usual case (one old batch out for a new one) copies one or two
# entries. When every older entry went, the count is the new entry's own (a count that drifted,
# say after a stream was deleted, is put right). Returns the number of events written (the rest
# were duplicates).
_TRIM_LOOK = 1000
_WRITE_BATCH_LUA = f"""
local function counted(fields)
  for i = 1, #fields, 2 do
    if fields[i] == '{BATCH_COUNT_FIELD}' then return tonumber(fields[i + 1]) or 1 end
  end
  return 1
end

local rows = {{}}
local count = tonumber(ARGV[4])
if count > 0 then rows[1] = ARGV[3] end
for i = 6, #ARGV, 2 do
  if redis.call('SET', ARGV[i], '1', 'NX', 'EX', ARGV[5]) then
    rows[#rows + 1] = ARGV[i + 1]
    count = count + 1
  end
end
if count == 0 then return 0 end
local events = '[' .. table.concat(rows, ',') .. ']'
local added = redis.call('XADD', KEYS[1], '*', '{BATCH_FIELD}', events, '{BATCH_COUNT_FIELD}', count)
local stored = redis.call('GET', KEYS[2])
local held = stored and tonumber(stored)
if held then held = math.max(held + count, count) else held = redis.call('XLEN', KEYS[1]) - 1 + count end
local excess = held - tonumber(ARGV[1])
if excess > 0 then
  local removed, looked, keep, start, size = 0, 0, nil, '-', 2
  while keep == nil do
    local page = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', size)
    if #page == 0 then keep = added end
    for _, entry in ipairs(page) do
      if keep == nil then
        if entry[1] == added or removed >= excess or looked >= {_TRIM_LOOK} then
          keep = entry[1]
        else
          removed = removed + counted(entry[2])
          looked = looked + 1
        end
      end
    end
    if keep == nil then
      start = '(' .. page[#page][1]
      size = math.min(size * 2, 64)
    end
  end
  if looked > 0 then redis.call('XTRIM', KEYS[1], 'MINID', keep) end
  if keep == added then held = count else held = held - removed end
end
redis.call('SET', KEYS[2], held, 'EX', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return count
"""


# Server-made event ids: a random prefix per process and a counter (unique across renderer
# processes without a random draw per page view). Reset in a forked child.
_ID_PREFIX = secrets.token_hex(6)
_ID_COUNTER = itertools.count(1)


def _reset_ids() -> None:
    global _ID_PREFIX, _ID_COUNTER
    _ID_PREFIX = secrets.token_hex(6)
    _ID_COUNTER = itertools.count(1)


os.register_at_fork(after_in_child=_reset_ids)


def new_event_id() -> str:
    """An id for a server-made event: an opaque id (`welcomemat.ids`), unique across processes."""
    return f"s{_ID_PREFIX}.{next(_ID_COUNTER):x}"


class EventType(enum.StrEnum):
    VIEW = "view"
    CLICK = "click"
    QR_SCAN = "qr_scan"


@dataclass(slots=True)
class EngagementEvent:
    """One engagement event as written to the stream (built by the server, never by a client).

    Not frozen only because a frozen dataclass's `__init__` costs several times more, once
    per page view; nothing mutates an event once it is queued.
    """

    type: EventType
    tenant: str
    campaign: str
    view_id: str
    ts_ms: int
    arm: str | None = None
    account: str | None = None
    contact: str | None = None
    zone: str | None = None
    rung: str | None = None
    zone_set_version: int | None = None
    identified_by: str | None = None
    # The copy variant of the zone set served (`welcomemat.campaign.experiments`), with its version.
    variant: str | None = None
    # The campaign page a page view was of (`landing`, `continuation`: the config's page ids);
    # None for other events and for views of a page outside the campaign (the snippet's beacons).
    page: str | None = None
    event_id: str = field(default_factory=new_event_id)
    # Set for beacons: written only if this key is new (see the module docstring).
    dedup_key: str | None = None

    def stream_entry(self) -> list[str]:
        """This event as an entry of one event: `[field, value, ...]`, unknown values left out
        (the fields each event of a batch entry reads back as)."""
        entry: list[str] = []
        for name, value in zip(_FIELDS, self._values(), strict=True):
            if value is not None:
                entry += (name, value)
        return entry

    def _values(self) -> tuple[str | None, ...]:
        """The values of _FIELDS, None where unknown: this event in a batch entry. Every value
        is a string (or None): no reader formats a number."""
        version = self.zone_set_version
        return (
            self.event_id,
            self.type,  # a StrEnum: json encodes its string value
            self.tenant,
            self.campaign,
            self.view_id,
            str(self.ts_ms),
            self.arm,
            self.account,
            self.contact,
            self.zone,
            self.rung,
            None if version is None else str(version),
            self.identified_by,
            self.variant,
            self.page,
        )


# Events serialised between two releases of the GIL: a short slice of work. A whole batch
# serialised in one go held the GIL long enough to stall every page request in flight
# (bench/README.md, "Figures behind choices in the code").
_SERIALISE_CHUNK = 50


@dataclass(slots=True)
class _TenantBatch:
    """One tenant's events of a batch, encoded: the write script's arguments."""

    plain: int = 0  # events without a dedup key
    parts: list[str] = field(default_factory=list)  # their JSON arrays, comma-joined per chunk
    beacons: list[str] = field(default_factory=list)  # dedup key, event JSON, dedup key, ...

    @property
    def count(self) -> int:
        return self.plain + len(self.beacons) // 2

    @staticmethod
    def script_keys(tenant: str) -> list[str]:
        """The write script's keys for a tenant's events (`_WRITE_BATCH_LUA`): one slot."""
        return [keys.events_stream_key(tenant), keys.events_held_key(tenant)]

    def script_args(self, maxlen: int) -> list[int | str]:
        """The write script's arguments for these events (`_WRITE_BATCH_LUA`), the stream
        trimmed to at most `maxlen` events."""
        return [
            maxlen,
            keys.EVENTS_STREAM_TTL_S,
            ",".join(self.parts),
            self.plain,
            keys.BEACON_EVENT_TTL_S,
            *self.beacons,
        ]


def _serialise(batch: list[EngagementEvent]) -> dict[str, _TenantBatch]:
    """Per tenant, the batch's events encoded, yielding the GIL between chunks."""
    by_tenant: dict[str, _TenantBatch] = {}
    for start in range(0, len(batch), _SERIALISE_CHUNK):
        if start:
            time.sleep(0)  # releases the GIL, which the event loop's thread can take if it waits
        chunk: dict[str, list[tuple[str | None, ...]]] = {}
        for event in batch[start : start + _SERIALISE_CHUNK]:
            tenant = by_tenant.get(event.tenant)
            if tenant is None:
                tenant = by_tenant[event.tenant] = _TenantBatch()
            if event.dedup_key is None:
                chunk.setdefault(event.tenant, []).append(event._values())
            else:  # a beacon: its own JSON, written only if its dedup key is new
                tenant.beacons += (event.dedup_key, json.dumps(event._values(), separators=(",", ":")))
        for name, rows in chunk.items():
            tenant = by_tenant[name]
            tenant.parts.append(json.dumps(rows, separators=(",", ":"))[1:-1])
            tenant.plain += len(rows)
    return by_tenant


def token_event(
    type: EventType,
    *,
    tenant: str,
    campaign: str,
    claims: ViewClaims,
    zone: str | None,
    ts_ms: int,
    revoked: bool,
    event_id: str | None = None,
) -> EngagementEvent:
    """The event a view token's beacon or a hosted page's CTA click writes: the token's claims,
    the account and contact left out when they were erased since (`revoked`: the event still
    counts, anonymously), and the de-duplication key that counts a view once and a click once
    per view and zone, whoever replays the token (`keys.beacon_view_key`)."""
    counted_zone = zone if type is EventType.CLICK else None
    event = EngagementEvent(
        type=type,
        tenant=tenant,
        campaign=campaign,
        view_id=claims.view_id,
        ts_ms=ts_ms,
        arm=claims.arm.value,
        account=None if revoked else claims.account,
        contact=None if revoked else claims.contact,
        zone=zone,
        rung=claims.rung,
        zone_set_version=claims.zone_set_version,
        variant=claims.variant,
        dedup_key=keys.beacon_view_key(tenant, claims.view_id, counted_zone),
    )
    if event_id is not None:
        event.event_id = event_id
    return event


class EventWriter:
    """Bounded queue + one writer thread. `emit` never blocks; `close` flushes what it can."""

    def __init__(
        self,
        client: redis.Redis,
        metrics: RendererMetrics,
        *,
        queue_max: int,
        batch_max: int,
        flush_interval_s: float,
        stream_maxlen: int,
        autostart: bool = True,
        sleep: Callable[[float], bool] | None = None,
    ) -> None:
        self._client = client
        self._metrics = metrics
        self._queue: deque[EngagementEvent] = deque()
        self._queue_max = queue_max
        self._batch_max = batch_max
        self._flush_interval_s = flush_interval_s
        self._maxlen = stream_maxlen
        self._stop = threading.Event()
        self._wait = sleep or self._stop.wait
        self._thread: threading.Thread | None = None
        self._write_batch = client.register_script(_WRITE_BATCH_LUA)
        # Start the thread on the first event (apps served without a lifespan, e.g. some tests).
        self._autostart = autostart
        self._start_lock = threading.Lock()
        self._in_flight = 0  # taken from the queue by the writer, not yet written or put back
        self.written = 0
        self.dropped = 0
        self.duplicates = 0

    @property
    def queued(self) -> int:
        """Events not yet written: waiting in the queue or in the batch being written. (The
        count errs high by one for an instant, never low, so `while w.queued` waits them out.)"""
        return len(self._queue) + self._in_flight

    def emit(self, event: EngagementEvent) -> bool:
        """Queue an event; False (counted) when the queue is full."""
        if len(self._queue) >= self._queue_max:
            self.dropped += 1
            self._metrics.events_dropped.labels("queue_full").inc()
            return False
        self._queue.append(event)  # deque.append is atomic: no lock on the request path
        if self._thread is None and self._autostart:
            self.start()
        return True

    def start(self) -> None:
        with self._start_lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="wm-events", daemon=True)
                self._thread.start()

    def close(self, timeout_s: float = 2.0) -> None:
        """Stop the thread after a last flush attempt (bounded by `timeout_s`)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread.is_alive():
            thread.join(timeout_s)

    def flush_once(self) -> int:
        """Write one batch now; the number of events handled (written, or found to be
        duplicates). Raises RedisError (batch re-queued)."""
        batch: list[EngagementEvent] = []
        while self._queue and len(batch) < self._batch_max:
            self._in_flight += 1  # counted before it leaves the queue: `queued` never dips to 0
            batch.append(self._queue.popleft())
        if not batch:
            return 0
        try:
            return self._write(batch)
        finally:
            self._in_flight = 0

    def _write(self, batch: list[EngagementEvent]) -> int:
        by_tenant = _serialise(batch)
        written: set[str] = set()
        duplicates = 0
        try:
            # One call per tenant: a stream key of each tenant's slot (valid on Redis Cluster).
            for tenant, encoded in by_tenant.items():
                added = self._write_batch(
                    keys=encoded.script_keys(tenant), args=encoded.script_args(self._maxlen)
                )
                duplicates += encoded.count - int(added)
                written.add(tenant)
        except (RedisError, OSError):
            # Put back what was not written, in order, as far as the queue has room.
            unwritten = [e for e in batch if e.tenant not in written]
            room = self._queue_max - len(self._queue)
            keep = unwritten[:room] if room > 0 else []
            self._queue.extendleft(reversed(keep))
            lost = len(unwritten) - len(keep)
            if lost:
                self.dropped += lost
                self._metrics.events_dropped.labels("write_failed").inc(lost)
            self._count_written(len(batch) - len(unwritten), duplicates)
            raise
        self._count_written(len(batch), duplicates)
        return len(batch)

    def _count_written(self, handled: int, duplicates: int) -> None:
        self.written += handled - duplicates
        self._metrics.events_written.inc(handled - duplicates)
        if duplicates:
            self.duplicates += duplicates
            self._metrics.events_dropped.labels("duplicate").inc(duplicates)

    def _run(self) -> None:
        backoff = _BACKOFF_MIN_S
        while True:
            stopping = self._stop.is_set()
            try:
                while self.flush_once() >= self._batch_max:
                    pass  # a full batch: there may be more right away
                backoff = _BACKOFF_MIN_S
            except (RedisError, OSError) as exc:
                if stopping:
                    log.warning("events: %d not written at shutdown (%s)", len(self._queue), exc)
                    return
                log.info("events: Redis write failed (%s); retrying in %.1f s", exc, backoff)
                self._wait(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX_S)
                continue
            if stopping:
                return
            self._wait(self._flush_interval_s)
