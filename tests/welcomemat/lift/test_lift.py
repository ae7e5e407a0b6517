"""The lift report's statistics: Wilson and Newcombe intervals, by hand and by a second method."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from statistics import NormalDist

import pytest
from hypothesis import given
from hypothesis import strategies as st

from welcomemat.arms import Arm
from welcomemat.lift.comparison import (
    MIN_ACCOUNTS_PER_ARM,
    MIN_EVENTS_PER_ARM,
    AccountOutcome,
    LiftReport,
    Metric,
    RateBase,
    build_lift_report,
    newcombe_difference,
    wilson_interval,
)

Z95 = NormalDist().inv_cdf(0.975)  # 1.959963984540054


def score_test_bounds(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """A second, independent computation of the Wilson interval: the p at which the score test
    |p̂ − p| / √(p(1−p)/n) = z, found by bisection on each side of p̂ (no closed form)."""
    p_hat = successes / trials

    def excess(p: float) -> float:
        return (p_hat - p) ** 2 - z * z * p * (1 - p) / trials

    def bisect(lo: float, hi: float, rising: bool) -> float:
        for _ in range(200):
            mid = (lo + hi) / 2
            if (excess(mid) > 0) == rising:
                hi = mid
            else:
                lo = mid
        return (lo + hi) / 2

    low = 0.0 if successes == 0 else bisect(0.0, p_hat, rising=False)
    high = 1.0 if successes == trials else bisect(p_hat, 1.0, rising=True)
    return low, high


def test_hand_worked_wilson_10_of_50() -> None:
    # n = 50, p̂ = 0.2, z = 1.96, z² = 3.8415
    # centre     = (p̂ + z²/2n) / (1 + z²/n) = (0.2 + 0.038415) / 1.076830 = 0.221405
    # half-width = z / (1 + z²/n) · √(p̂(1−p̂)/n + z²/4n²)
    #            = 1.96 / 1.076830 · √(0.0032 + 0.000384) = 1.820157 · 0.059867 = 0.108967
    # interval   = [0.221405 − 0.108967, 0.221405 + 0.108967] = [0.1124, 0.3304]
    interval = wilson_interval(10, 50)
    assert round(interval.low, 4) == 0.1124
    assert round(interval.high, 4) == 0.3304


# Newcombe (1998), "Two-sided confidence intervals for the single proportion: comparison of
# seven methods", Statistics in Medicine 17:857-872, Table I, method 3 (score, no correction).
PUBLISHED_WILSON = [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0000, 0.1611),
    (1, 29, 0.0061, 0.1718),
    (29, 29, 0.8830, 1.0000),
]


@pytest.mark.parametrize(("x", "n", "low", "high"), PUBLISHED_WILSON)
def test_wilson_matches_published_values(x: int, n: int, low: float, high: float) -> None:
    interval = wilson_interval(x, n)
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)


# Newcombe (1998), "Interval estimation for the difference between independent proportions:
# comparison of eleven methods", Statistics in Medicine 17:873-890, Table II, method 10.
PUBLISHED_NEWCOMBE = [
    ((56, 70, 48, 80), 0.0524, 0.3339),
    ((9, 10, 3, 10), 0.1705, 0.8090),
    ((6, 7, 2, 7), 0.0582, 0.8062),
    ((5, 56, 0, 29), -0.0381, 0.1926),
    ((0, 10, 0, 20), -0.1611, 0.2775),
    ((0, 10, 0, 10), -0.2775, 0.2775),
    ((10, 10, 0, 20), 0.6791, 1.0000),
    ((10, 10, 0, 10), 0.6075, 1.0000),
]


@pytest.mark.parametrize(("counts", "low", "high"), PUBLISHED_NEWCOMBE)
def test_newcombe_difference_matches_published_values(
    counts: tuple[int, int, int, int], low: float, high: float
) -> None:
    interval = newcombe_difference(*counts)
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)


def test_hand_worked_newcombe_difference() -> None:
    # personal 20/100 (Wilson [0.1334, 0.2888]), holdout 10/100 (Wilson [0.0552, 0.1744]); d = 0.10
    # low  = d − √((0.20 − 0.1334)² + (0.1744 − 0.10)²) = 0.10 − √(0.004436 + 0.005535) = 0.0001
    # high = d + √((0.2888 − 0.20)² + (0.10 − 0.0552)²) = 0.10 + √(0.007885 + 0.002007) = 0.1995
    a, b = wilson_interval(20, 100), wilson_interval(10, 100)
    assert (round(a.low, 4), round(a.high, 4)) == (0.1334, 0.2888)
    assert (round(b.low, 4), round(b.high, 4)) == (0.0552, 0.1744)
    d = newcombe_difference(20, 100, 10, 100)
    assert (round(d.low, 4), round(d.high, 4)) == (0.0001, 0.1995)


counts = st.integers(min_value=1, max_value=5_000).flatmap(
    lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))
)


@given(counts)
def test_wilson_agrees_with_inverting_the_score_test(pair: tuple[int, int]) -> None:
    x, n = pair
    interval = wilson_interval(x, n)
    low, high = score_test_bounds(x, n)
    assert math.isclose(interval.low, low, abs_tol=1e-9)
    assert math.isclose(interval.high, high, abs_tol=1e-9)


@given(counts)
def test_wilson_holds_the_estimate_inside_zero_one(pair: tuple[int, int]) -> None:
    x, n = pair
    interval = wilson_interval(x, n)
    assert 0.0 <= interval.low <= x / n <= interval.high <= 1.0


@given(counts, st.integers(min_value=2, max_value=50))
def test_wilson_narrows_as_the_sample_grows(pair: tuple[int, int], factor: int) -> None:
    x, n = pair
    small, large = wilson_interval(x, n), wilson_interval(x * factor, n * factor)
    assert large.high - large.low < small.high - small.low


@given(counts, counts)
def test_newcombe_holds_the_difference_and_mirrors(a: tuple[int, int], b: tuple[int, int]) -> None:
    interval = newcombe_difference(*a, *b)
    d = a[0] / a[1] - b[0] / b[1]
    assert -1.0 <= interval.low <= d <= interval.high <= 1.0
    mirrored = newcombe_difference(*b, *a)
    assert math.isclose(interval.low, -mirrored.high, abs_tol=1e-12)
    assert math.isclose(interval.high, -mirrored.low, abs_tol=1e-12)


def test_no_trials_means_nothing_is_known() -> None:
    assert (wilson_interval(0, 0).low, wilson_interval(0, 0).high) == (0.0, 1.0)
    assert (newcombe_difference(0, 0, 3, 10).low, newcombe_difference(0, 0, 3, 10).high) == (-1.0, 1.0)


@pytest.mark.parametrize(("x", "n"), [(-1, 10), (11, 10), (0, -1)])
def test_counts_that_are_not_a_proportion_are_refused(x: int, n: int) -> None:
    with pytest.raises(ValueError, match="not a proportion"):
        wilson_interval(x, n)


# -- the report --------------------------------------------------------------------------------

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def population(
    arm: Arm, accounts: int, reached: int, clicked: int, converted: int, prefix: str
) -> list[AccountOutcome]:
    """`accounts` accounts of which the first `reached` visited twice, the first `clicked` of
    those clicked a CTA three times, the first `converted` converted once."""
    return [
        AccountOutcome(
            account_id=f"{prefix}{i}",
            arm=arm,
            views=2 if i < reached else 0,
            cta_clicks=3 if i < clicked else 0,
            conversions=1 if i < converted else 0,
        )
        for i in range(accounts)
    ]


def report_for(outcomes: list[AccountOutcome], holdout_fraction: float = 0.5) -> LiftReport:
    """The populations here are built arm by arm, in equal sizes: a 50% holdout is what they match."""
    return build_lift_report(
        outcomes, tenant="acme", campaign="q4-pipeline", holdout_fraction=holdout_fraction, generated_at=NOW
    )


def test_report_rates_are_per_assigned_account_and_the_visited_view_is_labelled() -> None:
    report = report_for(
        population(Arm.PERSONAL, 400, 100, 20, 10, "p")
        + population(Arm.HOLDOUT, 400, 100, 10, 5, "h")
        + [AccountOutcome("anon", Arm.ANONYMOUS, views=9)]
    )
    personal, holdout = report.arm(Arm.PERSONAL), report.arm(Arm.HOLDOUT)
    assert (personal.accounts, personal.reached, personal.visits) == (400, 100, 200)
    assert (personal.cta_clicks, personal.accounts_clicked, personal.reached_clicked) == (60, 20, 20)
    assert (personal.conversions, personal.accounts_converted) == (10, 10)
    assert (holdout.accounts, holdout.reached, holdout.accounts_clicked) == (400, 100, 10)
    clicks = report.metric(Metric.CTA_CLICK_RATE)
    assert clicks.base is RateBase.ASSIGNED
    assert (clicks.variant_rate.successes, clicks.variant_rate.trials) == (20, 400)
    assert clicks.label == "CTA click rate (accounts that clicked a CTA / accounts assigned)"
    assert report.question.startswith("Per account assigned to the arm (intent to treat)")
    # Among visitors the same clicks are the hand-worked example above: 20/100 vs 10/100.
    visited = report.reached_only.metric(Metric.CTA_CLICK_RATE)
    assert report.reached_only.label == "Among accounts that visited: descriptive, biased by who visits"
    assert visited.base is RateBase.REACHED
    assert (visited.variant_rate.successes, visited.variant_rate.trials) == (20, 100)
    assert (round(visited.difference_low, 4), round(visited.difference_high, 4)) == (0.0001, 0.1995)
    assert "descriptive" in visited.conclusion and "higher" not in visited.conclusion
    reach = report.metric(Metric.REACH)
    assert (reach.variant_rate.successes, reach.variant_rate.trials, reach.difference) == (100, 400, 0.0)
    assert "no difference detected" in reach.conclusion


def test_a_difference_significant_only_on_a_first_look_says_so() -> None:
    report = report_for(
        population(Arm.PERSONAL, 100, 100, 20, 10, "p") + population(Arm.HOLDOUT, 100, 100, 10, 5, "h")
    )
    clicks = report.metric(Metric.CTA_CLICK_RATE)
    # the hand-worked example above: 20/100 vs 10/100, every account assigned visited
    assert (clicks.variant_rate.successes, clicks.variant_rate.trials) == (20, 100)
    assert (round(clicks.variant_rate.low, 4), round(clicks.variant_rate.high, 4)) == (0.1334, 0.2888)
    assert (round(clicks.difference_low, 4), round(clicks.difference_high, 4)) == (0.0001, 0.1995)
    assert clicks.enough_data and "personal is higher by 10.0 points" in clicks.conclusion
    # +0.01 points at the fixed interval's edge: significant on a first look only, and said so.
    assert not report.sample_ratio.mismatch
    (warning,) = report.warnings
    assert warning.startswith("CTA click rate: the fixed 95% interval excludes zero but the always-valid")
    assert clicks.sequential_low < 0 < clicks.sequential_high


def test_an_account_that_converted_without_visiting_counts_in_the_assigned_rate_only() -> None:
    outcomes = population(Arm.PERSONAL, 50, 40, 10, 8, "p") + [
        AccountOutcome("p_cold", Arm.PERSONAL, views=0, conversions=2)
    ]
    report = report_for(outcomes + population(Arm.HOLDOUT, 50, 40, 8, 6, "h"))
    personal = report.arm(Arm.PERSONAL)
    assert (personal.conversions, personal.accounts_converted, personal.reached_converted) == (10, 9, 8)
    assert (personal.accounts, personal.reached) == (51, 40)
    converted = report.metric(Metric.CONVERSION_RATE).variant_rate
    assert (converted.successes, converted.trials) == (9, 51)
    visited = report.reached_only.metric(Metric.CONVERSION_RATE).variant_rate
    assert (visited.successes, visited.trials) == (8, 40)


def test_small_samples_get_a_plain_warning_and_no_verdict() -> None:
    report = report_for(
        population(Arm.PERSONAL, 200, 120, 60, 30, "p") + population(Arm.HOLDOUT, 20, 12, 1, 0, "h")
    )
    assert any(
        f"holdout arm has 20 accounts (fewer than {MIN_ACCOUNTS_PER_ARM})" in w for w in report.warnings
    )
    assert any("too small to conclude" in w for w in report.warnings)
    for metric in report.metrics:
        assert not metric.enough_data
        assert "too few data to conclude" in metric.conclusion
        assert "higher" not in metric.conclusion


def test_too_few_events_is_also_too_small() -> None:
    report = report_for(
        population(Arm.PERSONAL, 400, 200, 40, 4, "p") + population(Arm.HOLDOUT, 400, 200, 20, 1, "h")
    )
    conversion = report.metric(Metric.CONVERSION_RATE)
    assert not conversion.enough_data
    assert any(
        f"the personal arm has 4 accounts with the event (fewer than {MIN_EVENTS_PER_ARM})" in w
        for w in report.warnings
    )
    assert report.metric(Metric.CTA_CLICK_RATE).enough_data


def test_an_empty_holdout_says_lift_cannot_be_measured() -> None:
    report = report_for(population(Arm.PERSONAL, 100, 50, 10, 5, "p"))
    assert report.warnings[0].startswith("The holdout arm is empty")
    assert report.metric(Metric.REACH).difference is None
    assert "nothing to compare" in report.metric(Metric.REACH).conclusion


def test_a_worse_personal_arm_is_called_lower() -> None:
    report = report_for(
        population(Arm.PERSONAL, 400, 200, 20, 10, "p") + population(Arm.HOLDOUT, 400, 200, 60, 10, "h")
    )
    assert "personal is lower by 10.0 points" in report.metric(Metric.CTA_CLICK_RATE).conclusion
