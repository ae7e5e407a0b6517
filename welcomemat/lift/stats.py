"""The experiment statistics beyond one fixed-sample interval: peeking, sample ratios, power.

Pure functions on counts (no Redis, no report models), so each has known-answer tests:

- `sequential_difference`: an always-valid 95% interval for p_a − p_b. A marketer who reads
  the report every day is testing every day; a fixed-sample interval checked daily excludes
  zero by chance far more often than 5% of the time (about one experiment in four over a
  month of daily looks, `bench/lift_simulation.py`). This interval is a confidence
  *sequence*: the chance that it ever excludes the true difference, at any of any number of
  looks, stays at most 5%. It is the asymptotic confidence sequence with Robbins' normal
  mixture boundary of Waudby-Smith, Arbour, Sinha, Kennedy and Ramdas, "Time-uniform central
  limit theory and asymptotic confidence sequences" (Annals of Statistics 52(6), 2024,
  Theorem 2.2): with t observations, standard deviation estimate σ̂ and tuning ρ > 0,

      mean ± σ̂ · √( 2(tρ² + 1) / (t²ρ²) · log( √(tρ² + 1) / α ) ).

  For a difference of two proportions (the form GrowthBook's sequential testing uses), t is
  n_a + n_b and σ̂²/t is the estimated variance of p̂_a − p̂_b, p̂(1−p̂)/n per arm, so the
  half-width is √Var · √( 2(tρ² + 1)/(tρ²) · log(√(tρ² + 1)/α) ). ρ is chosen to make the
  sequence narrowest at `SEQUENTIAL_TUNING_N` observations (the paper's approximate optimum,
  ρ² = (−2 log α + log(−2 log α + 1)) / t*); validity does not depend on that choice.
- `sample_ratio_mismatch`: Pearson's chi-square goodness of fit of observed group sizes
  against the split the assignment promises; the p-value from the chi-square survival
  function (closed forms for integer degrees of freedom, Abramowitz & Stegun 26.4.4-5).
- `minimum_detectable_effect`: the smallest true difference a fixed-sample two-sided test
  at level α would detect with 80% power at the current sample sizes,
  (z_{1−α/2} + z_{power}) · √(p(1−p)(1/n_a + 1/n_b)), p the reference rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

__all__ = [
    "MDE_POWER",
    "SEQUENTIAL_TUNING_N",
    "SRM_P_THRESHOLD",
    "SampleRatioCheck",
    "chi_square_survival",
    "minimum_detectable_effect",
    "sample_ratio_mismatch",
    "sequential_difference",
]

# The total sample (both groups) at which the sequential interval is tightest; below and above
# it the interval is valid, only a little wider than it could be. A campaign's reached accounts
# are in the thousands, which is where a marketer starts reading the report seriously.
SEQUENTIAL_TUNING_N = 5_000
# A split this unlikely under the promised ratio is a broken assignment, not bad luck. Stricter
# than 5% because the check runs on every report, and a false alarm teaches people to ignore it.
SRM_P_THRESHOLD = 0.001
MDE_POWER = 0.8


def _check_counts(successes: int, trials: int) -> None:
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError(f"{successes} successes in {trials} trials is not a proportion")


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha {alpha} must be strictly between 0 and 1")


def _variance(successes: int, trials: int) -> float:
    p = successes / trials
    return p * (1.0 - p) / trials


def sequential_difference(
    successes_a: int,
    trials_a: int,
    successes_b: int,
    trials_b: int,
    alpha: float = 0.05,
    tuning_n: int = SEQUENTIAL_TUNING_N,
) -> tuple[float, float]:
    """The always-valid (1 − alpha) interval for p_a − p_b (module docstring), clipped to [−1, 1].

    Either group without trials: (−1, 1). When both observed rates are 0 or 1 the plug-in
    variance is 0; one pseudo-observation's worth (0.25/n per group) is used instead so the
    interval never collapses to a point on data that cannot support one.
    """
    _check_counts(successes_a, trials_a)
    _check_counts(successes_b, trials_b)
    _check_alpha(alpha)
    if tuning_n < 1:
        raise ValueError(f"tuning_n {tuning_n} must be at least 1")
    if trials_a == 0 or trials_b == 0:
        return (-1.0, 1.0)
    difference = successes_a / trials_a - successes_b / trials_b
    variance = _variance(successes_a, trials_a) + _variance(successes_b, trials_b)
    if variance == 0.0:
        variance = 0.25 / trials_a**2 + 0.25 / trials_b**2
    t = float(trials_a + trials_b)
    log_term = -2.0 * math.log(alpha)
    rho2 = (log_term + math.log(log_term + 1.0)) / tuning_n
    half = math.sqrt(variance) * math.sqrt(
        2.0 * (t * rho2 + 1.0) / (t * rho2) * math.log(math.sqrt(t * rho2 + 1.0) / alpha)
    )
    return (max(-1.0, difference - half), min(1.0, difference + half))


def chi_square_survival(statistic: float, degrees: int) -> float:
    """P(X ≥ statistic) for X chi-square with an integer number of degrees of freedom.

    Even degrees: e^{−x/2} Σ_{i<k/2} (x/2)^i / i!; odd: erfc(√(x/2)) plus the series
    √(2x/π) e^{−x/2} Σ x^i / (3·5···(2i+1)) over i < (k−1)/2 (A&S 26.4.4-5).
    """
    if degrees < 1:
        raise ValueError(f"degrees of freedom {degrees} must be at least 1")
    if statistic <= 0.0:
        return 1.0
    half = statistic / 2.0
    if degrees % 2 == 0:
        term, total = 1.0, 1.0
        for i in range(1, degrees // 2):
            term *= half / i
            total += term
        return min(1.0, math.exp(-half) * total)
    total = math.erfc(math.sqrt(half))
    if degrees > 1:
        term = math.sqrt(2.0 * statistic / math.pi) * math.exp(-half)
        series = term
        for i in range(1, (degrees - 1) // 2):
            term *= statistic / (2 * i + 1)
            series += term
        total += series
    return min(1.0, total)


@dataclass(frozen=True, slots=True)
class SampleRatioCheck:
    """Observed group sizes against the expected shares: Pearson's statistic and its p-value."""

    observed: tuple[int, ...]
    expected_shares: tuple[float, ...]
    statistic: float
    degrees: int
    p_value: float

    @property
    def mismatch(self) -> bool:
        return self.p_value < SRM_P_THRESHOLD


