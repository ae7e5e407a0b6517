"""The in-process cache of zone sets: bounded LRU, short TTL, invalidated by change messages.

A cached zone set is dropped when the campaign's pub/sub channel announces a new version
of it (`invalidate`), when the subscriber had to reconnect and may have missed messages
(`clear_campaign`), and in any case after `ttl_s` (the safety net). "No zone set" is
cached too, so an unknown account does not cost a Redis read per request.

An entry read in the last part of its life (`REFRESH_AFTER` of the TTL gone) is due for a
refresh: `lookup` says so once per entry, and the reader fetches it again in the background
while requests go on being served the entry, which has not expired. So an account that keeps
being visited never makes a request wait for its expiry's re-read. That wait made the
slowest first clicks in the bench: the read runs in a worker thread, which under load waits
for the interpreter lock after each blocking call (up to the 5 ms switch interval each time),
and every request for the account joined it (130-184 ms, bench/README.md). Only accounts
nobody visits late in an entry's life expire and are read on the next request.

A read that started before an invalidation must not put the old value back after it:
`begin_fetch` hands out a ticket, and `put` refuses a value older than the version an
invalidation announced meanwhile, or fetched before its campaign was cleared.

Thread-safe: the event loop reads and fills it, the watcher threads invalidate it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from welcomemat.zones.zoneset import ZoneSet

__all__ = ["CacheKey", "ZoneSetCache"]

CacheKey = tuple[str, str, str]  # tenant, campaign, account id

# The share of an entry's TTL after which a read of it asks for a background refresh.
REFRESH_AFTER = 0.75
_CLAIMED = float("inf")  # an entry whose refresh was asked for: not asked again


@dataclass(slots=True)
class _Entry:
    zone_set: ZoneSet | None
    expires_at: float
    epoch: int
    refresh_at: float


class ZoneSetCache:
    """LRU of `CacheKey` -> zone set (or None: known to have none)."""

    def __init__(self, max_entries: int, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self._max = max_entries
        self._ttl_s = ttl_s
        self._refresh_s = ttl_s * REFRESH_AFTER
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[CacheKey, _Entry] = OrderedDict()
        self._epoch = 0
        # Bumped by every invalidation and clear: what `server.known_visitors` checks.
        self.changes = 0
        self._cleared: dict[tuple[str, str], int] = {}
        # key -> the lowest version a fetch in flight may store (0: any)
        self._inflight: dict[CacheKey, int] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: CacheKey) -> tuple[bool, ZoneSet | None]:
        """(hit, zone set). A miss is (False, None)."""
        hit, zone_set, _ = self.lookup(key)
        return hit, zone_set

    def lookup(self, key: CacheKey) -> tuple[bool, ZoneSet | None, bool]:
        """(hit, zone set, refresh): `refresh` is True for the first read of an entry past
        `REFRESH_AFTER` of its TTL; the caller then fetches it again (`begin_fetch`, `put`)
        and serves the entry meanwhile. A miss is (False, None, False)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return False, None, False
            now = self._clock()
            if entry.expires_at <= now or entry.epoch < self._cleared.get(key[:2], 0):
                del self._entries[key]
                return False, None, False
            self._entries.move_to_end(key)
            if entry.refresh_at <= now:
                entry.refresh_at = _CLAIMED  # one refresh per entry; its `put` makes a new one
                return True, entry.zone_set, True
            return True, entry.zone_set, False

    def cached_until(self, key: CacheKey, zone_set: ZoneSet | None) -> float | None:
        """When the entry for `key` expires (this cache's clock), if it holds exactly
        `zone_set` (the same object) and is still served; else None."""
        with self._lock:
            entry = self._entries.get(key)
            if (
                entry is None
                or entry.zone_set is not zone_set
                or entry.epoch < self._cleared.get(key[:2], 0)
                or entry.expires_at <= self._clock()
            ):
                return None
            return entry.expires_at

    def begin_fetch(self, key: CacheKey) -> int:
        """Call before reading Redis; pass the ticket to `put`."""
        with self._lock:
            self._inflight.setdefault(key, 0)
            return self._epoch

    def put(self, key: CacheKey, zone_set: ZoneSet | None, ticket: int) -> bool:
        """Store what a fetch read, unless an invalidation made it stale meanwhile."""
        with self._lock:
            min_version = self._inflight.pop(key, 0)
            if self._cleared.get(key[:2], 0) > ticket:
                return False
            if min_version and (zone_set is None or zone_set.version < min_version):
                return False
            now = self._clock()
            self._entries[key] = _Entry(zone_set, now + self._ttl_s, ticket, now + self._refresh_s)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
            self._drop_expired(now)
            return True

    def _drop_expired(self, now: float) -> None:
        """Drop a couple of the least recently used entries once their time is up, so memory
        follows the visitors of the last TTL rather than the size limit (caller holds the lock)."""
        for _ in range(2):
            oldest = next(iter(self._entries), None)
            if oldest is None or self._entries[oldest].expires_at > now:
                return
            del self._entries[oldest]

    def abandon_fetch(self, key: CacheKey) -> None:
        """The fetch failed: forget it was in flight."""
        with self._lock:
            self._inflight.pop(key, None)

    def invalidate(self, key: CacheKey, version: int) -> bool:
        """A change message announced `version`: drop the entry; True if one was cached."""
        with self._lock:
            self.changes += 1
            if key in self._inflight:
                self._inflight[key] = max(self._inflight[key], version)
            return self._entries.pop(key, None) is not None

    def clear_campaign(self, tenant: str, campaign: str) -> None:
        """Forget every entry of a campaign (lazily: entries older than now stop hitting)."""
        with self._lock:
            self.changes += 1
            self._epoch += 1
            self._cleared[(tenant, campaign)] = self._epoch
