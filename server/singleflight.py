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
        self._pending: dict[K, asyncio.Future[V]] = {}

    async def run(self, key: K, fn: Callable[[], Awaitable[V]]) -> V:
        task = self._pending.get(key)
        if task is None:
            task = asyncio.ensure_future(fn())
            self._pending[key] = task
            task.add_done_callback(lambda done: self._finished(key, done))
        return await asyncio.shield(task)

    def _finished(self, key: K, done: asyncio.Future[V]) -> None:
        if self._pending.get(key) is done:
            del self._pending[key]
        if not done.cancelled():
            done.exception()  # mark retrieved: callers that left must not leave a warning behind
