"""Which copy variant the lift report counts an account in: one rule, for the report and the export.

The lift report by variant (`welcomemat.lift.groups`) and the sequencer export's `variant`
column (`welcomemat.outreach.sequencer_row`) both ask this module, so a rep's file can never name a
variant the report does not count the account in, nor leave one out:

- only the personal arm has a variant: the holdout is every variant's comparison, never one;
- only an account of the report's population has one: its zone set is `published`
  (`welcomemat.zones.published`; pending review and rejected sets are not counted);
- the variant is the one the zone set was written with, when the campaign's experiment
  declares it (a variant left over from another experiment is counted in none); without an
  experiment, any variant a zone set records.

The variant is an assignment, not a copy: an account whose page serves its fallback today
(expired facts, a refused cell) is still counted in its variant (intent to treat), so the
export names it too.
"""

from __future__ import annotations

from collections.abc import Collection

from welcomemat.arms import Arm
from welcomemat.campaign.contract import Campaign
from welcomemat.zones.zoneset import ZoneSet, ZoneSetStatus

__all__ = ["counted_variant", "declared_variants", "zone_set_counted_variant"]


def declared_variants(campaign: Campaign) -> tuple[str, ...]:
    """The experiment's variant ids in declared order (the first is the reference); () without one."""
    experiment = campaign.experiment
    return tuple(v.id for v in experiment.variants) if experiment is not None else ()


def counted_variant(arm: Arm, variant: str | None, declared: Collection[str]) -> str | None:
    """The variant an account of the population is counted in, or None (see the module docstring).

    `variant` is the one its zone set records; `declared` the experiment's ids (empty: none declared).
    """
    if arm is not Arm.PERSONAL or not variant:
        return None
    if declared and variant not in declared:
        return None
    return variant


def zone_set_counted_variant(arm: Arm, zone_set: ZoneSet | None, declared: Collection[str]) -> str | None:
    """`counted_variant` for an account and its stored zone set (None: no zone set that decodes)."""
    if zone_set is None or zone_set.status is not ZoneSetStatus.PUBLISHED:
        return None  # outside the report's population
    return counted_variant(arm, zone_set.variant, declared)