def sample_ratio_mismatch(observed: Sequence[int], expected_shares: Sequence[float]) -> SampleRatioCheck:
    """Pearson's chi-square of `observed` counts against `expected_shares` (normalised to sum 1).

    Groups with an expected share of 0 must be empty (else: a certain mismatch, p = 0) and are
    left out of the degrees of freedom. Nothing observed: p = 1 (nothing to judge).
    """
    if len(observed) != len(expected_shares) or len(observed) < 2:
        raise ValueError("need the same number (at least two) of observed counts and expected shares")
    if any(n < 0 for n in observed) or any(s < 0 for s in expected_shares) or sum(expected_shares) <= 0:
        raise ValueError("counts and shares must be non-negative, and some share positive")
    total_share = float(sum(expected_shares))
    shares = tuple(s / total_share for s in expected_shares)
    total = sum(observed)
    live = [(n, s) for n, s in zip(observed, shares, strict=True) if s > 0]
    degrees = max(1, len(live) - 1)
    if total == 0:
        return SampleRatioCheck(tuple(observed), shares, 0.0, degrees, 1.0)
    if any(n > 0 and s == 0 for n, s in zip(observed, shares, strict=True)):
        return SampleRatioCheck(tuple(observed), shares, math.inf, degrees, 0.0)
    statistic = sum((n - total * s) ** 2 / (total * s) for n, s in live)
    p = chi_square_survival(statistic, degrees) if len(live) > 1 else 1.0
    return SampleRatioCheck(tuple(observed), shares, statistic, degrees, p)


def minimum_detectable_effect(
    reference_rate: float, trials_a: int, trials_b: int, alpha: float = 0.05, power: float = MDE_POWER
) -> float | None:
    """The absolute difference detectable with `power` at level alpha (module docstring).

    None when a group has no trials or the reference rate is 0 or 1 (no variance to size by).
    """
    _check_alpha(alpha)
    if not 0.0 < power < 1.0:
        raise ValueError(f"power {power} must be strictly between 0 and 1")
    if not 0.0 <= reference_rate <= 1.0:
        raise ValueError(f"reference rate {reference_rate} is not a proportion")
    if trials_a <= 0 or trials_b <= 0 or reference_rate in (0.0, 1.0):
        return None
    normal = NormalDist()
    z = normal.inv_cdf(1.0 - alpha / 2.0) + normal.inv_cdf(power)
    return z * math.sqrt(reference_rate * (1.0 - reference_rate) * (1.0 / trials_a + 1.0 / trials_b))
