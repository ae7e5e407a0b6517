"""A campaign's copy experiment applied: which variant an account gets, and the campaign it writes with.

The experiment's format and the hash are `welcomemat.campaign.experiments`; the arm is `welcomemat.arms`.
Precompute calls `variant_for` per account and writes with `variant_campaign`; the zone set
records the variant, which the renderer, the events, the export and the CRM record then carry.
"""

from __future__ import annotations

from welcomemat.arms import Arm, assign_arm
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.experiments import CopyVariant, assign_variant, drawn_variant

__all__ = ["reassigned_variant", "variant_campaign", "variant_for"]


def variant_for(campaign: Campaign, account: str) -> CopyVariant | None:
    """The account's variant in this campaign: None without an experiment, or outside the personal arm."""
    experiment = campaign.experiment
    if experiment is None:
        return None
    arm = assign_arm(campaign.tenant, campaign.campaign, account, campaign.holdout_fraction)
    if arm is not Arm.PERSONAL:
        return None
    return assign_variant(campaign.campaign, experiment, account)


def reassigned_variant(campaign: Campaign, account: str) -> str | None:
    """The kept variant, for a personal account a stopped experiment moves off the variant it drew.

    None for everyone else (no stopped experiment, the holdout, an account the hash gave the kept
    variant): their input hash stays what it was, so their zone sets stay (`precompute.hashing`).
    """
    experiment = campaign.experiment
    if experiment is None or experiment.stopped is None or variant_for(campaign, account) is None:
        return None
    drawn = drawn_variant(campaign.campaign, experiment, account)
    return experiment.stopped.keep if drawn.id != experiment.stopped.keep else None


def variant_campaign(campaign: Campaign, variant: CopyVariant) -> Campaign:
    """The campaign as a variant writes it: its patterns for the experiment's zone, its voice.

    Nothing else changes (banned phrases, windows, claims, links), so the checks a draft of
    this campaign passes are the campaign's own.
    """
    experiment = campaign.experiment
    if experiment is None or (not variant.patterns and variant.voice is None):
        return campaign
    patterns = {fact_type: dict(by_zone) for fact_type, by_zone in campaign.patterns.items()}
    for fact_type, lines in variant.patterns.items():
        patterns.setdefault(fact_type, {})[experiment.zone] = lines
    update: dict[str, object] = {"patterns": patterns}
    if variant.voice is not None:
        update["voice"] = variant.voice
    return campaign.model_copy(update=update)
