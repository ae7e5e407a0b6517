"""Redis on the request path: a time budget, a bounded thread pool and a circuit breaker.

Hard invariant 5: a broken Redis must cost a page request a bounded wait and then the
fallback, never a 5xx. The store (`welcomemat.zones.store`) is synchronous, so each read runs
in a worker thread; `RedisGuard.call` waits for it at most `timeout_s` and abandons it
after that (the thread finishes on its own socket timeout). Threads come from a pool of
their own, so a hung Redis holds at most `threads` of them; a call that finds them all
taken waits in the pool's queue within its budget, and leaves it unrun when that is spent.

The call is handed to a pool thread and awaited through `asyncio.wrap_future` (what
`loop.run_in_executor` does), not anyio's `to_thread`: a read then costs the event loop two
turns (the thread's answer, the request's wake-up), where anyio's checkpoints and limiter
add two more, and each turn of a busy loop is every other connection's request first
(bench/README.md, `bench_miss_latency.py`).

After `breaker_failures` consecutive faults the breaker opens: requests stop waiting on Redis
at all and get the fallback at once. After `breaker_reset_s` one request probes; its success
closes the breaker. A value that does not decode (`StoredValueError`) is not a Redis
fault: Redis answered.

The breaker is the shared core's (`welcomemat.storage.breaker`), the same one precompute puts in
front of a model provider; here it guards reads that are never retried on the request path.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal, TypeVar

import redis
from redis.exceptions import RedisClusterException, RedisError

from welcomemat.errors import StoredValueError, StoreError
from welcomemat.storage.breaker import CircuitBreaker
from welcomemat.storage.redis_client import redis_from_url

__all__ = [
    "RedisGuard",
    "RedisUnavailable",
    "renderer_redis_client",
]

T = TypeVar("T")
FaultKind = Literal["error", "timeout", "short_circuit"]

# The renderer's own client: connects fast or not at all, and a blocked socket frees its
# thread within a second. One immediate retry on a fresh connection covers the first
# command after a Redis restart (the pooled connection is dead, the server is not).
CONNECT_TIMEOUT_S = 0.25
SOCKET_TIMEOUT_S = 1.0
HEALTH_CHECK_INTERVAL_S = 30


def renderer_redis_client(url: str) -> redis.Redis:
    """A bytes-replies client with short timeouts and no backoff, for the renderer (one
    server or a Redis Cluster, as `url` says)."""
    return redis_from_url(
        url,
        connect_timeout_s=CONNECT_TIMEOUT_S,
        socket_timeout_s=SOCKET_TIMEOUT_S,
        retries=1,
        health_check_interval_s=HEALTH_CHECK_INTERVAL_S,
    )


class RedisUnavailable(Exception):
    """Redis could not answer within the budget (or the breaker is open); serve the fallback."""

    def __init__(self, op: str, kind: FaultKind, detail: str = "") -> None:
        self.op = op
        self.kind = kind
        self.detail = detail
        super().__init__(f"Redis {op}: {kind}" + (f" ({detail})" if detail else ""))


class RedisGuard:
    """Runs blocking Redis calls for async handlers within a budget, behind a breaker."""

    def __init__(
        self,
        *,
        timeout_s: float,
        breaker: CircuitBreaker,
        threads: int,
        on_fault: Callable[[str, FaultKind], None] = lambda op, kind: None,
    ) -> None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.timeout_s = timeout_s
        self.breaker = breaker
        self._threads = threads
        # As long-lived as the guard, never shut down: an app's lifespan may run again on the
        # same state (each test client runs it), and idle threads end when the guard is dropped.
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="welcomemat-redis")
        # Calls submitted and not finished (queued, running, or abandoned and still running):
        # counted up on the event loop, down on the thread that finishes them.
        self._pending = 0
        self._pending_lock = threading.Lock()
        self._on_fault = on_fault

    @property
    def background_room(self) -> bool:
        """At least half the worker threads are free. Background reads (a zone set refreshed
        before it expires) start only then: a request's read waits for a thread within its
        budget, and must not find them all taken by work no request waits for."""
        return self._pending * 2 < self._threads

    def _finished(self, _: Future[Any]) -> None:
        with self._pending_lock:
            self._pending -= 1

    async def _in_thread(self, fn: Callable[[], T], budget: float) -> T:
        """`fn()` on a pool thread, awaited at most `budget` seconds (TimeoutError). Past the
        budget, a call still queued never runs, and one running is abandoned."""
        with self._pending_lock:
            self._pending += 1
        try:
            submitted = self._pool.submit(fn)
        except RuntimeError as exc:  # the interpreter is exiting: a fault, so the fallback
            with self._pending_lock:
                self._pending -= 1
            raise OSError("no Redis worker thread can start now") from exc
        submitted.add_done_callback(self._finished)
        async with asyncio.timeout(budget):
            return await asyncio.wrap_future(submitted)

    async def call(self, op: str, fn: Callable[[], T], *, timeout_s: float | None = None) -> T:
        """`fn()` in a worker thread. Raises `RedisUnavailable` on a Redis fault, a timeout
        or an open breaker; `StoredValueError` (Redis answered, the value is bad) passes through.
        """
        if not self.breaker.allow():
            self._on_fault(op, "short_circuit")
            raise RedisUnavailable(op, "short_circuit", "circuit breaker open")
        budget = self.timeout_s if timeout_s is None else timeout_s
        try:
            result = await self._in_thread(fn, budget)
        except TimeoutError:
            self.breaker.record_failure()
            self._on_fault(op, "timeout")
            raise RedisUnavailable(op, "timeout", f"no answer within {budget:g} s") from None
        except StoredValueError:
            self.breaker.record_success()
            raise
        except (RedisError, RedisClusterException, StoreError, OSError) as exc:
            self.breaker.record_failure()
            self._on_fault(op, "error")
            raise RedisUnavailable(op, "error", str(exc)) from exc
        except BaseException:  # says nothing about Redis's health; never hold a probe slot
            self.breaker.release()
            raise
        self.breaker.record_success()
        return result
