"""`welcomemat sync`: fold each tenant's engagement events into the shared account records.

One consumer group (`keys.SYNC_CONSUMER_GROUP`) per tenant events stream; any number of
`welcomemat sync` processes share it. Reading, claiming back, counting deliveries,
dead-lettering, waiting out Redis and stopping are the core's one consumer loop
(`welcomemat.streams.consumer`); this module folds. Delivery is at-least-once; what keeps counts exact:

- a batch of events is folded by one atomic Lua call (`welcomemat.records.fold.fold_events`):
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

With a `SellerAlertProducer`, each folded batch also queues the seller alerts it calls for
(`outbound.seller_alerts`: tier-1 engagement, one per account, campaign and day).

Events without an account (anonymous visitors), of types the records do not count, from
before an erasure of their account or contact (`welcomemat.records.erasure`: a renderer had them
queued when the erasure ran), and clicks on a zone that is not one of the campaign's (pages'
zones in its published config, reread every few seconds; older events written before the
renderer refused such beacons) are acknowledged without a fold. When the config is gone or
does not decode, the zone cannot be judged and the click is folded as written. Facts shown
come from the zone set of the version an event names (the current or the previous one); if
neither has that version any more the version is recorded without facts.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from outbound.seller_alerts import SellerAlertProducer
from welcomemat import keys
from welcomemat.campaign.config import decode_campaign_config
from welcomemat.errors import StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.records.account_records import cited_facts
from welcomemat.records.event_entries import KINDS, ParsedEvent, PoisonEvent, parse_entry, parse_event
from welcomemat.records.fold import FOLD_LUA, EventFold, fold_events
from welcomemat.replies import reply_text
from welcomemat.storage.redis_client import REDIS_OUTAGE_ERRORS
from welcomemat.streams.consumer import ConsumerProcess, StreamConsumer
from welcomemat.streams.groups import add_dead_letter_copy
from welcomemat.streams.groups import ensure_group as ensure_stream_group
from welcomemat.streams.handler import (
    ACK,
    DEFAULT_BLOCK_MS,
    DEFAULT_CLAIM_IDLE_MS,
    ConsumerOptions,
    ConsumerReport,
    Delivery,
    Outcome,
    Stream,
    StreamHandler,
    retry,
)
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import CitedFact

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
    "events_stream",
    "parse_event",
]

# Where the lines go when the caller passes no `log` (the commands pass their own, on stderr).
_logger = logging.getLogger(__name__)

DEFAULT_BATCH = 200  # entries per read
# Events per fold (one Lua call, atomic: Redis serves nothing else meanwhile). An entry may hold a
# batch of hundreds of events, so a read of 200 entries is folded in calls of this many.
FOLD_CHUNK = 200
DEFAULT_MAX_DELIVERIES = 5
_TENANTS_REFRESH_S = 5.0  # how often a sync without --tenant rereads the campaigns index
_ZONES_REFRESH_S = 5.0  # how often a campaign's zones are reread from its published config
_BACKOFF_MAX_S = 5.0
_ONCE_OUTAGE_MAX_S = 60.0  # how long Redis may stay unreachable before `once` gives up


def default_consumer_name() -> str:
    """`host:pid`: stable for the process, distinct across processes and machines."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class SyncOptions:
    name: str
    tenants: tuple[str, ...] = ()  # empty: every tenant in the campaigns index
    once: bool = False
    batch: int = DEFAULT_BATCH
    block_ms: int = DEFAULT_BLOCK_MS
    # An entry unacknowledged this long sits on a dead consumer. A batch folds in
    # milliseconds, so a live consumer never comes near it.
    claim_idle_ms: int = DEFAULT_CLAIM_IDLE_MS
    max_deliveries: int = DEFAULT_MAX_DELIVERIES
    outbox: bool = False  # queue a CRM change for each record a fold changes (webhook configured)


@dataclass
class SyncStats(ConsumerReport):
    folded: int = 0  # events that changed a record
    duplicates: int = 0  # events already folded before (redelivered, or the same event id twice)
    # anonymous, a type the records do not count, older than an erasure, or a click on an unknown zone
    skipped: int = 0
    dead: list[str] = field(default_factory=list)  # "tenant entry-id: reason" of each dead-lettered entry
    # Broken events of batch entries, dead-lettered alone by the fold (the loop counts whole entries).
    dead_events: int = 0

    @property
    def dead_lettered(self) -> int:
        return self.loop.dead_lettered + self.dead_events

    @property
    def acknowledged(self) -> int:
        return self.folded + self.duplicates + self.skipped + self.dead_lettered


def events_stream(tenant: str) -> Stream:
    """The tenant's events stream as the consumer loop reads it (a log: acknowledged, not deleted)."""
    return Stream(
        key=keys.events_stream_key(tenant),
        group=keys.SYNC_CONSUMER_GROUP,
        ttl_s=keys.EVENTS_STREAM_TTL_S,
        label=f"tenant {tenant}",
        dead_letter_key=keys.events_dead_letter_key(tenant),
        scope=(tenant,),
    )


