"""Known answers on simulated experiments (`bench/lift_simulation.py`, fixed seeds, small runs).

The full-size figures: `.venv/bin/python -m bench.lift_simulation` (bench/README.md).
"""

from __future__ import annotations

from bench.lift_simulation import (
    BASE_CLICK_RATE,
    PLANTED_RELATIVE_LIFT,
    peeking,
    simulate_population,
    variant_report,
)
from welcomemat.arms import Arm
from welcomemat.lift.comparison import Metric


def test_a_planted_20_percent_lift_for_one_variant_is_found_with_its_interval_above_zero() -> None:
    report = variant_report(simulate_population(18, 25_000, {"direct": PLANTED_RELATIVE_LIFT}))
    clicks = next(c for c in report.contrasts if c.metric is Metric.CTA_CLICK_RATE)
    assert (clicks.variant, clicks.reference) == ("direct", "control")
    assert clicks.sequential_low > 0 and clicks.difference_low > 0
    assert clicks.relative_lift is not None and 0.1 < clicks.relative_lift < 0.3
    assert "direct is higher by" in clicks.conclusion and "however often" in clicks.conclusion
    # The planted difference (2 points) is above what this sample can detect.
    assert clicks.minimum_detectable_effect is not None
    assert clicks.minimum_detectable_effect < BASE_CLICK_RATE * PLANTED_RELATIVE_LIFT
    # Reach was not planted: no verdict there.
    reach = next(c for c in report.contrasts if c.metric is Metric.REACH)
    assert reach.sequential_low <= 0 <= reach.sequential_high
    # Each variant is also compared with the (smaller, 10%) holdout, and the split is the promised one.
    direct = report.group("direct").metric(Metric.CTA_CLICK_RATE)
    assert direct.difference is not None and direct.difference > 0
    assert report.variant_sample_ratio is not None and not report.variant_sample_ratio.mismatch
    assert not report.overall.sample_ratio.mismatch
    assert report.group("control").arm(Arm.HOLDOUT) == report.group("direct").arm(Arm.HOLDOUT)


def test_without_an_effect_the_variants_are_not_called_different() -> None:
    report = variant_report(simulate_population(19, 25_000, {}))
    for contrast in report.contrasts:
        assert contrast.sequential_low <= 0 <= contrast.sequential_high
        if contrast.metric is not Metric.CONVERSION_RATE:  # no conversions simulated: too few data
            assert "no difference established yet" in contrast.conclusion


def test_daily_peeking_keeps_the_always_valid_interval_near_5_percent_and_inflates_the_fixed_one() -> None:
    # 300 experiments × 30 daily looks, no effect. Figures for this seed: 1.0% and 25.3%.
    peeks = peeking(runs=300, days=30, per_day=200, seed=18)
    assert peeks.sequential <= 0.05
    assert peeks.fixed >= 0.15


def test_losing_a_fifth_of_one_variant_is_a_sample_ratio_mismatch_and_says_so() -> None:
    report = variant_report(simulate_population(20, 5_000, {}, lose_share={"direct": 0.2}))
    assert report.variant_sample_ratio is not None and report.variant_sample_ratio.mismatch
    assert any(w.startswith("Sample ratio mismatch in the variants") for w in report.warnings)
    honest = variant_report(simulate_population(20, 5_000, {}))
    assert honest.variant_sample_ratio is not None and not honest.variant_sample_ratio.mismatch
    assert not any("Sample ratio mismatch" in w for w in honest.warnings)
