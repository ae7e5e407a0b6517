"""An account's zone set for a request: the cache first, then one guarded Redis read.

Never raises for Redis trouble: a fault (down, slow, breaker open) or a stored value
that does not decode means "no zone set" for this request, counted, and the page serves
the fallback. Faults are not cached, so the next request after Redis recovers reads it.
"""

from __future__ import annotations

import asyncio
import logging

import redis

from server.metrics import RendererMetrics
from server.redis_guard import RedisGuard, RedisUnavailable
from server.singleflight import SingleFlight
from server.zone_cache import CacheKey, ZoneSetCache
from welcomemat.errors import StoredValueError
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import ZoneSet

__all__ = ["ZoneSetLookup", "ZoneSetReader"]

log = logging.getLogger(__name__)


class ZoneSetLookup:
    """What a request learned: the zone set (or None) and whether that came from a fault."""

    __slots__ = ("faulted", "zone_set")

    def __init__(self, zone_set: ZoneSet | None, faulted: bool = False) -> None:
        self.zone_set = zone_set
        self.faulted = faulted


_FAULT = ZoneSetLookup(None, faulted=True)


class ZoneSetReader:
    """Reads an account's published zone set for a request: the cache, else one guarded Redis read."""

    def __init__(
        self, client: redis.Redis, cache: ZoneSetCache, guard: RedisGuard, metrics: RendererMetrics
    ) -> None:
        self._store = ZoneSetStore(client)
        self._cache = cache
        self._guard = guard
        self._metrics = metrics
        self._flights: SingleFlight[CacheKey, ZoneSetLookup] = SingleFlight()
        self._refreshes: set[asyncio.Task[ZoneSetLookup]] = set()  # held: the loop keeps weak refs

    def cached(self, tenant: str, campaign: str, account: str) -> ZoneSetLookup | None:
        """The cached answer, without awaiting anything (the hot path); None on a miss."""
        key = (tenant, campaign, account)
        hit, zone_set, refresh = self._cache.lookup(key)
        if hit:
            self._metrics.pages.zone_cache["hit"] += 1
            if refresh:
                self._refresh(key)
            return ZoneSetLookup(zone_set)
        return None

    def _refresh(self, key: CacheKey) -> None:
        """Read `key` again in the background: the entry, not yet expired, is served meanwhile
        (`server.zone_cache`). A fault leaves it to expire and be read on a later miss, and so
        does a busy guard (`RedisGuard.background_room`): requests' reads come first."""
        if not self._guard.background_room:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on the event loop (nothing serves from a thread): let it expire
            return
        self._metrics.pages.zone_cache["refresh"] += 1
        task = loop.create_task(self._flights.run(key, lambda: self._fetch(key)))
        self._refreshes.add(task)
        task.add_done_callback(self._refreshed)

    def _refreshed(self, task: asyncio.Task[ZoneSetLookup]) -> None:
        self._refreshes.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("zone set refresh failed: %r", exc)

    async def get(self, tenant: str, campaign: str, account: str) -> ZoneSetLookup:
        lookup = self.cached(tenant, campaign, account)
        if lookup is not None:
            return lookup
        self._metrics.pages.zone_cache["miss"] += 1
        key = (tenant, campaign, account)
        return await self._flights.run(key, lambda: self._fetch(key))

    async def _fetch(self, key: CacheKey) -> ZoneSetLookup:
        ticket = self._cache.begin_fetch(key)
        try:
            zone_set = await self._guard.call("zone_set", lambda: self._store.get(*key))
        except RedisUnavailable:
            self._cache.abandon_fetch(key)
            return _FAULT
        except StoredValueError as exc:
            self._cache.abandon_fetch(key)
            self._metrics.stored_value_errors.inc()
            log.error("%s", exc)
            return _FAULT
        except BaseException:
            self._cache.abandon_fetch(key)
            raise
        self._cache.put(key, zone_set, ticket)
        return ZoneSetLookup(zone_set)