def ensure_group(client: redis.Redis, tenant: str) -> None:
    """Create the tenant's events stream and the sync group if missing (idempotent).

    From id 0: events written before the first sync are folded too.
    """
    ensure_stream_group(client, events_stream(tenant))


def discover_tenants(client: redis.Redis) -> list[str]:
    """Tenants with a published campaign (from `keys.campaigns_index_key()`), sorted."""
    raw: Iterable[Any] = client.hkeys(keys.campaigns_index_key())
    tenants = set()
    for name in raw:
        tenant = reply_text(name).partition("/")[0]
        if is_valid_id(tenant):
            tenants.add(tenant)
    return sorted(tenants)


def _shows_facts(fields: Mapping[str, str]) -> bool:
    """Personal zones were on the page: the event says so, or (no rung) its arm was personal."""
    rung = fields.get("rung")
    return rung == "personal" if rung is not None else fields.get("arm") == "personal"


class Syncer(ConsumerProcess, StreamHandler):
    """One consumer of the tenants' event streams: folds each batch, acknowledges what is done."""

    def __init__(
        self,
        client: redis.Redis,
        options: SyncOptions,
        *,
        log: Callable[[str], None] | None = None,
        progress: Callable[[SyncStats], None] | None = None,
        stop: threading.Event | None = None,
        alerts: SellerAlertProducer | None = None,
    ) -> None:
        self.client = client
        self.alerts = alerts
        self.options = options
        self.name = options.name
        self._log = log or (lambda line: _logger.info("sync %s: %s", options.name, line))
        report = progress
        self._consumer = StreamConsumer(
            client,
            self,
            ConsumerOptions(
                name=options.name,
                once=options.once,
                batch=options.batch,
                block_ms=options.block_ms,
                claim_idle_ms=options.claim_idle_ms,
                max_deliveries=options.max_deliveries,
                backoff_cap_s=_BACKOFF_MAX_S,
                once_outage_max_s=_ONCE_OUTAGE_MAX_S,
            ),
            log=self._log,
            stop=stop,
            progress=(lambda _: report(self.stats)) if report is not None else None,
        )
        self.stats = SyncStats(loop=self._consumer.stats)
        self._script = client.register_script(FOLD_LUA)
        self._store = ZoneSetStore(client)
        self._tenants: list[str] = []
        self._tenants_read_at = float("-inf")
        # (tenant, campaign) -> (read at, monotonic s; the campaign's zones, None: unknown)
        self._zones: dict[tuple[str, str], tuple[float, frozenset[str] | None]] = {}

    # -- lifecycle -----------------------------------------------------------------------------

    def run(self) -> SyncStats:
        """Fold until stopped (with `once`: until every stream is drained, then return). With
        `once`, a Redis that stays down raises its error; without it, the sync waits for Redis."""
        self._consumer.run()
        return self.stats

    @property
    def tenants_seen(self) -> list[str]:
        """The tenants the last cycle consumed (a copy: safe to read from another thread)."""
        return list(self._tenants)

    def tenants(self) -> list[str]:
        """The tenants to consume now (the campaigns index, reread every few seconds)."""
        if self.options.tenants:
            found = list(self.options.tenants)
        elif time.monotonic() - self._tenants_read_at >= _TENANTS_REFRESH_S:
            self._tenants_read_at = time.monotonic()
            found = discover_tenants(self.client)
        else:
            found = self._tenants
        self._tenants = found
        return found

    def streams(self) -> list[Stream]:
        return [events_stream(tenant) for tenant in self.tenants()]

    # -- folding -------------------------------------------------------------------------------

    def handle(self, batch: Sequence[Delivery]) -> list[Outcome]:
        """Fold a batch: an entry is acknowledged once each of its events (one, or a batch's) is
        folded, skipped or dead-lettered; an entry that does not decode, or one of whose folds
        failed, is retried (and dead-lettered whole by the loop after `max_deliveries`). A broken
        event of a batch entry that decodes is dead-lettered alone: it costs its batch nothing."""
        failed: dict[str, str] = {}
        folds: list[tuple[Delivery, EventFold, bool]] = []  # (entry, event, its page showed facts)
        poison: list[tuple[Delivery, ParsedEvent]] = []  # broken events of batch entries
        for delivery in batch:
            tenant = delivery.stream.scope[0]
            try:
                events = parse_entry(tenant, delivery.entry_id, delivery.fields)
            except PoisonEvent as exc:
                failed[delivery.entry_id] = f"PoisonEvent: {exc}"
                continue
            for parsed in events:
                event = parsed.fold
                if isinstance(event, PoisonEvent):
                    if parsed.name == delivery.entry_id:  # an entry of one event: the entry is poison
                        failed[delivery.entry_id] = f"PoisonEvent: {event}"
                    else:
                        poison.append((delivery, parsed))
                elif event is None or not self._zone_known(event):
                    self.stats.skipped += 1
                else:
                    folds.append((delivery, event, _shows_facts(parsed.values)))
        if folds:
            facts = self._facts_shown(folds)
            by_tenant: dict[str, list[tuple[Delivery, EventFold]]] = {}
            for delivery, event, _ in folds:
                shown = facts.get((event.tenant, event.campaign, event.account_id, event.zone_set_version))
                if shown:
                    event = dataclasses.replace(event, facts=shown)
                by_tenant.setdefault(event.tenant, []).append((delivery, event))
            for tenant_folds in by_tenant.values():
                for start in range(0, len(tenant_folds), FOLD_CHUNK):
                    self._fold(tenant_folds[start : start + FOLD_CHUNK], failed)
        # A retried entry is read again whole: its broken events are dead-lettered once it is done.
        done_poison = [(d, parsed) for d, parsed in poison if d.entry_id not in failed]
        if done_poison:
            self._dead_letter_events(done_poison)
        return [retry(failed[d.entry_id]) if d.entry_id in failed else ACK for d in batch]

    def _fold(self, folds: Sequence[tuple[Delivery, EventFold]], failed: dict[str, str]) -> None:
        """One Lua call folding `folds` (one tenant's); an entry whose fold failed goes in `failed`."""
        replies = fold_events(self._script, self.client, [e for _, e in folds], outbox=self.options.outbox)
        if self.alerts is not None:
            self._produce_alerts(folds, replies)
        for (delivery, _), reply in zip(folds, replies, strict=True):
            if isinstance(reply, str):
                failed.setdefault(delivery.entry_id, f"fold failed: {reply}")
            elif reply == -2:  # older than an erasure of its account or contact
                self.stats.skipped += 1
            elif reply < 0:
                self.stats.duplicates += 1
            else:
                self.stats.folded += 1

    def _dead_letter_events(self, poison: Sequence[tuple[Delivery, ParsedEvent]]) -> None:
        """Copy each broken event of a batch entry, as an entry of its own named by the event
        (`<entry id>.<index>`), with the reason, to its stream's dead-letter stream."""
        pipe = self.client.pipeline(transaction=True)
        for delivery, parsed in poison:
            fields = {k.encode(): v.encode() for k, v in parsed.values.items()}
            event = dataclasses.replace(delivery, entry_id=parsed.name, fields=fields)
            add_dead_letter_copy(pipe, event, f"PoisonEvent: {parsed.fold}", consumer=self.name)
        pipe.execute()
        for delivery, parsed in poison:
            self.stats.dead_events += 1
            self.stats.dead.append(f"{delivery.stream.scope[0]} {parsed.name}: PoisonEvent: {parsed.fold}")

    def _zone_known(self, event: EventFold) -> bool:
        """False for a click on a zone the campaign does not have (each would be a new record
        field, counted as a click); True otherwise, also when the campaign's zones are unknown."""
        if event.kind != "clicks" or event.zone is None:
            return True
        zones = self._campaign_zones(event.tenant, event.campaign)
        return zones is None or event.zone in zones

    def _campaign_zones(self, tenant: str, campaign: str) -> frozenset[str] | None:
        """The zones of the campaign's pages as published (cached a few seconds), None when unknown."""
        now = time.monotonic()
        cached = self._zones.get((tenant, campaign))
        if cached is not None and now - cached[0] < _ZONES_REFRESH_S:
            return cached[1]
        zones: frozenset[str] | None = None
        raw = self.client.get(keys.campaign_config_key(tenant, campaign))
        if raw is not None:
            try:
                stored = decode_campaign_config(tenant, campaign, raw)
                zones = frozenset(stored.campaign.page_zone_ids())
            except StoredValueError as exc:
                self._log(f"zones of {tenant}/{campaign} unknown, clicks folded as written: {exc}")
        if len(self._zones) > 10_000:  # campaign ids come from events: keep the map bounded
            self._zones.clear()
        self._zones[(tenant, campaign)] = (now, zones)
        return zones

    def _produce_alerts(
        self, folds: Sequence[tuple[Delivery, EventFold]], replies: Sequence[int | str]
    ) -> None:
        """Seller alerts for the batch's folded events: folded now or before (a consumer killed
        between fold and alert), the producer's day mark keeps it to one; never an erased
        subject's. A fault here costs alerts, never the fold: only a Redis outage retries the batch."""
        assert self.alerts is not None
        try:
            self.alerts.produce(
                [e for (_, e), r in zip(folds, replies, strict=True) if isinstance(r, int) and r != -2]
            )
        except REDIS_OUTAGE_ERRORS:
            raise
        except Exception as exc:
            self._log(f"seller alerts of this batch not made: {type(exc).__name__}: {exc}")

    def dead_lettered(self, delivery: Delivery, reason: str, reply: Any) -> None:
        self.stats.dead.append(f"{delivery.stream.scope[0]} {delivery.entry_id}: {reason}")

    def _facts_shown(
        self, folds: Sequence[tuple[Delivery, EventFold, bool]]
    ) -> dict[tuple[str, str, str, int | None], tuple[CitedFact, ...]]:
        """Cited facts per (tenant, campaign, account, version) that the batch's pages showed."""
        wanted = {
            (event.tenant, event.campaign, event.account_id, event.zone_set_version)
            for _, event, showed in folds
            if event.zone_set_version is not None and showed
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
