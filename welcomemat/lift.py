"""The lift report: did the personal arm do better than the holdout, and how sure are we?

The population of a campaign is every account with a published zone set; its arm is the
one `welcomemat.arms.assign_arm` gives it (personal or holdout, a stable hash), the same
arm the renderer, the sequencer export and the conversions API use. Per arm the report
counts accounts in the population, accounts reached (at least one page view or QR scan), visits
(page views), CTA clicks (clicks on the campaign's link zones) and conversions (what the
CRM posted, `welcomemat.conversions`). Three proportions are compared, each per account so
that one enthusiastic visitor cannot weigh like ten accounts:

- reach: accounts reached / accounts in the population (the email's and the page's pull);
- CTA click rate: reached accounts with at least one CTA click / accounts reached;
- conversion rate: reached accounts with at least one conversion / accounts reached.

Intervals are 95% two-sided. A single proportion gets the Wilson score interval (good
coverage for small counts and rates near 0 or 1, where the textbook normal interval
fails). The difference personal − holdout gets Newcombe's hybrid score interval (method
10 of Newcombe 1998, "Interval estimation for the difference between independent
proportions", Statistics in Medicine 17:873-890), which is built from the two Wilson
intervals and needs no iteration.

Too small to conclude (a plain warning, and the metric is never called a win): fewer than
`MIN_REACHED_PER_ARM` reached accounts in an arm (for reach: fewer than that many
accounts in the population), or fewer than `MIN_EVENTS_PER_ARM` accounts with the event
in either arm. Below that an interval that happens to exclude zero is mostly noise.

Beside the fixed-sample interval each difference carries an always-valid (sequential) 95%
interval and the minimum detectable effect for the current sample, and the report checks the
arms' sizes against the holdout fraction (sample-ratio mismatch); the maths is
`welcomemat.lift_stats`. A difference whose fixed interval excludes zero while its
always-valid one does not gets a plain peeking warning: it is significant only if this is the
first and only time anyone read the report. Per-group reports (`--by`) are `welcomemat.lift_groups`;
reading a published campaign's outcomes from Redis is `welcomemat.lift_outcomes`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from statistics import NormalDist
from typing import NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict

from welcomemat.arms import Arm
from welcomemat.lift_stats import (
    SEQUENTIAL_TUNING_N,
    minimum_detectable_effect,
    sample_ratio_mismatch,
    sequential_difference,
)

__all__ = [
    "COMPARED_ARMS",
    "CONFIDENCE",
    "DIFFERENCE_METHOD",
    "INTERVAL_METHOD",
    "MIN_EVENTS_PER_ARM",
    "MIN_REACHED_PER_ARM",
    "SEQUENTIAL_METHOD",
    "AccountOutcome",
    "ArmTotals",
    "Interval",
    "LiftReport",
    "LiftReportHeader",
    "Metric",
    "MetricComparison",
    "RateEstimate",
    "SampleRatio",
    "build_lift_report",
    "metric_counts",
    "mismatch_warning",
    "newcombe_difference",
    "peeking_warning",
    "rate_estimate",
    "sample_ratio",
    "signed_points",
    "wilson_interval",
]

CONFIDENCE = 0.95
INTERVAL_METHOD = "Wilson score interval"
DIFFERENCE_METHOD = "Newcombe hybrid score interval (Newcombe 1998, method 10)"
SEQUENTIAL_METHOD = (
    "always-valid asymptotic confidence sequence, Robbins normal mixture (Waudby-Smith et al. 2024), "
    f"tuned for {SEQUENTIAL_TUNING_N} accounts"
)
# Fewer reached accounts than this in an arm: the report says it cannot conclude.
MIN_REACHED_PER_ARM = 30
# Fewer accounts with the event (click, conversion, visit) than this in an arm: same.
MIN_EVENTS_PER_ARM = 5
COMPARED_ARMS = (Arm.PERSONAL, Arm.HOLDOUT)


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


# -- the report -----------------------------------------------------------------------------------


class Metric(enum.StrEnum):
    REACH = "reach"
    CTA_CLICK_RATE = "cta_click_rate"
    CONVERSION_RATE = "conversion_rate"


_METRIC_LABELS = {
    Metric.REACH: "Reach (accounts with a visit / accounts)",
    Metric.CTA_CLICK_RATE: "CTA click rate (reached accounts that clicked a CTA)",
    Metric.CONVERSION_RATE: "Conversion rate (reached accounts that converted)",
}


@dataclass(frozen=True, slots=True)
class AccountOutcome:
    """One account of the population: its arm and what it did in the campaign."""

    account_id: str
    arm: Arm
    views: int = 0
    # QR scans reach an account as a view does; they are not visits (the continuation page the
    # scan redirects to logs its own view), but a scan whose visitor refused tracking is all there is.
    qr_scans: int = 0
    cta_clicks: int = 0
    conversions: int = 0
    # The guideline version that wrote the account's published zone set (`--by guideline_version`).
    guideline_version: str | None = None
    # The copy variant its zone set was written with (personal arm in an experiment only), its
    # segment, the fact type its first personal zone cites and its most personal rung (`--by`).
    variant: str | None = None
    segment: str | None = None
    fact_type: str | None = None
    rung: str | None = None


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ArmTotals(_Model):
    """What one arm did. Counts of accounts, and of events (visits, clicks, conversions)."""

    arm: Arm
    accounts: int
    reached: int
    visits: int
    cta_clicks: int
    accounts_clicked: int
    conversions: int
    accounts_converted: int


class RateEstimate(_Model):
    """successes / trials with its interval; `rate` is None without trials."""

    successes: int
    trials: int
    rate: float | None
    low: float
    high: float


class MetricComparison(_Model):
    """One metric, personal against holdout: both rates, the difference, and what it means."""

    metric: Metric
    label: str
    personal: RateEstimate
    holdout: RateEstimate
    difference: float | None
    difference_low: float
    difference_high: float
    # The always-valid interval: still 95% however often the report has been read.
    sequential_low: float
    sequential_high: float
    # The smallest true difference this sample would detect with 80% power (None: no variance yet).
    minimum_detectable_effect: float | None
    enough_data: bool
    conclusion: str


class SampleRatio(_Model):
    """Accounts per group against the split the assignment promises (Pearson's chi-square)."""

    observed: dict[str, int]
    expected_shares: dict[str, float]
    chi_square: float
    p_value: float
    mismatch: bool


class LiftReport(_Model):
    """The lift report of one campaign (what `welcomemat report lift --json` prints)."""

    tenant: str
    campaign: str
    generated_at: datetime
    holdout_fraction: float
    confidence: float
    interval_method: str
    difference_method: str
    sequential_method: str
    conversion_types: tuple[str, ...]
    arms: tuple[ArmTotals, ...]
    metrics: tuple[MetricComparison, ...]
    sample_ratio: SampleRatio
    warnings: tuple[str, ...]

    def arm(self, arm: Arm) -> ArmTotals:
        return next(a for a in self.arms if a.arm is arm)

    def metric(self, metric: Metric) -> MetricComparison:
        return next(m for m in self.metrics if m.metric is metric)


def metric_counts(arm: ArmTotals, metric: Metric) -> tuple[int, int]:
    """(successes, trials) of a metric in one arm: per account, over accounts or reached accounts."""
    if metric is Metric.REACH:
        return arm.reached, arm.accounts
    if metric is Metric.CTA_CLICK_RATE:
        return arm.accounts_clicked, arm.reached
    return arm.accounts_converted, arm.reached


def rate_estimate(successes: int, trials: int, confidence: float = CONFIDENCE) -> RateEstimate:
    """successes / trials with its Wilson interval."""
    interval = wilson_interval(successes, trials, confidence)
    rate = successes / trials if trials else None
    return RateEstimate(successes=successes, trials=trials, rate=rate, low=interval.low, high=interval.high)


def signed_points(value: float) -> str:
    """A difference of proportions in percentage points, signed (`+2.0 points`)."""
    return f"{value * 100:+.1f} points"


def _compare(
    metric: Metric, personal: tuple[int, int], holdout: tuple[int, int], min_trials: int, confidence: float
) -> tuple[MetricComparison, list[str]]:
    (xp, np_), (xh, nh) = personal, holdout
    a, b = rate_estimate(xp, np_, confidence), rate_estimate(xh, nh, confidence)
    interval = newcombe_difference(xp, np_, xh, nh, confidence)
    seq_low, seq_high = sequential_difference(xp, np_, xh, nh, 1.0 - confidence)
    pooled = (xp + xh) / (np_ + nh) if np_ + nh else 0.0
    mde = minimum_detectable_effect(pooled, np_, nh, 1.0 - confidence)
    difference = a.rate - b.rate if a.rate is not None and b.rate is not None else None
    name = _METRIC_LABELS[metric].split(" (")[0]
    trial_noun = "" if metric is Metric.REACH else "reached "
    problems: list[str] = []
    for arm, trials, successes in ((Arm.PERSONAL, np_, xp), (Arm.HOLDOUT, nh, xh)):
        if trials < min_trials:
            problems.append(
                f"{name}: the {arm.value} arm has {trials} {trial_noun}{_accounts(trials)} "
                f"(fewer than {min_trials})"
            )
        elif successes < MIN_EVENTS_PER_ARM:
            problems.append(
                f"{name}: the {arm.value} arm has {successes} {_accounts(successes)} with the event "
                f"(fewer than {MIN_EVENTS_PER_ARM})"
            )
    enough = not problems
    pct = f"{confidence:.0%}"
    if difference is None:
        conclusion = f"{name}: no data in one arm; nothing to compare."
    elif not enough:
        conclusion = f"{name}: too few data to conclude ({signed_points(difference)} so far)."
    elif interval.low > 0:
        conclusion = (
            f"{name}: personal is higher by {signed_points(difference)[1:]} "
            f"({pct} interval {signed_points(interval.low)} to {signed_points(interval.high)})."
        )
    elif interval.high < 0:
        conclusion = (
            f"{name}: personal is lower by {signed_points(-difference)[1:]} "
            f"({pct} interval {signed_points(interval.low)} to {signed_points(interval.high)})."
        )
    else:
        conclusion = (
            f"{name}: no difference detected ({signed_points(difference)}; the {pct} interval "
            f"{signed_points(interval.low)} to {signed_points(interval.high)} includes zero)."
        )
    if enough and (interval.low > 0 or interval.high < 0) and seq_low <= 0 <= seq_high:
        problems.append(peeking_warning(name, seq_low, seq_high, pct))
    comparison = MetricComparison(
        metric=metric,
        label=_METRIC_LABELS[metric],
        personal=a,
        holdout=b,
        difference=difference,
        difference_low=interval.low,
        difference_high=interval.high,
        sequential_low=seq_low,
        sequential_high=seq_high,
        minimum_detectable_effect=mde,
        enough_data=enough,
        conclusion=conclusion,
    )
    return comparison, problems


def peeking_warning(name: str, low: float, high: float, pct: str) -> str:
    """What a difference significant only on a first look means, in words."""
    return (
        f"{name}: the fixed {pct} interval excludes zero but the always-valid one ({signed_points(low)} to "
        f"{signed_points(high)}) does not. Trust it only if nobody has looked at this report before; "
        "after repeated looks (peeking) it is not yet a result."
    )


def sample_ratio(observed: Mapping[str, int], expected_shares: Mapping[str, float]) -> SampleRatio:
    """The chi-square check of group sizes, as the report carries it."""
    names = list(observed)
    check = sample_ratio_mismatch([observed[n] for n in names], [expected_shares[n] for n in names])
    return SampleRatio(
        observed=dict(observed),
        expected_shares=dict(zip(names, check.expected_shares, strict=True)),
        chi_square=check.statistic,
        p_value=check.p_value,
        mismatch=check.mismatch,
    )


def mismatch_warning(what: str, ratio: SampleRatio) -> str:
    """The sample-ratio-mismatch warning, in plain words."""
    expected = ", ".join(f"{n} {s:.0%}" for n, s in ratio.expected_shares.items())
    observed = ", ".join(f"{n} {c}" for n, c in ratio.observed.items())
    return (
        f"Sample ratio mismatch in the {what}: {observed} accounts where the assignment promises "
        f"{expected} (chi-square p = {ratio.p_value:.2g}). Something other than the hash decides who is "
        "counted (zone sets missing for one group, a changed holdout fraction or experiment): do not "
        "trust any difference below until it is explained."
    )


def _totals(arm: Arm, outcomes: Iterable[AccountOutcome]) -> ArmTotals:
    accounts = reached = visits = clicks = clicked = conversions = converted = 0
    for o in outcomes:
        if o.arm is not arm:
            continue
        accounts += 1
        conversions += o.conversions
        if o.views <= 0 and o.qr_scans <= 0:
            continue
        reached += 1
        visits += o.views
        clicks += o.cta_clicks
        clicked += o.cta_clicks > 0
        converted += o.conversions > 0
    return ArmTotals(
        arm=arm,
        accounts=accounts,
        reached=reached,
        visits=visits,
        cta_clicks=clicks,
        accounts_clicked=clicked,
        conversions=conversions,
        accounts_converted=converted,
    )


class LiftReportHeader(TypedDict):
    """What a lift report says about its campaign beside the counts (`build_lift_report`)."""

    tenant: str
    campaign: str
    holdout_fraction: float
    generated_at: datetime
    conversion_types: NotRequired[Iterable[str]]
    confidence: NotRequired[float]


def build_lift_report(
    outcomes: Iterable[AccountOutcome],
    *,
    tenant: str,
    campaign: str,
    holdout_fraction: float,
    generated_at: datetime,
    conversion_types: Iterable[str] = (),
    confidence: float = CONFIDENCE,
    personal_share: float | None = None,
) -> LiftReport:
    """The report for a population's outcomes (anonymous outcomes, if any, are ignored).

    `personal_share`: the share of the personal arm the assignment promises against the holdout
    (default 1 − holdout_fraction; one variant of k: (1 − holdout_fraction) / k).
    """
    listed = [o for o in outcomes if o.arm in COMPARED_ARMS]
    totals: Mapping[Arm, ArmTotals] = {arm: _totals(arm, listed) for arm in COMPARED_ARMS}
    p, h = totals[Arm.PERSONAL], totals[Arm.HOLDOUT]
    share = 1.0 - holdout_fraction if personal_share is None else personal_share
    ratio = sample_ratio(
        {Arm.PERSONAL.value: p.accounts, Arm.HOLDOUT.value: h.accounts},
        {Arm.PERSONAL.value: share, Arm.HOLDOUT.value: holdout_fraction},
    )
    warnings: list[str] = []
    if h.accounts == 0:
        warnings.append(
            "The holdout arm is empty (holdout_fraction "
            f"{holdout_fraction:g}): without a holdout there is nothing to measure lift against."
        )
    if ratio.mismatch:
        warnings.append(mismatch_warning("arms", ratio))
    comparisons = []
    for metric in Metric:
        a, b = metric_counts(p, metric), metric_counts(h, metric)
        comparison, problems = _compare(metric, a, b, MIN_REACHED_PER_ARM, confidence)
        comparisons.append(comparison)
        warnings.extend(problems)
    if any(not c.enough_data for c in comparisons):
        warnings.append(
            f"Samples are too small to conclude on every metric: a metric needs at least "
            f"{MIN_REACHED_PER_ARM} reached accounts and {MIN_EVENTS_PER_ARM} accounts with the event "
            "in each arm before its difference means anything."
        )
    return LiftReport(
        tenant=tenant,
        campaign=campaign,
        generated_at=generated_at,
        holdout_fraction=holdout_fraction,
        confidence=confidence,
        interval_method=INTERVAL_METHOD,
        difference_method=DIFFERENCE_METHOD,
        sequential_method=SEQUENTIAL_METHOD,
        conversion_types=tuple(sorted(set(conversion_types))),
        arms=(p, h),
        metrics=tuple(comparisons),
        sample_ratio=ratio,
        warnings=tuple(dict.fromkeys(warnings)),
    )


def _accounts(count: int) -> str:
    return "account" if count == 1 else "accounts"
