"""Calling a remote service without letting it take the job down: one retry layer, a breaker, deadlines.

Used for precompute's model calls and for the CRM webhook (`outbound.webhook`), so both retry,
back off and give up (`welcomemat.errors.ProviderUnavailable`) the same way.

A precompute run makes one model call per account and page, often hundreds at once. A
provider that is slow, rate-limited or down must cost the run a bounded amount of time and
calls, and the accounts it cannot serve get the fallback (and are journalled for `--resume`).

- One retry layer only. Retries stacked in two layers multiply (3 x 3 = 9 calls per attempt)
  and hide from the run report; so the `openai` client is built with `max_retries=0` and
  every attempt goes through `ResilientCaller`, which counts it exactly once (`calls`,
  `retries`).
- The wrapped call raises `RetryableError` for faults worth retrying (429, 5xx, timeouts,
  connection errors), carrying the server's Retry-After if it sent one. Retry-After is
  honoured, up to `retry_after_cap_s`: a server asking for minutes must not stall the job.
  Without it we back off exponentially with full jitter (a uniform wait in
  `[0, min(backoff_cap_s, backoff_base_s * 2**attempt)]`), so many workers failing together
  do not come back in lockstep.
- Any other exception means the provider answered (a 400, a refusal, bad credentials): it is
  not retried here and passes through untouched. It says nothing about the provider being
  overloaded, so the breaker records neither a failure nor a success for it.
- Each attempt gets a timeout of `min(timeout_s, deadline.remaining())`: no single call can
  outlive the whole job's deadline, and no backoff sleep runs past it either (we give up
  instead of sleeping into a deadline we cannot meet).
- A circuit breaker (`welcomemat.storage.breaker`) shared by all of a provider's callers stops calling
  it after
  `failure_threshold` consecutive retryable failures: the remaining accounts get
  `ProviderUnavailable` at once (hence the fallback) instead of each spending its retries.
  After `reset_after_s` one caller is let through as a probe; its success closes the
  breaker, its failure opens it again.

Everything that waits or reads time takes an injectable `clock`, `sleep` and `rng`, so the
tests run the whole state machine instantly on a fake clock.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from welcomemat.errors import ProviderUnavailable
from welcomemat.storage.breaker import CircuitBreaker

__all__ = ["Deadline", "ResilientCaller", "RetryableError"]

T = TypeVar("T")

# Below this much time left an attempt cannot do useful work (a model call needs at least a
# round trip), so we report the deadline instead of starting a call doomed to time out.
MIN_ATTEMPT_S = 0.05
# 2**32 x any sane base is far past any cap; clamping keeps `2.0**attempt` from overflowing.
_MAX_BACKOFF_EXPONENT = 32


class RetryableError(Exception):
    """A fault worth another attempt (429, 5xx, timeout, connection error).

    `retry_after_s` is the server's Retry-After in seconds, if it sent one. A value in the
    past (negative) means "now"; a value that is not a number is ignored (backoff applies).
    Raise it `from` the original exception: its message then names that cause.
    """

    def __init__(self, retry_after_s: float | None = None, *, detail: str = "") -> None:
        if retry_after_s is not None and math.isnan(retry_after_s):
            retry_after_s = None
        elif retry_after_s is not None:
            retry_after_s = max(0.0, retry_after_s)
        super().__init__(retry_after_s, detail)
        self.retry_after_s = retry_after_s
        self.detail = detail

    def __str__(self) -> str:
        what = self.detail or (str(self.__cause__) if self.__cause__ else "") or "retryable fault"
        if self.retry_after_s is not None:
            return f"{what} (Retry-After {self.retry_after_s:g}s)"
        return what


class Deadline:
    """The whole job's deadline, `seconds` from construction on `clock` (monotonic by default)."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not seconds >= 0:  # also rejects NaN
            raise ValueError(f"deadline must be >= 0 seconds, got {seconds!r}")
        self.seconds = seconds
        self._clock = clock
        self._ends_at = clock() + seconds

    def remaining(self) -> float:
        """Seconds left, never negative."""
        return max(0.0, self._ends_at - self._clock())

    def expired(self) -> bool:
        return self.remaining() <= 0.0


