"""The experiment statistics: always-valid interval, sample-ratio check, minimum detectable effect."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from welcomemat.lift.stats import (
    SRM_P_THRESHOLD,
    chi_square_survival,
    minimum_detectable_effect,
    sample_ratio_mismatch,
    sequential_difference,
)

# Chi-square 95th percentiles (any statistics table): each must leave exactly 5% above it.
CHI2_95 = {1: 3.841458820694124, 2: 5.991464547107979, 3: 7.814727903251178, 4: 9.487729036781154}


@pytest.mark.parametrize(("degrees", "critical"), sorted(CHI2_95.items()))
def test_chi_square_tail_at_the_tabled_95th_percentile_is_five_percent(degrees: int, critical: float) -> None:
    assert chi_square_survival(critical, degrees) == pytest.approx(0.05, abs=1e-9)


def test_a_5000_to_5300_split_of_a_50_50_promise_is_suspicious_but_not_a_mismatch() -> None:
    # Worked by hand: 2 · 150² / 5150 = 8.7379, one degree of freedom, p = erfc(√(8.7379/2)) = 0.00312.
    check = sample_ratio_mismatch([5000, 5300], [0.5, 0.5])
    assert check.statistic == pytest.approx(8.737864, abs=1e-6)
    assert check.p_value == pytest.approx(0.0031167, abs=1e-6)
    assert not check.mismatch
    assert sample_ratio_mismatch([5000, 5400], [0.5, 0.5]).mismatch  # p = 8.6e-5


def test_a_holdout_of_10_percent_that_holds_20_percent_is_a_mismatch() -> None:
    check = sample_ratio_mismatch([800, 200], [0.9, 0.1])
    assert check.mismatch and check.p_value < SRM_P_THRESHOLD
    assert sample_ratio_mismatch([0, 0], [0.9, 0.1]).p_value == 1.0
    assert sample_ratio_mismatch([5, 1], [1.0, 0.0]).p_value == 0.0  # a group that should be empty


def test_the_always_valid_interval_for_120_of_1000_against_100_of_1000() -> None:
    # By hand: Var = .12·.88/1000 + .1·.9/1000 = 1.956e-4; t = 2000; ρ² = (5.9915 + ln 6.9915)/5000
    # = 1.58723e-3; tρ² = 3.17446; boundary √(2·4.17446/3.17446 · ln(√4.17446/0.05)) = 3.12377;
    # half-width 0.0139857 · 3.12377 = 0.043688 (the fixed 95% interval's is 0.0274).
    low, high = sequential_difference(120, 1000, 100, 1000)
    assert (low, high) == (pytest.approx(0.02 - 0.043688, abs=2e-6), pytest.approx(0.02 + 0.043688, abs=2e-6))
    assert sequential_difference(0, 0, 3, 10) == (-1.0, 1.0)


def test_minimum_detectable_effect_of_3841_accounts_a_side_at_10_percent_is_2_points() -> None:
    # The textbook sizing: 3841 a side detects 10% → 12% at α 5%, power 80%.
    assert minimum_detectable_effect(0.1, 3841, 3841) == pytest.approx(0.019179, abs=1e-6)
    assert minimum_detectable_effect(0.0, 100, 100) is None
    assert minimum_detectable_effect(0.1, 0, 100) is None


proportions = st.integers(min_value=1, max_value=100_000).flatmap(
    lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))
)


@given(proportions, proportions)
def test_sequential_interval_holds_the_estimate_and_is_wider_than_the_fixed_one(
    a: tuple[int, int], b: tuple[int, int]
) -> None:
    (xa, na), (xb, nb) = a, b
    low, high = sequential_difference(xa, na, xb, nb)
    difference = xa / na - xb / nb
    assert -1.0 <= low <= difference <= high <= 1.0
    sd = math.sqrt(xa / na * (1 - xa / na) / na + xb / nb * (1 - xb / nb) / nb)
    # The mixture boundary never drops below ~3 standard errors; a fixed 95% interval is 1.96.
    if -1.0 < low and high < 1.0:
        assert high - difference >= 1.96 * sd
    swapped = sequential_difference(xb, nb, xa, na)
    assert swapped == (pytest.approx(-high), pytest.approx(-low))


@given(st.floats(min_value=0.0, max_value=200.0), st.integers(min_value=1, max_value=12))
def test_chi_square_tail_is_a_probability_that_falls_as_the_statistic_grows(x: float, degrees: int) -> None:
    p = chi_square_survival(x, degrees)
    assert 0.0 <= p <= 1.0
    # Monotone up to rounding: near 1 the series of two degrees can land one ulp apart.
    assert chi_square_survival(x + 1.0, degrees) <= p + 1e-12
    assert chi_square_survival(x, degrees + 1) >= p - 1e-12  # more freedom, more room for chance
    if degrees == 2:
        assert p == pytest.approx(math.exp(-x / 2))


@given(st.lists(st.integers(min_value=1, max_value=50), min_size=2, max_size=4), st.integers(1, 1000))
def test_counts_exactly_in_the_promised_ratio_never_raise_a_mismatch(weights: list[int], scale: int) -> None:
    check = sample_ratio_mismatch([w * scale for w in weights], [float(w) for w in weights])
    assert check.statistic == pytest.approx(0.0, abs=1e-9) and not check.mismatch


@given(st.floats(min_value=0.01, max_value=0.99), st.integers(10, 100_000), st.integers(10, 100_000))
def test_more_accounts_detect_smaller_effects(rate: float, na: int, nb: int) -> None:
    mde = minimum_detectable_effect(rate, na, nb)
    bigger = minimum_detectable_effect(rate, na * 4, nb * 4)
    assert mde is not None and bigger is not None
    assert bigger == pytest.approx(mde / 2)
