"""Retries, Retry-After, backoff, deadlines and the circuit breaker, on a fake clock (no real waits)."""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from welcomemat.errors import ProviderUnavailable
from welcomemat.storage.breaker import CircuitBreaker
from welcomemat.storage.resilience import Deadline, ResilientCaller, RetryableError


class FakeClock:
    """A clock that only moves when slept on (or advanced); records every sleep."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []
        self.woke_at: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.slept.append(seconds)
        self.now += seconds
        self.woke_at.append(self.now)

    def advance(self, seconds: float) -> None:
        self.now += seconds


class MaxRandom(random.Random):
    """Full jitter always at its ceiling, so the backoff bound itself is observable."""

    def uniform(self, a: float, b: float) -> float:
        return b


def make_caller(
    clock: FakeClock,
    *,
    deadline_s: float | None = None,
    threshold: int = 100,
    reset_after_s: float = 30.0,
    rng: random.Random | None = None,
    **options: float,
) -> ResilientCaller:
    breaker = CircuitBreaker(threshold, reset_after_s, clock)
    deadline = None if deadline_s is None else Deadline(deadline_s, clock)
    return ResilientCaller(
        breaker,
        deadline,
        clock=clock,
        sleep=clock.sleep,
        rng=rng if rng is not None else random.Random(0),
        **options,  # type: ignore[arg-type]
    )


def scripted(outcomes: list[Exception | str], timeouts: list[float] | None = None) -> Callable[[float], str]:
    """An attempt function that raises or returns the next scripted outcome."""
    queue = list(outcomes)

    def fn(timeout_s: float) -> str:
        if timeouts is not None:
            timeouts.append(timeout_s)
        outcome = queue.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return fn


# --- retries -------------------------------------------------------------------------------


def test_retry_then_success_counts_calls_and_retries() -> None:
    clock = FakeClock()
    caller = make_caller(clock, max_attempts=3)
    assert caller.call(scripted([RetryableError(), RetryableError(), "ok"])) == "ok"
    assert (caller.calls, caller.retries) == (3, 2)
    assert len(clock.slept) == 2
    assert caller.breaker.state == "closed"


def test_retry_after_is_honoured() -> None:
    clock = FakeClock()
    caller = make_caller(clock, retry_after_cap_s=20.0)
    assert caller.call(scripted([RetryableError(7.0), "ok"])) == "ok"
    assert clock.slept == [7.0]


def test_retry_after_is_capped() -> None:
    clock = FakeClock()
    caller = make_caller(clock, retry_after_cap_s=20.0)
    assert caller.call(scripted([RetryableError(3600.0), "ok"])) == "ok"
    assert clock.slept == [20.0]


def test_retry_after_in_the_past_means_now_and_nan_means_backoff() -> None:
    assert RetryableError(-5.0).retry_after_s == 0.0
    assert RetryableError(float("nan")).retry_after_s is None
    clock = FakeClock()
    caller = make_caller(clock)
    assert caller.call(scripted([RetryableError(-5.0), "ok"])) == "ok"
    assert clock.slept == []  # a zero wait is no sleep at all


def test_backoff_grows_exponentially_up_to_the_cap() -> None:
    clock = FakeClock()
    caller = make_caller(clock, rng=MaxRandom(), max_attempts=7, backoff_base_s=0.5, backoff_cap_s=8.0)
    with pytest.raises(ProviderUnavailable):
        caller.call(scripted([RetryableError()] * 7))
    assert clock.slept == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]


def test_backoff_is_jittered_within_its_bound() -> None:
    clock = FakeClock()
    caller = make_caller(clock, rng=random.Random(1), max_attempts=50, backoff_base_s=0.5, backoff_cap_s=8.0)
    with pytest.raises(ProviderUnavailable):
        caller.call(scripted([RetryableError()] * 50))
    assert len(clock.slept) == 49
    for attempt, wait in enumerate(clock.slept):
        assert 0 <= wait <= min(8.0, 0.5 * 2**attempt)
    assert len(set(clock.slept)) > 40  # jittered, not a fixed schedule


@pytest.mark.parametrize("max_attempts", [1, 2, 4])
def test_max_attempts_then_unavailable_chained_from_the_last_error(max_attempts: int) -> None:
    clock = FakeClock()
    caller = make_caller(clock, max_attempts=max_attempts)
    errors = [RetryableError(detail=f"503 #{i}") for i in range(max_attempts)]
    attempts = 0

    def fn(timeout_s: float) -> str:
        nonlocal attempts
        attempts += 1
        raise errors[attempts - 1]

    with pytest.raises(
        ProviderUnavailable, match=f"after {max_attempts} attempts: 503 #{max_attempts - 1}"
    ) as info:
        caller.call(fn)
    assert attempts == max_attempts
    assert info.value.__cause__ is errors[-1]
    assert (caller.calls, caller.retries) == (max_attempts, max_attempts - 1)


def test_retryable_error_message_names_its_cause() -> None:
    try:
        try:
            raise TimeoutError("read timed out")
        except TimeoutError as exc:
            raise RetryableError(2.0) from exc
    except RetryableError as err:
        assert str(err) == "read timed out (Retry-After 2s)"


def test_non_retryable_error_propagates_after_one_attempt_and_leaves_the_breaker_alone() -> None:
    clock = FakeClock()
    caller = make_caller(clock, threshold=1)
    bad = ValueError("400: invalid schema")
    with pytest.raises(ValueError) as info:
        caller.call(scripted([bad, "never"]))
    assert info.value is bad
    assert (caller.calls, caller.retries) == (1, 0)
    assert clock.slept == []
    assert caller.breaker.state == "closed"


# --- deadline ------------------------------------------------------------------------------


def test_per_call_timeout_never_exceeds_the_remaining_time() -> None:
    clock = FakeClock()
    caller = make_caller(clock, deadline_s=10.0, timeout_s=6.0, max_attempts=5, retry_after_cap_s=20.0)
    timeouts: list[float] = []

    def fn(timeout_s: float) -> str:
        timeouts.append(timeout_s)
        clock.advance(timeout_s)  # the attempt times out after exactly its budget
        raise RetryableError(0.5)

    with pytest.raises(ProviderUnavailable):
        caller.call(fn)
    assert timeouts[0] == 6.0
    assert timeouts[1] == pytest.approx(10.0 - 6.0 - 0.5)
    assert clock.now <= 1000.0 + 10.0


def test_no_sleep_past_the_deadline() -> None:
    clock = FakeClock()
    caller = make_caller(clock, deadline_s=5.0, retry_after_cap_s=20.0)
    with pytest.raises(ProviderUnavailable, match="deadline") as info:
        caller.call(scripted([RetryableError(10.0), "ok"]))
    assert clock.slept == []
    assert caller.calls == 1
    assert isinstance(info.value.__cause__, RetryableError)


def test_expired_deadline_makes_no_call() -> None:
    clock = FakeClock()
    caller = make_caller(clock, deadline_s=1.0)
    clock.advance(1.0)
    assert caller.deadline is not None and caller.deadline.expired()
    with pytest.raises(ProviderUnavailable, match="job deadline reached"):
        caller.call(scripted(["ok"]))
    assert caller.calls == 0


def test_deadline_remaining_is_never_negative() -> None:
    clock = FakeClock()
    deadline = Deadline(2.0, clock)
    assert deadline.remaining() == 2.0 and not deadline.expired()
    clock.advance(5.0)
    assert deadline.remaining() == 0.0 and deadline.expired()
    with pytest.raises(ValueError):
        Deadline(-1.0, clock)


# --- circuit breaker -----------------------------------------------------------------------


def test_breaker_opens_after_consecutive_failures_only() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(3, 30.0, clock)
    breaker.record_failure()
    breaker.record_failure()
    breaker.record_success()  # the streak is broken
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state == "closed" and breaker.allow()
    breaker.record_failure()
    assert breaker.state == "open" and not breaker.allow()
    assert breaker.openings == 1


def test_open_breaker_fails_fast_without_calling() -> None:
    clock = FakeClock()
    caller = make_caller(clock, threshold=2, max_attempts=5)
    with pytest.raises(ProviderUnavailable, match="circuit open"):
        caller.call(scripted([RetryableError(), RetryableError(), "ok"]))
    assert caller.calls == 2
    assert len(clock.slept) == 1  # no wait once our own failure opened the breaker
    called = False

    def fn(timeout_s: float) -> str:
        nonlocal called
        called = True
        return "ok"

    for _ in range(10):
        with pytest.raises(ProviderUnavailable, match="circuit open"):
            caller.call(fn)
    assert not called and caller.calls == 2
    assert caller.breaker.openings == 1


def test_half_open_probe_success_closes() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(1, 30.0, clock)
    breaker.record_failure()
    clock.advance(29.9)
    assert breaker.state == "open" and not breaker.allow()
    clock.advance(0.1)
    assert breaker.state == "half_open"
    assert breaker.allow()
    assert not breaker.allow()  # the probe is out: nobody else
    breaker.record_success()
    assert breaker.state == "closed" and breaker.allow() and breaker.allow()
    assert breaker.openings == 1


def test_half_open_probe_failure_reopens_and_counts_an_opening() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(1, 30.0, clock)
    breaker.record_failure()
    clock.advance(30.0)
    assert breaker.allow()
    breaker.record_failure()
    assert breaker.state == "open" and not breaker.allow()
    assert breaker.openings == 2
    clock.advance(29.0)
    assert not breaker.allow()  # a fresh full reset period
    clock.advance(1.0)
    assert breaker.allow()


def test_results_arriving_while_open_change_nothing() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(1, 30.0, clock)
    breaker.record_failure()
    breaker.record_success()  # a call started before the breaker opened
    breaker.record_failure()
    assert breaker.state == "open" and breaker.openings == 1


def test_probe_ending_in_a_non_retryable_error_frees_the_probe_slot() -> None:
    clock = FakeClock()
    caller = make_caller(clock, threshold=1, reset_after_s=30.0, max_attempts=1)
    with pytest.raises(ProviderUnavailable):
        caller.call(scripted([RetryableError()]))
    clock.advance(30.0)
    with pytest.raises(ValueError):
        caller.call(scripted([ValueError("400")]))
    assert caller.breaker.state == "half_open"
    assert caller.call(scripted(["ok"])) == "ok"  # a new probe may go
    assert caller.breaker.state == "closed"


def test_half_open_lets_exactly_one_concurrent_probe_through() -> None:
    clock = FakeClock()
    caller = make_caller(clock, threshold=1, reset_after_s=30.0, max_attempts=1)
    with pytest.raises(ProviderUnavailable):
        caller.call(scripted([RetryableError()]))
    clock.advance(30.0)

    threads_n = 32
    start = threading.Barrier(threads_n)
    others_done = threading.Event()
    probes = 0
    refused = 0
    lock = threading.Lock()

    def probe(timeout_s: float) -> str:
        nonlocal probes
        with lock:
            probes += 1
        # Hold the probe open until every other caller has been answered.
        assert others_done.wait(timeout=5.0)
        return "ok"

    def worker() -> None:
        nonlocal refused
        start.wait(timeout=5.0)
        try:
            caller.call(probe)
        except ProviderUnavailable:
            with lock:
                refused += 1
                if refused == threads_n - 1:
                    others_done.set()

    threads = [threading.Thread(target=worker) for _ in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10.0)
    assert (probes, refused) == (1, threads_n - 1)
    assert caller.breaker.state == "closed"
    assert caller.calls == 2


def concurrent_allows(breaker: CircuitBreaker, callers: int) -> list[bool]:
    granted: list[bool] = []
    barrier = threading.Barrier(callers)

    def ask() -> None:
        barrier.wait(timeout=5.0)
        granted.append(breaker.allow())

    threads = [threading.Thread(target=ask) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10.0)
    return granted


def test_breaker_allow_is_atomic_under_contention() -> None:
    clock = FakeClock()
    for _ in range(20):
        breaker = CircuitBreaker(1, 1.0, clock)
        breaker.record_failure()
        clock.advance(1.0)
        granted = concurrent_allows(breaker, 16)
        assert (len(granted), granted.count(True)) == (16, 1)


def test_counters_are_thread_safe() -> None:
    clock = FakeClock()
    caller = make_caller(clock, max_attempts=2)

    def flaky_once() -> Callable[[float], str]:
        return scripted([RetryableError(0.0), "ok"])

    def worker() -> None:
        for _ in range(200):
            caller.call(flaky_once())

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10.0)
    assert (caller.calls, caller.retries) == (8 * 200 * 2, 8 * 200)


def test_bad_configuration_is_refused() -> None:
    clock = FakeClock()
    with pytest.raises(ValueError):
        CircuitBreaker(0, 1.0, clock)
    with pytest.raises(ValueError):
        make_caller(clock, max_attempts=0)
    with pytest.raises(ValueError):
        make_caller(clock, timeout_s=float("nan"))
    with pytest.raises(ValueError):
        make_caller(clock, timeout_s=0.0)


# --- properties ----------------------------------------------------------------------------

outcome = st.one_of(
    st.just("ok"),
    st.just("bad"),
    st.builds(lambda after: ("retry", after), st.none() | st.floats(0, 100)),
)


@settings(max_examples=150, deadline=None)
@given(
    plan=st.lists(st.tuples(outcome, st.floats(0, 40)), min_size=1, max_size=40),
    max_attempts=st.integers(1, 6),
    budget=st.floats(0, 120),
    threshold=st.integers(1, 5),
    seed=st.integers(0, 2**16),
)
def test_attempts_and_time_stay_within_their_bounds(
    plan: list[tuple[object, float]], max_attempts: int, budget: float, threshold: int, seed: int
) -> None:
    clock = FakeClock()
    started = clock.now
    caller = make_caller(
        clock,
        deadline_s=budget,
        threshold=threshold,
        reset_after_s=10.0,
        rng=random.Random(seed),
        max_attempts=max_attempts,
        timeout_s=30.0,
    )
    assert caller.deadline is not None
    deadline = caller.deadline
    steps = itertools.cycle(plan)  # an outcome for every attempt of every call below
    attempts_this_call = 0

    def fn(timeout_s: float) -> str:
        nonlocal attempts_this_call
        attempts_this_call += 1
        assert 0 < timeout_s <= min(30.0, deadline.remaining())
        result, duration = next(steps)
        clock.advance(min(duration, timeout_s))  # a real client gives up at its timeout
        assert clock.now <= started + budget + 1e-9  # no attempt outlives the job
        if result == "bad":
            raise ValueError("400")
        if isinstance(result, tuple):
            raise RetryableError(result[1])
        return "ok"

    for _ in range(len(plan)):
        attempts_this_call = 0
        try:
            caller.call(fn)
        except (ProviderUnavailable, ValueError):
            pass
        assert attempts_this_call <= max_attempts
        clock.advance(1.0)  # time between accounts, so the breaker gets to half-open
    assert caller.calls <= len(plan) * max_attempts
    # No sleep ends past the deadline, so the sleeping alone fits in the budget.
    assert all(woke <= started + budget for woke in clock.woke_at)
    assert sum(clock.slept) <= budget
