"""Negative outcomes in the lift report: does the personal arm raise unsubscribes or spam complaints?

A personal page that lifts meetings but also makes people unsubscribe or report the e-mail as
spam is not a win: the sender's domain pays for every complaint. The CRM or the sequencer
reports these outcomes like conversions (`welcomemat.records.conversions.NEGATIVE_OUTCOMES`, through
`POST /v1/conversions` or `welcomemat conversions import`); they are never counted as one.

Per arm each is a rate per *assigned* account (accounts with at least one / accounts in the
arm: intent to treat, as every default rate of the report) with its Wilson interval, and the
difference personal − holdout gets Newcombe's interval and the always-valid one. The report
warns when the personal arm raises one:

- the difference's fixed 95% interval lies above zero (the rise is established), or
- the point estimate is above the holdout's by more than `WARN_THRESHOLD_POINTS` for that
  outcome, even while the interval still includes zero: a harm is worth hearing about before
  it is proven. Unsubscribe: 1 percentage point (a sequence step typically sees 0.5 to 2% of
  recipients unsubscribe; one more in a hundred accounts is a visible change). Spam complaint:
  0.3 points, the complaint rate Gmail's and Yahoo's bulk-sender rules (2024) tell senders
  never to reach; a rise of that size alone would put a clean domain at the limit.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from welcomemat.lift.intervals import (
    CONFIDENCE,
    RateEstimate,
    newcombe_difference,
    rate_estimate,
    signed_points,
)
from welcomemat.lift.stats import sequential_difference
from welcomemat.records.conversions import ConversionType

__all__ = [
    "NEGATIVE_LABELS",
    "WARN_THRESHOLD_POINTS",
    "NegativeOutcome",
    "compare_negative",
    "negative_warning",
]

# A rise of the point estimate above this (a proportion: 0.01 = 1 percentage point) warns even
# while the interval includes zero (module docstring: why these two values).
WARN_THRESHOLD_POINTS: Mapping[ConversionType, float] = {
    ConversionType.UNSUBSCRIBE: 0.01,
    ConversionType.SPAM_COMPLAINT: 0.003,
}
NEGATIVE_LABELS: Mapping[ConversionType, str] = {
    ConversionType.UNSUBSCRIBE: "Unsubscribe rate (assigned accounts that unsubscribed / accounts assigned)",
    ConversionType.SPAM_COMPLAINT: (
        "Spam complaint rate (assigned accounts that complained / accounts assigned)"
    ),
}


class NegativeOutcome(BaseModel):
    """One negative outcome, personal against holdout, per assigned account."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    outcome: ConversionType
    label: str
    personal: RateEstimate
    holdout: RateEstimate
    difference: float | None
    difference_low: float
    difference_high: float
    sequential_low: float
    sequential_high: float
    # A point rise above this warns even while the interval includes zero.
    warn_threshold: float
    # True: the personal arm raises it (interval above zero, or a rise above the threshold).
    raised: bool
    conclusion: str


def compare_negative(
    outcome: ConversionType,
    personal: tuple[int, int],
    holdout: tuple[int, int],
    confidence: float = CONFIDENCE,
) -> NegativeOutcome:
    """`outcome` in both arms from (accounts with it, accounts assigned) per arm."""
    (xp, np_), (xh, nh) = personal, holdout
    a, b = rate_estimate(xp, np_, confidence), rate_estimate(xh, nh, confidence)
    fixed = newcombe_difference(xp, np_, xh, nh, confidence)
    seq_low, seq_high = sequential_difference(xp, np_, xh, nh, 1.0 - confidence)
    difference = a.rate - b.rate if a.rate is not None and b.rate is not None else None
    threshold = WARN_THRESHOLD_POINTS[outcome]
    raised = difference is not None and (fixed.low > 0 or difference > threshold)
    name = NEGATIVE_LABELS[outcome].split(" (")[0]
    pct = f"{confidence:.0%}"
    span = f"{pct} interval {signed_points(fixed.low)} to {signed_points(fixed.high)}"
    if difference is None:
        conclusion = f"{name}: no accounts in one arm; nothing to compare."
    elif fixed.low > 0:
        conclusion = f"{name}: personal is higher by {signed_points(difference)[1:]} ({span})."
    elif raised:
        conclusion = (
            f"{name}: personal is higher by {signed_points(difference)[1:]}, more than the "
            f"{threshold * 100:.1f}-point threshold; not established yet ({span} includes zero)."
        )
    else:
        conclusion = f"{name}: no rise above the holdout ({signed_points(difference)}; {span})."
    return NegativeOutcome(
        outcome=outcome,
        label=NEGATIVE_LABELS[outcome],
        personal=a,
        holdout=b,
        difference=difference,
        difference_low=fixed.low,
        difference_high=fixed.high,
        sequential_low=seq_low,
        sequential_high=seq_high,
        warn_threshold=threshold,
        raised=raised,
        conclusion=conclusion,
    )


def negative_warning(negative: NegativeOutcome) -> str | None:
    """The report's warning when the personal arm raises a negative outcome; None when it does not."""
    if not negative.raised or negative.difference is None or negative.personal.rate is None:
        return None
    holdout_rate = negative.holdout.rate or 0.0
    name = negative.label.split(" (")[0]
    why = (
        "its interval lies above zero"
        if negative.difference_low > 0
        else f"a rise above the {negative.warn_threshold * 100:.1f}-point threshold, not yet established"
    )
    return (
        f"Negative outcome: the personal arm raises the {name.lower()}: {negative.personal.rate:.1%} of "
        f"assigned accounts against {holdout_rate:.1%} in the holdout ({signed_points(negative.difference)}, "
        f"interval {signed_points(negative.difference_low)} to {signed_points(negative.difference_high)}; "
        f"{why}). Look at what the personal copy says before sending more of it."
    )
