"""The intervals of the lift report: one proportion (Wilson) and a difference of two (Newcombe).

Intervals are 95% two-sided unless asked otherwise. A single proportion gets the Wilson score
interval (good coverage for small counts and rates near 0 or 1, where the textbook normal
interval fails). The difference personal − holdout gets Newcombe's hybrid score interval
(method 10 of Newcombe 1998, "Interval estimation for the difference between independent
proportions", Statistics in Medicine 17:873-890), which is built from the two Wilson
intervals and needs no iteration.

Pure functions on counts, shared by the report's rates (`welcomemat.lift.comparison`) and its negative
outcomes (`welcomemat.lift.negatives`); `welcomemat.lift.comparison` re-exports them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from pydantic import BaseModel, ConfigDict

__all__ = [
    "CONFIDENCE",
    "DIFFERENCE_METHOD",
    "INTERVAL_METHOD",
    "Interval",
    "RateEstimate",
    "newcombe_difference",
    "rate_estimate",
    "signed_points",
    "wilson_interval",
]

CONFIDENCE = 0.95
INTERVAL_METHOD = "Wilson score interval"
DIFFERENCE_METHOD = "Newcombe hybrid score interval (Newcombe 1998, method 10)"


@dataclass(frozen=True, slots=True)
class Interval:
    """A closed interval [low, high]."""

    low: float
    high: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence {confidence} must be strictly between 0 and 1")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _check_counts(successes: int, trials: int) -> None:
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError(f"{successes} successes in {trials} trials is not a proportion")


def wilson_interval(successes: int, trials: int, confidence: float = CONFIDENCE) -> Interval:
    """Wilson score interval for `successes / trials`: the p whose score test does not reject.

    With z the normal quantile, n trials and p̂ = successes / n:
    centre = (p̂ + z²/2n) / (1 + z²/n), half-width = z / (1 + z²/n) · √(p̂(1−p̂)/n + z²/4n²).
    No trials: [0, 1] (nothing is known).
    """
    _check_counts(successes, trials)
    if trials == 0:
        return Interval(0.0, 1.0)
    z = _z(confidence)
    n = float(trials)
    p = successes / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    # The exact bounds at 0 and n are 0 and 1; rounding must not leave them a hair off.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return Interval(low, high)


def newcombe_difference(
    successes_a: int, trials_a: int, successes_b: int, trials_b: int, confidence: float = CONFIDENCE
) -> Interval:
    """Newcombe's hybrid score interval for p_a − p_b (method 10 of Newcombe 1998).

    With Wilson intervals [l_a, u_a] and [l_b, u_b] and d = p̂_a − p̂_b:
    low = d − √((p̂_a − l_a)² + (u_b − p̂_b)²), high = d + √((u_a − p̂_a)² + (p̂_b − l_b)²).
    Either arm without trials: [−1, 1].
    """
    _check_counts(successes_a, trials_a)
    _check_counts(successes_b, trials_b)
    if trials_a == 0 or trials_b == 0:
        return Interval(-1.0, 1.0)
    pa, pb = successes_a / trials_a, successes_b / trials_b
    a = wilson_interval(successes_a, trials_a, confidence)
    b = wilson_interval(successes_b, trials_b, confidence)
    d = pa - pb
    low = d - math.sqrt((pa - a.low) ** 2 + (b.high - pb) ** 2)
    high = d + math.sqrt((a.high - pa) ** 2 + (pb - b.low) ** 2)
    return Interval(max(-1.0, low), min(1.0, high))


class RateEstimate(BaseModel):
    """successes / trials with its interval; `rate` is None without trials."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    successes: int
    trials: int
    rate: float | None
    low: float
    high: float


def rate_estimate(successes: int, trials: int, confidence: float = CONFIDENCE) -> RateEstimate:
    """successes / trials with its Wilson interval."""
    interval = wilson_interval(successes, trials, confidence)
    rate = successes / trials if trials else None
    return RateEstimate(successes=successes, trials=trials, rate=rate, low=interval.low, high=interval.high)


def signed_points(value: float) -> str:
    """A difference of proportions in percentage points, signed (`+2.0 points`)."""
    return f"{value * 100:+.1f} points"
