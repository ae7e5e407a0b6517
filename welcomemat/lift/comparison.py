"""The lift report: did the personal arm do better than the holdout, and how sure are we?

The population of a campaign is every account with a published zone set; its arm is the
one `welcomemat.arms.assign_arm` gives it (personal or holdout, a stable hash), the same
arm the renderer, the sequencer export and the conversions API use. Per arm the report
counts accounts in the population, accounts reached (at least one page view or QR scan), visits
(page views), CTA clicks (clicks on the campaign's link zones), conversions (the goals the
CRM posted, `welcomemat.records.conversions`) and negative outcomes (unsubscribes, spam complaints).

Every default rate is per account *assigned* to the arm (intent to treat): the question it
answers is "did assigning accounts to personal pages raise this?". The assignment is random,
so the two arms are alike in everything but the treatment and the difference is causal.
Counting only accounts that visited would not be: the personal arm itself changes who visits
(a personal e-mail pulls in curious, less ready accounts, or only the keenest), so "converted
among visitors" compares different kinds of accounts. The three default proportions, each
per account so that one enthusiastic visitor cannot weigh like ten accounts:

- reach: accounts reached / accounts assigned (the e-mail's and the page's pull);
- CTA click rate: accounts with at least one CTA click / accounts assigned;
- conversion rate: accounts with at least one conversion / accounts assigned (an account
  that converted without ever visiting counts: the assignment may have worked through the
  e-mail alone).

The reached-only rates stay as a second view (`LiftReport.reached_only`, `REACHED_ONLY_LABEL`):
CTA clicks and conversions among accounts that visited. It describes the visitors; it is
biased by who visits and never decides a verdict or a warning. Negative outcomes per arm,
and the warning when the personal arm raises them, are `welcomemat.lift.negatives`.

Intervals (`welcomemat.lift.intervals`): a rate gets the Wilson score interval, the
difference personal − holdout Newcombe's hybrid score interval, both 95% two-sided. Each metric is
a `welcomemat.lift.rate_comparison.RateComparison` (personal the variant, the holdout the
reference), the same comparison a copy experiment's contrasts are.

Too small to conclude (a plain warning, and the metric is never called a win): fewer than
`MIN_ACCOUNTS_PER_ARM` accounts assigned to an arm, or fewer than `MIN_EVENTS_PER_ARM`
accounts with the event in either arm. Below that an interval that happens to exclude zero is
mostly noise. (The reached-only view says the same with `MIN_REACHED_PER_ARM` visitors.)

Beside the fixed-sample interval each difference carries an always-valid (sequential) 95%
interval and the minimum detectable effect for the current sample, and the report checks the
arms' sizes against the holdout fraction (sample-ratio mismatch); the maths is
`welcomemat.lift.stats`. A difference whose fixed interval excludes zero while its
always-valid one does not gets a plain peeking warning: it is significant only if this is the
first and only time anyone read the report. Per-group reports (`--by`) are `welcomemat.lift.groups`;
reading a published campaign's outcomes from Redis is `welcomemat.lift.outcomes`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict

from welcomemat.arms import Arm
from welcomemat.lift.intervals import (
    CONFIDENCE,
    DIFFERENCE_METHOD,
    INTERVAL_METHOD,
    Interval,
    RateEstimate,
    newcombe_difference,
    rate_estimate,
    signed_points,
    wilson_interval,
)
from welcomemat.lift.negatives import NegativeOutcome, compare_negative, negative_warning
from welcomemat.lift.rate_comparison import (
    MIN_ACCOUNTS_PER_ARM,
    MIN_EVENTS_PER_ARM,
    MIN_REACHED_PER_ARM,
    Compared,
    Metric,
    RateBase,
    RateComparison,
    compare_rates,
    metric_label,
)
from welcomemat.lift.stats import SEQUENTIAL_TUNING_N, sample_ratio_mismatch
from welcomemat.records.conversions import ConversionType

__all__ = [
    "ASSIGNED_QUESTION",
    "COMPARED_ARMS",
    "CONFIDENCE",
    "DIFFERENCE_METHOD",
    "INTERVAL_METHOD",
    "MIN_ACCOUNTS_PER_ARM",
    "MIN_EVENTS_PER_ARM",
    "MIN_REACHED_PER_ARM",
    "REACHED_ONLY_LABEL",
    "REACHED_ONLY_METRICS",
    "REACHED_ONLY_QUESTION",
    "SEQUENTIAL_METHOD",
    "AccountOutcome",
    "ArmTotals",
    "Interval",
    "LiftReport",
    "LiftReportHeader",
    "Metric",
    "RateBase",
    "RateEstimate",
    "ReachedOnlyView",
    "SampleRatio",
    "build_lift_report",
    "metric_counts",
    "mismatch_warning",
    "newcombe_difference",
    "peeking_warning",
    "rate_estimate",
    "reached_only_warning",
    "sample_ratio",
    "signed_points",
    "wilson_interval",
]

SEQUENTIAL_METHOD = (
    "always-valid asymptotic confidence sequence, Robbins normal mixture (Waudby-Smith et al. 2024), "
    f"tuned for {SEQUENTIAL_TUNING_N} accounts"
)
COMPARED_ARMS = (Arm.PERSONAL, Arm.HOLDOUT)


# -- the report -----------------------------------------------------------------------------------


# What each view answers, said wherever the report is shown (text, JSON, the admin pages).
ASSIGNED_QUESTION = (
    "Per account assigned to the arm (intent to treat): did assigning accounts to personal pages raise it?"
)
REACHED_ONLY_LABEL = "Among accounts that visited: descriptive, biased by who visits"
REACHED_ONLY_QUESTION = (
    "How did the accounts that visited behave? The personal arm itself changes who visits, so "
    "this compares different kinds of accounts: never read it as the effect of personal pages."
)
# The metrics the reached-only view shows (reach has no reached-only version).
REACHED_ONLY_METRICS = (Metric.CTA_CLICK_RATE, Metric.CONVERSION_RATE)


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
    # Negative outcomes the CRM or sequencer reported (`welcomemat.records.conversions.NEGATIVE_OUTCOMES`).
    unsubscribes: int = 0
    spam_complaints: int = 0
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
    """What one arm did. Counts of accounts, and of events (visits, clicks, conversions).

    `accounts_clicked` and `accounts_converted` count every assigned account (the default
    rates' numerators); `reached_clicked` and `reached_converted` only those that visited.
    """

    arm: Arm
    accounts: int
    reached: int
    visits: int
    cta_clicks: int
    accounts_clicked: int
    conversions: int
    accounts_converted: int
    reached_clicked: int
    reached_converted: int
    unsubscribes: int
    accounts_unsubscribed: int
    spam_complaints: int
    accounts_complained: int


class SampleRatio(_Model):
    """Accounts per group against the split the assignment promises (Pearson's chi-square)."""

    observed: dict[str, int]
    expected_shares: dict[str, float]
    chi_square: float
    p_value: float
    mismatch: bool


class ReachedOnlyView(_Model):
    """The rates among accounts that visited: descriptive, biased by who visits."""

    label: str
    question: str
    metrics: tuple[RateComparison, ...]

    def metric(self, metric: Metric) -> RateComparison:
        return next(m for m in self.metrics if m.metric is metric)


class LiftReport(_Model):
    """The lift report of one campaign (what `welcomemat report lift --json` prints).

    `metrics` divide by the accounts assigned to each arm (intent to treat, `question`);
    `reached_only` is the labelled second view; `negative_outcomes` unsubscribes and spam
    complaints per assigned account.
    """

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
    question: str
    metrics: tuple[RateComparison, ...]
    reached_only: ReachedOnlyView
    negative_outcomes: tuple[NegativeOutcome, ...]
    sample_ratio: SampleRatio
    warnings: tuple[str, ...]

    def arm(self, arm: Arm) -> ArmTotals:
        return next(a for a in self.arms if a.arm is arm)

    def metric(self, metric: Metric) -> RateComparison:
        return next(m for m in self.metrics if m.metric is metric)


def metric_counts(arm: ArmTotals, metric: Metric, base: RateBase = RateBase.ASSIGNED) -> tuple[int, int]:
    """(successes, trials) of a metric in one arm, per account: over the accounts assigned to
    the arm (default, intent to treat) or over the accounts that visited (`RateBase.REACHED`)."""
    if metric is Metric.REACH:
        return arm.reached, arm.accounts
    if base is RateBase.REACHED:
        if metric is Metric.CTA_CLICK_RATE:
            return arm.reached_clicked, arm.reached
        return arm.reached_converted, arm.reached
    if metric is Metric.CTA_CLICK_RATE:
        return arm.accounts_clicked, arm.accounts
    return arm.accounts_converted, arm.accounts


def _compare(
    metric: Metric,
    personal: tuple[int, int],
    holdout: tuple[int, int],
    confidence: float,
    base: RateBase = RateBase.ASSIGNED,
) -> tuple[RateComparison, list[str]]:
    label = metric_label(metric, base)
    name = label.split(" (")[0]
    reached = base is RateBase.REACHED
    pct = f"{confidence:.0%}"

    def conclude(c: RateComparison) -> str:
        difference, low, high = c.difference, c.difference_low, c.difference_high
        span = f"{pct} interval {signed_points(low)} to {signed_points(high)}"
        if difference is None:
            return f"{name}: no data in one arm; nothing to compare."
        if not c.enough_data:
            return f"{name}: too few data to conclude ({signed_points(difference)} so far)."
        if reached and not low <= 0 <= high:
            # Among visitors a difference is a description, not an effect: never "higher" or "lower".
            return (
                f"{name}: {signed_points(difference)} among visitors ({span}); descriptive, biased by "
                "who visits: not the effect of personal pages."
            )
        if low > 0:
            return f"{name}: personal is higher by {signed_points(difference)[1:]} ({span})."
        if high < 0:
            return f"{name}: personal is lower by {signed_points(-difference)[1:]} ({span})."
        return f"{name}: no difference detected ({signed_points(difference)}; the {span} includes zero)."

    min_trials = MIN_REACHED_PER_ARM if reached else MIN_ACCOUNTS_PER_ARM
    comparison = compare_rates(
        metric,
        label,
        ((Arm.PERSONAL.value, *personal), (Arm.HOLDOUT.value, *holdout)),
        compared=Compared.ARMS,
        conclude=conclude,
        base=base,
        min_trials=min_trials,
        confidence=confidence,
    )
    problems = _too_few_problems(name, comparison, min_trials)
    low, high = comparison.sequential_low, comparison.sequential_high
    fixed_excludes_zero = not comparison.difference_low <= 0 <= comparison.difference_high
    if comparison.enough_data and fixed_excludes_zero and low <= 0 <= high:
        problems.append(peeking_warning(name, low, high, pct))
    return comparison, problems


def _too_few_problems(name: str, comparison: RateComparison, min_trials: int) -> list[str]:
    """Why an arm is too small to conclude on, in words (the report's warnings)."""
    noun = "reached " if comparison.base is RateBase.REACHED else ""
    problems: list[str] = []
    for arm, rate in (
        (comparison.variant, comparison.variant_rate),
        (comparison.reference, comparison.reference_rate),
    ):
        if rate.trials < min_trials:
            problems.append(
                f"{name}: the {arm} arm has {rate.trials} {noun}{_accounts(rate.trials)} "
                f"(fewer than {min_trials})"
            )
        elif rate.successes < MIN_EVENTS_PER_ARM:
            problems.append(
                f"{name}: the {arm} arm has {rate.successes} {_accounts(rate.successes)} with the event "
                f"(fewer than {MIN_EVENTS_PER_ARM})"
            )
    return problems


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
    reached_clicked = reached_converted = unsubscribes = unsubscribed = complaints = complained = 0
    for o in outcomes:
        if o.arm is not arm:
            continue
        accounts += 1
        # Every assigned account counts, visited or not (intent to treat).
        visits += o.views
        clicks += o.cta_clicks
        conversions += o.conversions
        clicked += o.cta_clicks > 0
        converted += o.conversions > 0
        unsubscribes += o.unsubscribes
        unsubscribed += o.unsubscribes > 0
        complaints += o.spam_complaints
        complained += o.spam_complaints > 0
        if o.views <= 0 and o.qr_scans <= 0:
            continue
        reached += 1
        reached_clicked += o.cta_clicks > 0
        reached_converted += o.conversions > 0
    return ArmTotals(
        arm=arm,
        accounts=accounts,
        reached=reached,
        visits=visits,
        cta_clicks=clicks,
        accounts_clicked=clicked,
        conversions=conversions,
        accounts_converted=converted,
        reached_clicked=reached_clicked,
        reached_converted=reached_converted,
        unsubscribes=unsubscribes,
        accounts_unsubscribed=unsubscribed,
        spam_complaints=complaints,
        accounts_complained=complained,
    )


def reached_only_warning(reach: RateComparison, view: ReachedOnlyView) -> str | None:
    """When reach differs between the arms (its interval excludes zero), the personal arm changes
    who visits: the reached-only rates then compare different accounts, and the warning says so."""
    if not reach.enough_data or reach.difference_low <= 0 <= reach.difference_high:
        return None
    return (
        f"Reach differs between the arms ({signed_points(reach.difference or 0.0)}): the personal arm "
        f"changes who visits, so the view '{view.label.lower()}' compares different kinds of accounts. "
        "Read the rates per assigned account; the visitors' rates describe, they do not measure lift."
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
        comparison, problems = _compare(metric, a, b, confidence)
        comparisons.append(comparison)
        warnings.extend(problems)
    if any(not c.enough_data for c in comparisons):
        warnings.append(
            f"Samples are too small to conclude on every metric: a metric needs at least "
            f"{MIN_ACCOUNTS_PER_ARM} accounts assigned and {MIN_EVENTS_PER_ARM} accounts with the event "
            "in each arm before its difference means anything."
        )
    # The second view describes visitors; its own small-sample notes are not the report's warnings.
    reached_view = ReachedOnlyView(
        label=REACHED_ONLY_LABEL,
        question=REACHED_ONLY_QUESTION,
        metrics=tuple(
            _compare(
                m,
                metric_counts(p, m, RateBase.REACHED),
                metric_counts(h, m, RateBase.REACHED),
                confidence,
                RateBase.REACHED,
            )[0]
            for m in REACHED_ONLY_METRICS
        ),
    )
    selection = reached_only_warning(comparisons[0], reached_view)
    if selection is not None:
        warnings.append(selection)
    negatives = (
        compare_negative(
            ConversionType.UNSUBSCRIBE,
            (p.accounts_unsubscribed, p.accounts),
            (h.accounts_unsubscribed, h.accounts),
            confidence,
        ),
        compare_negative(
            ConversionType.SPAM_COMPLAINT,
            (p.accounts_complained, p.accounts),
            (h.accounts_complained, h.accounts),
            confidence,
        ),
    )
    warnings.extend(w for n in negatives if (w := negative_warning(n)) is not None)
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
        question=ASSIGNED_QUESTION,
        metrics=tuple(comparisons),
        reached_only=reached_view,
        negative_outcomes=negatives,
        sample_ratio=ratio,
        warnings=tuple(dict.fromkeys(warnings)),
    )


def _accounts(count: int) -> str:
    return "account" if count == 1 else "accounts"