class ResilientCaller:
    """Runs one logical call as up to `max_attempts` attempts, within the breaker and deadline.

    Thread-safe: one caller (and one breaker) is shared by all of a provider's workers.
    `calls` counts attempts made; `retries` counts the attempts after a call's first.
    """

    def __init__(
        self,
        breaker: CircuitBreaker,
        deadline: Deadline | None = None,
        *,
        max_attempts: int = 3,
        timeout_s: float = 30.0,
        retry_after_cap_s: float = 20.0,
        backoff_base_s: float = 0.5,
        backoff_cap_s: float = 8.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        for name, value in (
            ("retry_after_cap_s", retry_after_cap_s),
            ("backoff_base_s", backoff_base_s),
            ("backoff_cap_s", backoff_cap_s),
        ):
            if not value >= 0:
                raise ValueError(f"{name} must be >= 0, got {value!r}")
        self.breaker = breaker
        self.deadline = deadline
        self.max_attempts = max_attempts
        self.timeout_s = timeout_s
        self.retry_after_cap_s = retry_after_cap_s
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        # Time is read through the deadline and the breaker, each built on its own clock; this
        # one is accepted so a test can hand the same fake clock to all three constructors.
        self._clock = clock
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()
        self._lock = threading.Lock()
        self._calls = 0
        self._retries = 0

    @property
    def calls(self) -> int:
        with self._lock:
            return self._calls

    @property
    def retries(self) -> int:
        with self._lock:
            return self._retries

    def call(self, fn: Callable[[float], T]) -> T:
        """`fn(timeout_s)` is one attempt; returns its result or raises ProviderUnavailable."""
        last_error: RetryableError | None = None
        for attempt in range(self.max_attempts):
            # Deadline before breaker: a half-open probe slot must not be taken by a call
            # that then gives up without reporting.
            remaining = self._remaining()
            if remaining < MIN_ATTEMPT_S:
                raise ProviderUnavailable("job deadline reached") from last_error
            if not self.breaker.allow():
                raise ProviderUnavailable("circuit open: provider calls suspended") from last_error
            with self._lock:
                self._calls += 1
                if attempt > 0:
                    self._retries += 1
            try:
                result = fn(min(self.timeout_s, remaining))
            except RetryableError as exc:
                self.breaker.record_failure()
                last_error = exc
            except BaseException:
                self.breaker.release()
                raise
            else:
                self.breaker.record_success()
                return result

            if attempt + 1 < self.max_attempts:
                # Our failure may have opened the breaker: waiting to be refused is wasted time.
                if self.breaker.state == "open":
                    raise ProviderUnavailable(f"circuit open after: {last_error}") from last_error
                wait = self._wait_before_retry(attempt, last_error)
                # Sleeping until (nearly) the deadline only to find no time left for the
                # attempt would waste the wait: give the account its fallback now.
                if wait > self._remaining() - MIN_ATTEMPT_S:
                    raise ProviderUnavailable(
                        f"job deadline would pass before retrying ({wait:.2f}s wait): {last_error}"
                    ) from last_error
                if wait > 0:
                    self._sleep(wait)
        raise ProviderUnavailable(
            f"provider unavailable after {self.max_attempts} attempts: {last_error}"
        ) from last_error

    def _remaining(self) -> float:
        return math.inf if self.deadline is None else self.deadline.remaining()

    def _wait_before_retry(self, attempt: int, error: RetryableError) -> float:
        if error.retry_after_s is not None:
            return min(self.retry_after_cap_s, error.retry_after_s)
        ceiling = self.backoff_base_s * 2.0 ** min(attempt, _MAX_BACKOFF_EXPONENT)
        return self._rng.uniform(0.0, min(self.backoff_cap_s, ceiling))
