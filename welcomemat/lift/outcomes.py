"""A published campaign's outcomes, read from Redis, and its lift report.

Each account with a published zone set becomes one `AccountOutcome`: its arm (by the stable
hash), engagement from the shared account records (`welcomemat.records.account_records`), conversions (the
goals asked for) and negative outcomes (unsubscribes, spam complaints, always all of them)
from `welcomemat.records.conversions`, and what its zone set was (guideline version, variant, segment,
headline fact type, best rung). The lift report (`welcomemat.lift.comparison`), the per-group report
(`welcomemat.lift.groups`) and the results page (`welcomemat.lift.results`) all start from one
such read; a record or zone set that does not decode is skipped and described, never fatal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime

import redis

from welcomemat.arms import Arm, assign_arm
from welcomemat.campaign.view import CampaignView
from welcomemat.errors import StoredValueError
from welcomemat.lift.comparison import AccountOutcome, LiftReport, build_lift_report
from welcomemat.reasons import ZoneReason, parse_reason
from welcomemat.records.account_records import iter_account_records
from welcomemat.records.conversions import GOAL_TYPES, ConversionType, iter_conversions
from welcomemat.zones.contract import ZoneContract
from welcomemat.zones.published import iter_published
from welcomemat.zones.resolution import RUNG_ORDER
from welcomemat.zones.zoneset import Rung, ZoneSet

__all__ = ["campaign_lift_report", "collect_outcomes", "cta_zone_ids", "headline_fact_type"]


def cta_zone_ids(zones: Mapping[str, ZoneContract], zone_ids: Iterable[str]) -> frozenset[str]:
    """The zones whose clicks count as CTA clicks: the link zones the campaign's pages show."""
    return frozenset(z for z in zone_ids if (contract := zones.get(z)) is not None and contract.link)


_UNSEEN = (0, 0, 0)  # (views, QR scans, CTA clicks) of an account with no engagement


def collect_outcomes(
    client: redis.Redis,
    view: CampaignView,
    *,
    types: frozenset[ConversionType] | None = None,
    problems: list[str] | None = None,
    zone_sets: list[ZoneSet] | None = None,
) -> list[AccountOutcome]:
    """Every account with a published zone set, with its arm, visits, QR scans, CTA clicks and conversions.

    Engagement comes from the shared account records (`welcomemat.records.account_records`), conversions
    from `welcomemat.records.conversions` (of `types`; every goal type when None: a negative outcome
    is never a conversion, it is counted on its own). A record, zone set or
    conversion that does not decode is skipped and described in `problems`. `zone_sets`, when given,
    receives the population's zone sets (the results page's rung mix reads them: one pass).
    """
    sink: list[str] = problems if problems is not None else []
    tenant, campaign = view.tenant, view.campaign_id
    fraction = view.campaign.holdout_fraction
    arms: dict[str, Arm] = {}
    published: dict[str, ZoneSet] = {}
    for z in iter_published(client, tenant, campaign, sink):
        arms[z.account_id] = assign_arm(tenant, campaign, z.account_id, fraction)
        published[z.account_id] = z
    if zone_sets is not None:
        zone_sets.extend(published.values())
    cta_zones = cta_zone_ids(view.zones, view.campaign.page_zone_ids())
    engagement: dict[str, tuple[int, int, int]] = {}
    record_problems: list[StoredValueError] = []
    for record in iter_account_records(client, tenant, problems=record_problems):
        summary = record.engagement.get(campaign)
        if summary is None or record.account_id not in arms:
            continue
        clicks = sum(n for zone, n in summary.clicks_by_zone.items() if zone in cta_zones)
        engagement[record.account_id] = (summary.views, summary.qr_scans, clicks)
    sink.extend(str(p) for p in record_problems)
    conversion_problems: list[StoredValueError] = []  # one bad stored conversion costs only itself
    goals = GOAL_TYPES if types is None else types
    conversions: Counter[str] = Counter()
    negatives: Counter[tuple[str, ConversionType]] = Counter()
    for conversion in iter_conversions(client, tenant, campaign, problems=conversion_problems):
        if conversion.type in goals:
            conversions[conversion.account_id] += 1
        if conversion.type in (ConversionType.UNSUBSCRIBE, ConversionType.SPAM_COMPLAINT):
            negatives[(conversion.account_id, conversion.type)] += 1
    sink.extend(str(p) for p in conversion_problems)
    return [
        AccountOutcome(
            account_id=account_id,
            arm=arm,
            views=engagement.get(account_id, _UNSEEN)[0],
            qr_scans=engagement.get(account_id, _UNSEEN)[1],
            cta_clicks=engagement.get(account_id, _UNSEEN)[2],
            conversions=conversions.get(account_id, 0),
            unsubscribes=negatives.get((account_id, ConversionType.UNSUBSCRIBE), 0),
            spam_complaints=negatives.get((account_id, ConversionType.SPAM_COMPLAINT), 0),
            guideline_version=published[account_id].guideline_version,
            variant=published[account_id].variant,
            segment=published[account_id].segment,
            fact_type=headline_fact_type(published[account_id]),
            rung=_best_rung(published[account_id]),
        )
        for account_id, arm in arms.items()
    ]


def headline_fact_type(zone_set: ZoneSet) -> str | None:
    """The fact type(s) the first personal zone cites (`funding`, `funding+hiring`); None: none personal."""
    for zone in zone_set.zones:
        if zone.rung is Rung.PERSONAL:
            reason = parse_reason(zone.reason)
            if reason.code is ZoneReason.PERSONAL and reason.detail:
                return reason.detail
            return "library"
    return None


def _best_rung(zone_set: ZoneSet) -> str | None:
    rungs = {z.rung for z in zone_set.zones}
    return next((r.value for r in RUNG_ORDER if r in rungs), None)


def campaign_lift_report(
    client: redis.Redis,
    view: CampaignView,
    *,
    now: datetime,
    types: frozenset[ConversionType] | None = None,
    problems: list[str] | None = None,
) -> LiftReport:
    """The lift report of a published campaign, read from Redis now."""
    outcomes = collect_outcomes(client, view, types=types, problems=problems)
    return build_lift_report(
        outcomes,
        tenant=view.tenant,
        campaign=view.campaign_id,
        holdout_fraction=view.campaign.holdout_fraction,
        generated_at=now,
        conversion_types=[t.value for t in (types or GOAL_TYPES)],
    )
