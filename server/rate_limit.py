"""Per-client rate limits for beacons: a bounded in-process token bucket.

Each client (an IPv4 address, or the /64 of an IPv6 one: a single host usually holds a
whole /64) has a bucket of `burst` tokens refilled at `rate_per_s`; a beacon takes one
or is refused (429). At most `max_clients` buckets are kept; the least recently seen is
forgotten first, so memory stays bounded whatever the traffic. In-process and per
renderer: a limit against floods from one client, not an exact global quota.

Runs on the event loop only (no lock). The clock is the renderer's: time that goes
backwards refills nothing.
"""

from __future__ import annotations

import ipaddress
from collections import OrderedDict
from collections.abc import Callable

from server.ip_index import IpAddress

__all__ = ["RateLimiter", "client_key"]


def client_key(address: IpAddress | None) -> str:
    """The bucket a client shares: its IPv4 address, its IPv6 /64, or `unknown`."""
    if address is None:
        return "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class RateLimiter:
    """Token buckets per client key."""

    def __init__(
        self, *, rate_per_s: float, burst: int, max_clients: int, clock: Callable[[], float]
    ) -> None:
        if rate_per_s <= 0 or burst < 1 or max_clients < 1:
            raise ValueError("rate_per_s, burst and max_clients must be positive")
        self.rate_per_s = rate_per_s
        self.burst = float(burst)
        self._max = max_clients
        self._clock = clock
        # key -> (tokens left, when they were counted)
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def allow(self, key: str) -> bool:
        """Take a token from `key`'s bucket; False when it is empty."""
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            tokens = self.burst
            if len(self._buckets) >= self._max:
                self._buckets.popitem(last=False)
        else:
            tokens, then = bucket
            tokens = min(self.burst, tokens + max(0.0, now - then) * self.rate_per_s)
            self._buckets.move_to_end(key)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            return False
        self._buckets[key] = (tokens - 1.0, now)
        return True

    def retry_after_s(self, key: str) -> int:
        """Whole seconds until `key` has a token again (at least 1)."""
        bucket = self._buckets.get(key)
        missing = 1.0 - bucket[0] if bucket is not None else 0.0
        return max(1, int(missing / self.rate_per_s + 0.999))
