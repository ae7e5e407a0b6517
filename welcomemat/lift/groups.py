"""The lift report per group (`welcomemat report lift --by ...`), and copy variants against each other.

A dimension splits the campaign's population (`welcomemat.lift.outcomes.collect_outcomes`) into groups,
and each group gets the whole lift report of `welcomemat.lift.comparison` (personal against holdout,
rates, fixed and always-valid intervals, minimum detectable effect, warnings):

- `segment`, `guideline_version`, `fact_type`, `rung`: what the account's published zone set
  says. Holdout accounts have a zone set written the same way (they are never shown it), so
  each group compares personal and holdout accounts alike in that respect. `fact_type` is the
  type the first personal zone cites, `rung` the zone set's most personal rung. While an
  experiment runs, a variant can move accounts between fact types and rungs (a variant line
  that fails its checks falls back), so there those groups are descriptive, not randomised.
- `variant`: each copy variant's personal accounts against the whole holdout (the holdout has
  no variant), and, the comparison an experiment is for, each variant against the first
  declared (the reference, usually the control): `VariantContrast`, per account assigned to
  each variant (intent to treat, as every default rate), whose verdict uses only
  the always-valid interval, so reading it daily does not manufacture winners. Sizes are
  checked against the promised split (holdout fraction, then equal shares of the rest).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Unpack

import redis
from pydantic import BaseModel, ConfigDict

from welcomemat.arms import Arm
from welcomemat.campaign.view import CampaignView
from welcomemat.lift.comparison import (
    CONFIDENCE,
    MIN_ACCOUNTS_PER_ARM,
    MIN_EVENTS_PER_ARM,
    AccountOutcome,
    ArmTotals,
    LiftReport,
    LiftReportHeader,
    Metric,
    RateBase,
    RateEstimate,
    SampleRatio,
    build_lift_report,
    metric_counts,
    mismatch_warning,
    newcombe_difference,
    rate_estimate,
    sample_ratio,
)
from welcomemat.lift.comparison import (
    signed_points as _pts,
)
from welcomemat.lift.counted_variant import counted_variant, declared_variants
from welcomemat.lift.outcomes import collect_outcomes
from welcomemat.lift.stats import minimum_detectable_effect, sequential_difference
from welcomemat.records.conversions import GOAL_TYPES, ConversionType

__all__ = [
    "NO_GROUP",
    "GroupLift",
    "GroupedLiftReport",
    "LiftDimension",
    "VariantContrast",
    "build_grouped_report",
    "campaign_grouped_report",
]

# The group of accounts the dimension says nothing about (no variant, no personal zone, ...).
NO_GROUP = "-"


class LiftDimension(enum.StrEnum):
    VARIANT = "variant"
    FACT_TYPE = "fact_type"
    SEGMENT = "segment"
    GUIDELINE_VERSION = "guideline_version"
    RUNG = "rung"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GroupLift(_Model):
    """One group's lift report (personal against holdout inside the group)."""

    group: str
    report: LiftReport


class VariantContrast(_Model):
    """One metric, a variant against the reference variant, among personal accounts."""

    metric: Metric
    # Per account assigned to each variant (intent to treat), as the report's default rates.
    base: RateBase
    variant: str
    reference: str
    variant_rate: RateEstimate
    reference_rate: RateEstimate
    difference: float | None
    difference_low: float
    difference_high: float
    sequential_low: float
    sequential_high: float
    minimum_detectable_effect: float | None
    relative_lift: float | None
    enough_data: bool
    conclusion: str


class GroupedLiftReport(_Model):
    """What `welcomemat report lift --by DIMENSION --json` prints."""

    by: LiftDimension
    overall: LiftReport
    groups: tuple[GroupLift, ...]
    contrasts: tuple[VariantContrast, ...]
    variant_sample_ratio: SampleRatio | None
    warnings: tuple[str, ...]

    def group(self, name: str) -> LiftReport:
        return next(g.report for g in self.groups if g.group == name)


def _key(outcome: AccountOutcome, by: LiftDimension) -> str:
    value = getattr(outcome, by.value)
    return value if isinstance(value, str) and value else NO_GROUP


