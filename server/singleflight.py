"""One Redis read per key at a time, however many requests miss the cache together.

A cold cache under load (a campaign email just went out) would otherwise send one read
per request for the same zone set. The shared read runs in a task of its own, so a
client that disconnects (its request task cancelled) does not cancel the read the
other requests are waiting for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["SingleFlight"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SingleFlight(Generic[K, V]):
    """Coalesces concurrent calls per key (one event loop)."""

    def __init__(self) -> None:
        self._waiting: dict[K, list[asyncio.Future[V]]] = {}
        self._flying: set[asyncio.Task[None]] = set()  # the loop holds tasks weakly

    async def run(self, key: K, fn: Callable[[], Awaitable[V]]) -> V:
        """`fn()`'s value, from the one call in flight for `key` (started here if none is)."""
        waiter: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        waiters = self._waiting.get(key)
        if waiters is not None:
            waiters.append(waiter)
        else:
            self._waiting[key] = [waiter]
            flight = asyncio.ensure_future(self._fly(key, fn))
            self._flying.add(flight)
            flight.add_done_callback(self._flying.discard)
        # Each caller awaits a future of its own, which the flight settles as its last step:
        # the caller resumes on the loop's next turn (a shielded task would take one more, and
        # a turn of a busy loop is every other connection's request), and a caller cancelled
        # (its client gone) cancels only its own future, never the read the others wait for.
        return await waiter

    async def _fly(self, key: K, fn: Callable[[], Awaitable[V]]) -> None:
        try:
            value = await fn()
        except BaseException as exc:
            for waiter in self._waiting.pop(key):
                if waiter.done():  # its caller left
                    continue
                if isinstance(exc, asyncio.CancelledError):
                    waiter.cancel()
                else:
                    waiter.set_exception(exc)
            if not isinstance(exc, Exception):  # cancelled (the loop is closing), or an exit
                raise
            return
        for waiter in self._waiting.pop(key):
            if not waiter.done():
                waiter.set_result(value)
