"""`welcomemat sync`: fold each tenant's engagement events into the shared account records.

One consumer group (`keys.SYNC_CONSUMER_GROUP`) per tenant events stream; any number of
`welcomemat sync` processes share it. Delivery is at-least-once; what keeps counts exact:

- a batch of events is folded by one atomic Lua call (`welcomemat.records.fold_events`):
  per event it updates the record, queues the CRM change and sets the event's seen marker,
  or does nothing when the marker is already there. So an event folded twice (a consumer killed between the
  fold and its XACK, a client retrying a beacon with the same `event_id`) counts once;
- the XACK comes after the fold. On start a consumer re-reads its own pending entries
  (`XREADGROUP ... 0`); entries idle longer than `claim_idle_ms` on another consumer were
  left by a dead one and are taken over (XAUTOCLAIM);
- an entry that fails `max_deliveries` times (it does not parse, or its fold errors) is a
  poison event: copied to the tenant's dead-letter stream with the reason, acknowledged,
  reported; the rest go on;
- Redis down while following: back off (capped) and resume; never exit, never spin.
  With `once`, a Redis that stays down ends the run with a failure instead.

Events without an account (anonymous visitors) and of types the records do not count are
acknowledged without a fold. Facts shown come from the zone set of the version an event
names (the current or the previous one); if neither has that version any more the
version is recorded without facts.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from welcomemat import keys
from welcomemat.errors import StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.records import FOLD_LUA, EventFold, FoldKind, cited_facts, fold_events
from welcomemat.store import ZoneSetStore
from welcomemat.zoneset import CitedFact

__all__ = [
    "DEFAULT_BATCH",
    "DEFAULT_BLOCK_MS",
    "DEFAULT_CLAIM_IDLE_MS",
    "DEFAULT_MAX_DELIVERIES",
    "KINDS",
    "PoisonEvent",
    "SyncOptions",
    "SyncStats",
    "Syncer",
    "default_consumer_name",
    "discover_tenants",
    "ensure_group",
    "parse_event",
]

DEFAULT_BATCH = 200  # entries per read: one pipelined fold per batch
DEFAULT_BLOCK_MS = 2_000  # how long a follow-mode read waits for new events
# An entry unacknowledged this long sits on a dead consumer. A batch folds in milliseconds,
# so a live consumer never comes near it.
DEFAULT_CLAIM_IDLE_MS = 60_000
DEFAULT_MAX_DELIVERIES = 5
_TENANTS_REFRESH_S = 5.0  # how often a sync without --tenant rereads the campaigns index
_BACKOFF_MIN_S = 0.2
_BACKOFF_MAX_S = 5.0
_ONCE_REDIS_ERRORS_MAX = 8  # consecutive failed cycles before `once` gives up (~20 s of backoff)

# Event type (as the renderer writes it) -> the record counter it adds to.
KINDS: Mapping[str, FoldKind] = {"view": "views", "click": "clicks", "qr_scan": "qr"}


def default_consumer_name() -> str:
    """`host:pid`: stable for the process, distinct across processes and machines."""
    return f"{socket.gethostname()}:{os.getpid()}"


class PoisonEvent(ValueError):
    """A stream entry that can never be folded (missing or malformed field)."""


@dataclass(frozen=True)
class SyncOptions:
    name: str
    tenants: tuple[str, ...] = ()  # empty: every tenant in the campaigns index
    once: bool = False
    batch: int = DEFAULT_BATCH
    block_ms: int = DEFAULT_BLOCK_MS
    claim_idle_ms: int = DEFAULT_CLAIM_IDLE_MS
    max_deliveries: int = DEFAULT_MAX_DELIVERIES
    outbox: bool = False  # queue a CRM change for each record a fold changes (webhook configured)


@dataclass
class SyncStats:
    read: int = 0  # entries delivered to this consumer (including redeliveries)
    folded: int = 0  # events that changed a record
    duplicates: int = 0  # events already folded before (redelivered, or the same event id twice)
    skipped: int = 0  # anonymous, or a type the records do not count
    claimed: int = 0  # taken over from dead consumers
    failed_attempts: int = 0
    dead_lettered: int = 0
    redis_errors: int = 0
    dead: list[str] = field(default_factory=list)  # "tenant entry-id: reason" of each dead-lettered entry

    @property
    def acknowledged(self) -> int:
        return self.folded + self.duplicates + self.skipped + self.dead_lettered


def ensure_group(client: redis.Redis, tenant: str) -> None:
    """Create the tenant's events stream and the sync group if missing (idempotent).

    From id 0: events written before the first sync are folded too.
    """
    key = keys.events_stream_key(tenant)
    try:
        client.xgroup_create(key, keys.SYNC_CONSUMER_GROUP, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise
        return
    client.expire(key, keys.EVENTS_STREAM_TTL_S)  # MKSTREAM made a key: it needs a TTL like any other


def discover_tenants(client: redis.Redis) -> list[str]:
    """Tenants with a published campaign (from `keys.campaigns_index_key()`), sorted."""
    raw: Iterable[Any] = client.hkeys(keys.campaigns_index_key())
    tenants = set()
    for name in raw:
        tenant = _text(name).partition("/")[0]
        if is_valid_id(tenant):
            tenants.add(tenant)
    return sorted(tenants)


def parse_event(tenant: str, entry_id: str, fields: Mapping[Any, Any]) -> EventFold | None:
    """One stream entry as a fold, None when it is not one to fold, PoisonEvent when it is broken."""
    try:
        values = {_text(k): _text(v) for k, v in fields.items()}
    except (UnicodeDecodeError, TypeError) as exc:
        raise PoisonEvent(f"not UTF-8 text: {exc}") from None
    kind = KINDS.get(values.get("type", ""))
    account = values.get("account")
    if kind is None or not account:
        return None
    if values.get("tenant", tenant) != tenant:
        raise PoisonEvent(f"tenant {values.get('tenant')!r} in the stream of tenant {tenant!r}")
    # Ids are checked once, by EventFold: a bad one makes this entry poison, never a key.
    if "campaign" not in values:
        raise PoisonEvent("field 'campaign' is missing")
    try:
        ts_ms = int(values["ts"])
        version = int(values["version"]) if "version" in values else None
    except KeyError:
        raise PoisonEvent("field 'ts' is missing") from None
    except ValueError as exc:
        raise PoisonEvent(f"not a whole number: {exc}") from None
    try:
        return EventFold(
            tenant=tenant,
            account_id=account,
            campaign=values["campaign"],
            kind=kind,
            ts_ms=ts_ms,
            event_id=values.get("event_id") or entry_id,
            arm=values.get("arm"),
            contact=values.get("contact"),
            zone=values.get("zone"),
            zone_set_version=version,
        )
    except ValueError as exc:
        raise PoisonEvent(str(exc)) from None


def _shows_facts(fields: Mapping[str, str]) -> bool:
    """Personal zones were on the page: the event says so, or (no rung) its arm was personal."""
    rung = fields.get("rung")
    return rung == "personal" if rung is not None else fields.get("arm") == "personal"


@dataclass
class _Entry:
    tenant: str
    entry_id: str
    fields: Mapping[Any, Any]


class Syncer:
    """One consumer: reads, claims back, folds, acknowledges, dead-letters."""

    def __init__(
        self,
        client: redis.Redis,
        options: SyncOptions,
        *,
        log: Callable[[str], None] | None = None,
        progress: Callable[[SyncStats], None] | None = None,
    ) -> None:
        self.client = client
        self.options = options
        self.name = options.name
        self.stats = SyncStats()
        self._log = log or (lambda line: print(f"sync {options.name}: {line}", file=sys.stderr, flush=True))
        self._progress = progress
        self._stopping = threading.Event()
        self._script = client.register_script(FOLD_LUA)
        self._store = ZoneSetStore(client)
        self._tenants: list[str] = []
        self._tenants_read_at = float("-inf")
        self._grouped: set[str] = set()
        self._own_pending: set[str] = set()  # tenants whose own pending entries to re-read first
        self._claim_every_s = max(0.05, min(options.claim_idle_ms / 2000, 5.0))

    # -- lifecycle -----------------------------------------------------------------------------

    def stop(self) -> None:
        """Finish the batch in hand, then return from `run` (safe from a signal handler)."""
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def run(self) -> SyncStats:
        """Fold until stopped (with `once`: until every stream is drained, then return)."""
        last_claim = float("-inf")
        errors = 0
        while not self.stopping:
            try:
                tenants = self.tenants()
                if not tenants:
                    if self.options.once:
                        break
                    self._stopping.wait(self.options.block_ms / 1000)
                    continue
                done = 0
                for tenant in sorted(self._own_pending & set(tenants)):
                    done += self._read(tenant, "0", block_ms=None)
                if time.monotonic() - last_claim >= self._claim_every_s:
                    last_claim = time.monotonic()
                    done += sum(self._claim_idle(t) for t in tenants)
                for tenant in tenants:
                    done += self._read(tenant, ">", block_ms=None)
                if done == 0 and not self._own_pending:
                    if self.options.once:
                        if self._drained(tenants):
                            break
                        # Someone else's entries, not idle long enough to claim: wait a little.
                        self._stopping.wait(min(1.0, self._claim_every_s))
                    else:
                        wait = max(10, self.options.block_ms // len(tenants))
                        for tenant in tenants:
                            if self.stopping or self._read(tenant, ">", block_ms=wait):
                                break
                if errors:
                    self._log("Redis is back; resuming")
                errors = 0
            except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
                errors += 1
                self.stats.redis_errors += 1
                if self.options.once and errors >= _ONCE_REDIS_ERRORS_MAX:
                    raise
                wait = min(_BACKOFF_MAX_S, _BACKOFF_MIN_S * 2 ** min(errors, 10))
                if errors == 1 or errors % 10 == 0:
                    self._log(f"Redis unavailable ({exc}); retrying every {wait:.1f} s")
                self._grouped.clear()  # a restarted Redis may have lost the group: make sure again
                self._stopping.wait(wait)
        return self.stats

    @property
    def tenants_seen(self) -> list[str]:
        """The tenants the last cycle consumed (a copy: safe to read from another thread)."""
        return list(self._tenants)

    def tenants(self) -> list[str]:
        """The tenants to consume now (the campaigns index, reread every few seconds); groups ensured."""
        if self.options.tenants:
            found = list(self.options.tenants)
        elif time.monotonic() - self._tenants_read_at >= _TENANTS_REFRESH_S:
            self._tenants_read_at = time.monotonic()
            found = discover_tenants(self.client)
        else:
            found = self._tenants
        for tenant in found:
            if tenant not in self._grouped:
                ensure_group(self.client, tenant)
                self._grouped.add(tenant)
                self._own_pending.add(tenant)  # after a crash: our entries, delivered, not acknowledged
        self._tenants = found
        return found

    # -- reading -------------------------------------------------------------------------------

    def _read(self, tenant: str, start: str, *, block_ms: int | None) -> int:
        """One XREADGROUP from `start` (">" new, "0" our own pending); how many entries it handled."""
        stream = keys.events_stream_key(tenant)
        try:
            reply: Any = self.client.xreadgroup(
                keys.SYNC_CONSUMER_GROUP, self.name, {stream: start}, count=self.options.batch, block=block_ms
            )
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            ensure_group(self.client, tenant)  # the stream expired or was deleted
            return 0
        entries = [
            _Entry(tenant, _text(entry_id), fields)
            for _, messages in (reply or [])
            for entry_id, fields in messages
            if fields  # a pending entry trimmed from the stream comes back empty: nothing to fold
        ]
        if start == "0":
            trimmed = [_text(i) for _, m in (reply or []) for i, f in m if not f]
            if trimmed:
                self._acknowledge(tenant, trimmed)
            if not reply or not any(m for _, m in reply):
                self._own_pending.discard(tenant)
                return 0
        self.handle(entries)
        return len(entries)

    def _claim_idle(self, tenant: str) -> int:
        """Take over entries idle on other consumers longer than `claim_idle_ms`, and fold them."""
        stream = keys.events_stream_key(tenant)
        handled = 0
        start = "0-0"
        while not self.stopping:
            try:
                reply: Any = self.client.xautoclaim(
                    stream,
                    keys.SYNC_CONSUMER_GROUP,
                    self.name,
                    min_idle_time=self.options.claim_idle_ms,
                    start_id=start,
                    count=self.options.batch,
                )
            except redis.ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    raise
                ensure_group(self.client, tenant)
                return handled
            start = _text(reply[0])
            entries = [_Entry(tenant, _text(i), f) for i, f in reply[1] if f]
            gone = [_text(i) for i, f in reply[1] if not f]
            if gone:
                self._acknowledge(tenant, gone)
            self.stats.claimed += len(entries)
            if entries:
                self._log(f"claimed {len(entries)} entries of tenant {tenant} left by a stopped consumer")
                self.handle(entries)
                handled += len(entries)
            if start == "0-0":
                return handled
        return handled

    def _drained(self, tenants: Sequence[str]) -> bool:
        """Nothing pending in the group on any stream (the caller found nothing new to read)."""
        for tenant in tenants:
            summary: Any = self.client.xpending(keys.events_stream_key(tenant), keys.SYNC_CONSUMER_GROUP)
            if int(summary["pending"]):
                return False
        return True

    # -- folding -------------------------------------------------------------------------------

    def handle(self, entries: Sequence[_Entry]) -> None:
        """Fold a batch, acknowledge what is done; failures stay pending (or are dead-lettered)."""
        if not entries:
            return
        self.stats.read += len(entries)
        done: dict[str, list[str]] = {}
        failed: list[tuple[_Entry, str]] = []
        folds: list[tuple[_Entry, EventFold]] = []
        for entry in entries:
            try:
                event = parse_event(entry.tenant, entry.entry_id, entry.fields)
            except PoisonEvent as exc:
                failed.append((entry, f"PoisonEvent: {exc}"))
                continue
            if event is None:
                self.stats.skipped += 1
                done.setdefault(entry.tenant, []).append(entry.entry_id)
            else:
                folds.append((entry, event))
        if folds:
            facts = self._facts_shown(folds)
            by_tenant: dict[str, list[tuple[_Entry, EventFold]]] = {}
            for entry, event in folds:
                shown = facts.get((entry.tenant, event.campaign, event.account_id, event.zone_set_version))
                if shown:
                    event = dataclasses.replace(event, facts=shown)
                by_tenant.setdefault(entry.tenant, []).append((entry, event))
            for tenant_folds in by_tenant.values():
                replies = fold_events(
                    self._script, self.client, [e for _, e in tenant_folds], outbox=self.options.outbox
                )
                for (entry, _), reply in zip(tenant_folds, replies, strict=True):
                    if isinstance(reply, str):
                        failed.append((entry, f"fold failed: {reply}"))
                        continue
                    if reply < 0:
                        self.stats.duplicates += 1
                    else:
                        self.stats.folded += 1
                    done.setdefault(entry.tenant, []).append(entry.entry_id)
        for tenant, ids in done.items():
            self._acknowledge(tenant, ids)
        for entry, reason in failed:
            self._failed(entry, reason)
        if self._progress is not None:
            self._progress(self.stats)

    def _facts_shown(
        self, folds: Sequence[tuple[_Entry, EventFold]]
    ) -> dict[tuple[str, str, str, int | None], tuple[CitedFact, ...]]:
        """Cited facts per (tenant, campaign, account, version) that the batch's pages showed."""
        wanted = {
            (entry.tenant, event.campaign, event.account_id, event.zone_set_version)
            for entry, event in folds
            if event.zone_set_version is not None and _shows_facts(_text_fields(entry.fields))
        }
        found: dict[tuple[str, str, str, int | None], tuple[CitedFact, ...]] = {}
        for tenant, campaign, account, version in sorted(wanted, key=str):
            for read in (self._store.get, self._store.get_previous):
                try:
                    zone_set = read(tenant, campaign, account)
                except StoredValueError as exc:
                    self._log(f"zone set of {tenant}/{campaign}/{account} unreadable: {exc}")
                    continue
                if zone_set is not None and zone_set.version == version:
                    found[(tenant, campaign, account, version)] = tuple(cited_facts(zone_set))
                    break
        return found

    def _acknowledge(self, tenant: str, entry_ids: Sequence[str]) -> None:
        self.client.xack(keys.events_stream_key(tenant), keys.SYNC_CONSUMER_GROUP, *entry_ids)

    def _failed(self, entry: _Entry, reason: str) -> None:
        self.stats.failed_attempts += 1
        self._own_pending.add(entry.tenant)
        deliveries = self._deliveries(entry)
        if deliveries >= self.options.max_deliveries:
            self._dead_letter(entry, reason, deliveries)
        else:
            self._log(
                f"entry {entry.entry_id} of tenant {entry.tenant} failed "
                f"(delivery {deliveries} of {self.options.max_deliveries}): {reason}"
            )

    def _deliveries(self, entry: _Entry) -> int:
        rows: Any = self.client.xpending_range(
            keys.events_stream_key(entry.tenant),
            keys.SYNC_CONSUMER_GROUP,
            min=entry.entry_id,
            max=entry.entry_id,
            count=1,
        )
        return int(rows[0]["times_delivered"]) if rows else 1

    def _dead_letter(self, entry: _Entry, reason: str, deliveries: int) -> None:
        """Copy the entry with the reason to the dead-letter stream and acknowledge it, in one step."""
        dead_key = keys.events_dead_letter_key(entry.tenant)
        fields: dict[Any, Any] = {
            **entry.fields,
            "source_id": entry.entry_id,
            "error": reason,
            "deliveries": str(deliveries),
            "consumer": self.name,
            "dead_at_ms": str(int(time.time() * 1000)),
        }
        pipe = self.client.pipeline(transaction=True)  # both keys in the tenant's slot
        pipe.xadd(dead_key, fields)
        pipe.expire(dead_key, keys.DEAD_LETTER_TTL_S)
        pipe.xack(keys.events_stream_key(entry.tenant), keys.SYNC_CONSUMER_GROUP, entry.entry_id)
        pipe.execute()
        self.stats.dead_lettered += 1
        self.stats.dead.append(f"{entry.tenant} {entry.entry_id}: {reason}")
        self._log(
            f"entry {entry.entry_id} of tenant {entry.tenant} moved to {dead_key} "
            f"after {deliveries} deliveries: {reason}"
        )


def _text_fields(fields: Mapping[Any, Any]) -> dict[str, str]:
    try:
        return {_text(k): _text(v) for k, v in fields.items()}
    except (UnicodeDecodeError, TypeError):
        return {}


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return value
    raise TypeError(f"unexpected Redis reply type {type(value).__name__}")
