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
  declared (the reference, usually the control), compared as every pair of rates is
  (`welcomemat.lift.rate_comparison`), per account assigned to each variant (intent to
  treat, as every default rate), with a verdict that uses only
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
    AccountOutcome,
    ArmTotals,
    LiftReport,
    LiftReportHeader,
    SampleRatio,
    build_lift_report,
    metric_counts,
    mismatch_warning,
    sample_ratio,
)
from welcomemat.lift.counted_variant import counted_variant, declared_variants
from welcomemat.lift.intervals import signed_points as _pts
from welcomemat.lift.outcomes import collect_outcomes
from welcomemat.lift.rate_comparison import Compared, Metric, RateComparison, compare_rates, metric_label
from welcomemat.records.conversions import GOAL_TYPES, ConversionType

__all__ = [
    "NO_GROUP",
    "GroupLift",
    "GroupedLiftReport",
    "LiftDimension",
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


class GroupedLiftReport(_Model):
    """What `welcomemat report lift --by DIMENSION --json` prints."""

    by: LiftDimension
    overall: LiftReport
    groups: tuple[GroupLift, ...]
    contrasts: tuple[RateComparison, ...]
    variant_sample_ratio: SampleRatio | None
    warnings: tuple[str, ...]

    def group(self, name: str) -> LiftReport:
        return next(g.report for g in self.groups if g.group == name)


def _key(outcome: AccountOutcome, by: LiftDimension) -> str:
    value = getattr(outcome, by.value)
    return value if isinstance(value, str) and value else NO_GROUP


def _contrast(
    metric: Metric, variant: str, reference: str, a: ArmTotals, b: ArmTotals, confidence: float
) -> RateComparison:
    name = metric.value.replace("_", " ")
    pct = f"{confidence:.0%}"

    def conclude(c: RateComparison) -> str:
        # Only the always-valid interval decides: reading the report daily must not manufacture winners.
        difference, low, high = c.difference, c.sequential_low, c.sequential_high
        if difference is None:
            return f"{variant} vs {reference}, {name}: no data in one of them yet."
        if not c.enough_data:
            return f"{variant} vs {reference}, {name}: too few data to conclude ({_pts(difference)} so far)."
        if low > 0 or high < 0:
            word = "higher" if low > 0 else "lower"
            return (
                f"{variant} vs {reference}, {name}: {variant} is {word} by {_pts(abs(difference))[1:]} "
                f"(always-valid {pct} interval {_pts(low)} to {_pts(high)}): a result, however "
                "often the report was read."
            )
        return (
            f"{variant} vs {reference}, {name}: no difference established yet ({_pts(difference)}; the "
            f"always-valid {pct} interval {_pts(low)} to {_pts(high)} includes zero)."
        )

    # Per account assigned to each variant (intent to treat), as the report's default rates.
    return compare_rates(
        metric,
        metric_label(metric),
        ((variant, *metric_counts(a, metric)), (reference, *metric_counts(b, metric))),
        compared=Compared.VARIANTS,
        conclude=conclude,
        confidence=confidence,
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
    contrasts: list[RateComparison] = []
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
