"""The one circuit breaker: stop calling a dependency that keeps failing, probe it later.

Used by the precompute job around model calls (`welcomemat.storage.resilience`) and by the
renderer around Redis (`server.redis_guard`): both want the same semantics, so there is
one implementation, in the shared core (no framework imports).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

__all__ = ["BreakerState", "CircuitBreaker"]

BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Closed ▸ open after `failure_threshold` consecutive failures ▸ half-open after `reset_after_s`.

    Every `allow()` that returns True is a promise to report back: `record_success()`,
    `record_failure()`, or `release()` when the outcome says nothing about the provider's
    health. Half-open lets exactly one caller through (the probe) until it reports; without
    `release()` a probe ending in an unrelated error would hold the breaker half-open forever.

    Results arriving while open (from calls started before it opened) change nothing: the
    breaker only closes through a probe, and only counts an opening when it actually opens.
    """

    def __init__(
        self,
        failure_threshold: int = 5,
        reset_after_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failure_threshold < 1:
            raise ValueError(f"failure_threshold must be >= 1, got {failure_threshold}")
        if not reset_after_s >= 0:
            raise ValueError(f"reset_after_s must be >= 0, got {reset_after_s!r}")
        self.failure_threshold = failure_threshold
        self.reset_after_s = reset_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._state: BreakerState = "closed"
        self._consecutive_failures = 0
        self._opened_at = 0.0
        self._probe_in_flight = False
        self._openings = 0

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._refresh_locked()

    @property
    def openings(self) -> int:
        """How many times the breaker has opened (for the run report)."""
        with self._lock:
            return self._openings

    def allow(self) -> bool:
        """May a call go out now? While half-open, True for the single probe only."""
        with self._lock:
            state = self._refresh_locked()
            if state == "closed":
                return True
            if state == "half_open" and not self._probe_in_flight:
                self._probe_in_flight = True
                return True
            return False

    def record_success(self) -> None:
        with self._lock:
            state = self._refresh_locked()
            if state == "open":
                return
            self._state = "closed"
            self._consecutive_failures = 0
            self._probe_in_flight = False

    def record_failure(self) -> None:
        with self._lock:
            state = self._refresh_locked()
            if state == "open":
                return
            self._consecutive_failures += 1
            if state == "half_open" or self._consecutive_failures >= self.failure_threshold:
                self._open_locked()

    def release(self) -> None:
        """An allowed call ended without a verdict: free the half-open probe slot, if taken."""
        with self._lock:
            self._probe_in_flight = False

    def _open_locked(self) -> None:
        self._state = "open"
        self._opened_at = self._clock()
        self._probe_in_flight = False
        self._openings += 1

    def _refresh_locked(self) -> BreakerState:
        # Open turns half-open lazily, when someone looks: no timer thread needed.
        if self._state == "open" and self._clock() - self._opened_at >= self.reset_after_s:
            self._state = "half_open"
            self._probe_in_flight = False
        return self._state
