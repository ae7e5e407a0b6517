"""The circuit breaker and the guard's budget."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from server.redis_guard import RedisGuard, RedisUnavailable
from welcomemat.errors import StoredValueError
from welcomemat.storage.breaker import CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_breaker_opens_after_consecutive_failures_and_probes_once() -> None:
    clock = Clock()
    breaker = CircuitBreaker(3, 2.0, clock=clock)
    for _ in range(2):
        assert breaker.allow()
        breaker.record_failure()
    assert breaker.state == "closed"
    assert breaker.allow()
    breaker.record_failure()
    assert breaker.state == "open" and not breaker.allow()
    clock.now = 2.0
    assert breaker.allow()  # the probe
    assert not breaker.allow()  # only one
    breaker.record_failure()
    assert breaker.state == "open" and breaker.openings == 2
    clock.now = 4.0
    assert breaker.allow()
    breaker.record_success()
    assert breaker.state == "closed" and breaker.allow()


def test_success_resets_the_count() -> None:
    breaker = CircuitBreaker(2, 1.0)
    breaker.record_failure()
    breaker.record_success()
    breaker.record_failure()
    assert breaker.state == "closed"


def run(coro: object) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


def test_guard_turns_faults_and_slowness_into_unavailable() -> None:
    faults: list[tuple[str, str]] = []
    guard = RedisGuard(
        timeout_s=0.05,
        breaker=CircuitBreaker(2, 60),
        threads=4,
        on_fault=lambda op, kind: faults.append((op, kind)),
    )

    def boom() -> None:
        raise RedisConnectionError("refused")

    with pytest.raises(RedisUnavailable) as error:
        run(guard.call("get", boom))
    assert error.value.kind == "error"
    # A call that would hang until released: the guard answers "timeout" without waiting for
    # it (had it waited, the call would have returned True instead of raising).
    hung = threading.Event()
    try:
        with pytest.raises(RedisUnavailable) as error:
            run(guard.call("get", lambda: hung.wait(30)))
    finally:
        hung.set()
    assert error.value.kind == "timeout"
    with pytest.raises(RedisUnavailable) as error:
        run(guard.call("get", lambda: 1))
    assert error.value.kind == "short_circuit"
    assert faults == [("get", "error"), ("get", "timeout"), ("get", "short_circuit")]


def test_a_bad_value_is_not_a_redis_fault() -> None:
    breaker = CircuitBreaker(1, 60)
    guard = RedisGuard(timeout_s=1, breaker=breaker, threads=1)

    def bad() -> None:
        raise StoredValueError("k", "nope")

    with pytest.raises(StoredValueError):
        run(guard.call("get", bad))
    assert breaker.state == "closed"
    assert run(guard.call("get", lambda: 42)) == 42


def test_a_hung_redis_holds_at_most_the_guards_threads_and_queued_calls_never_run() -> None:
    """Every call past its budget gets "timeout"; the hung calls occupy only `threads` threads,
    and a call that waited in the queue for one is dropped unrun, not run after its request
    has gone (it would only add to the hung server's load)."""
    guard = RedisGuard(timeout_s=0.05, breaker=CircuitBreaker(100, 60), threads=2)
    hung = threading.Event()
    ran_on: set[int] = set()

    def read() -> None:
        ran_on.add(threading.get_ident())
        hung.wait(30)

    async def main() -> list[BaseException | None]:
        return await asyncio.gather(*(guard.call("get", read) for _ in range(6)), return_exceptions=True)

    try:
        outcomes = run(main())
        assert not guard.background_room  # both threads still held by the hung calls
    finally:
        hung.set()
    assert all(isinstance(o, RedisUnavailable) and o.kind == "timeout" for o in outcomes)
    deadline = time.monotonic() + 10
    while not guard.background_room and time.monotonic() < deadline:
        time.sleep(0.01)
    assert guard.background_room  # the threads came back once the hung calls ended
    assert len(ran_on) == 2  # two threads ran the first two calls; the four queued never ran
    assert run(guard.call("get", lambda: "answered")) == "answered"