def _contrast(
    metric: Metric, variant: str, reference: str, a: ArmTotals, b: ArmTotals, confidence: float
) -> VariantContrast:
    (xa, na), (xb, nb) = metric_counts(a, metric), metric_counts(b, metric)
    fixed = newcombe_difference(xa, na, xb, nb, confidence)
    seq_low, seq_high = sequential_difference(xa, na, xb, nb, 1.0 - confidence)
    pooled = (xa + xb) / (na + nb) if na + nb else 0.0
    difference = xa / na - xb / nb if na and nb else None
    relative = difference / (xb / nb) if difference is not None and xb else None
    floor = MIN_ACCOUNTS_PER_ARM
    enough = min(na, nb) >= floor and min(xa, xb) >= MIN_EVENTS_PER_ARM
    name = metric.value.replace("_", " ")
    pct = f"{confidence:.0%}"
    if difference is None:
        conclusion = f"{variant} vs {reference}, {name}: no data in one of them yet."
    elif not enough:
        conclusion = (
            f"{variant} vs {reference}, {name}: too few data to conclude ({_pts(difference)} so far)."
        )
    elif seq_low > 0 or seq_high < 0:
        word = "higher" if seq_low > 0 else "lower"
        conclusion = (
            f"{variant} vs {reference}, {name}: {variant} is {word} by {_pts(abs(difference))[1:]} "
            f"(always-valid {pct} interval {_pts(seq_low)} to {_pts(seq_high)}): a result, however "
            "often the report was read."
        )
    else:
        conclusion = (
            f"{variant} vs {reference}, {name}: no difference established yet ({_pts(difference)}; the "
            f"always-valid {pct} interval {_pts(seq_low)} to {_pts(seq_high)} includes zero)."
        )
    return VariantContrast(
        metric=metric,
        base=RateBase.ASSIGNED,
        variant=variant,
        reference=reference,
        variant_rate=rate_estimate(xa, na, confidence),
        reference_rate=rate_estimate(xb, nb, confidence),
        difference=difference,
        difference_low=fixed.low,
        difference_high=fixed.high,
        sequential_low=seq_low,
        sequential_high=seq_high,
        minimum_detectable_effect=minimum_detectable_effect(pooled, na, nb, 1.0 - confidence),
        relative_lift=relative,
        enough_data=enough,
        conclusion=conclusion,
    )


def build_grouped_report(
    outcomes: Iterable[AccountOutcome],
    by: LiftDimension,
    *,
    variants: Sequence[str] = (),
    **header: Unpack[LiftReportHeader],
) -> GroupedLiftReport:
    """The per-group reports for `by`; `variants`: the experiment's variant ids in declared order;
    `header`: what every group's report says about the campaign (`build_lift_report`'s)."""
    listed = [o for o in outcomes if o.arm in (Arm.PERSONAL, Arm.HOLDOUT)]
    header["conversion_types"] = tuple(header.get("conversion_types", ()))  # read once per group
    holdout_fraction, confidence = header["holdout_fraction"], header.get("confidence", CONFIDENCE)

    def report(group: list[AccountOutcome], personal_share: float | None = None) -> LiftReport:
        return build_lift_report(group, personal_share=personal_share, **header)

    overall = report(listed)
    warnings: list[str] = list(overall.warnings)
    groups: list[GroupLift] = []
    contrasts: list[VariantContrast] = []
    variant_ratio: SampleRatio | None = None
    if by is LiftDimension.VARIANT:
        holdout = [o for o in listed if o.arm is Arm.HOLDOUT]
        personal = [o for o in listed if o.arm is Arm.PERSONAL]
        names = list(variants) or sorted({_key(o, by) for o in personal} - {NO_GROUP})
        share = (1.0 - holdout_fraction) / len(names) if names else 1.0 - holdout_fraction
        # The one rule the export's `variant` column follows too (`welcomemat.lift.counted_variant`).
        members = {
            name: [o for o in personal if counted_variant(o.arm, o.variant, names) == name] for name in names
        }
        for name in names:
            groups.append(GroupLift(group=name, report=report(members[name] + holdout, share)))
        if names:
            variant_ratio = sample_ratio(
                {Arm.HOLDOUT.value: len(holdout), **{n: len(members[n]) for n in names}},
                {Arm.HOLDOUT.value: holdout_fraction, **dict.fromkeys(names, share)},
            )
            if variant_ratio.mismatch:
                warnings.append(mismatch_warning("variants", variant_ratio))
            unassigned = len(personal) - sum(len(m) for m in members.values())
            if unassigned:
                warnings.append(
                    f"{unassigned} personal accounts have no variant of this experiment (zone sets "
                    "written before it started, or by another one): left out of the variant groups."
                )
        reference = names[0] if names else None
        for name in names[1:]:
            for metric in Metric:
                a = groups[names.index(name)].report.arm(Arm.PERSONAL)
                b = groups[0].report.arm(Arm.PERSONAL)
                contrasts.append(_contrast(metric, name, str(reference), a, b, confidence))
    else:
        by_group: dict[str, list[AccountOutcome]] = {}
        for o in listed:
            by_group.setdefault(_key(o, by), []).append(o)
        groups = [GroupLift(group=name, report=report(by_group[name])) for name in sorted(by_group)]
    return GroupedLiftReport(
        by=by,
        overall=overall,
        groups=tuple(groups),
        contrasts=tuple(contrasts),
        variant_sample_ratio=variant_ratio,
        warnings=tuple(dict.fromkeys(warnings)),
    )


def campaign_grouped_report(
    client: redis.Redis,
    view: CampaignView,
    by: LiftDimension,
    *,
    now: datetime,
    types: frozenset[ConversionType] | None = None,
    problems: list[str] | None = None,
) -> GroupedLiftReport:
    """The per-group report of a published campaign, read from Redis now."""
    return build_grouped_report(
        collect_outcomes(client, view, types=types, problems=problems),
        by,
        tenant=view.tenant,
        campaign=view.campaign_id,
        holdout_fraction=view.campaign.holdout_fraction,
        generated_at=now,
        variants=declared_variants(view.campaign),
        conversion_types=[t.value for t in (types or GOAL_TYPES)],
    )
