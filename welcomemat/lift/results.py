"""A campaign's results, as the results page shows and downloads them (`/admin/results/{campaign}`).

One read of the population (`welcomemat.lift.outcomes.collect_outcomes`), from which everything is
built: the lift report (`lift`: exactly what `welcomemat report lift --json` prints), the
variants' reports (`variants`: `report lift --by variant --json`, with an experiment), the
daily series (`welcomemat.lift.daily`), the rung mix and fallback reasons of the zones the
personal arm is served, the fact types ranked by their personal CTA click rate, and what the
last precompute run cost per personal account it published (`welcomemat.model_cost`).

`ResultsReport.model_dump(mode="json")` is the JSON download; `results_csv` the CSV one,
written from the same model (one row per number), so the two always carry the same numbers.
Rates are per account assigned to the arm (intent to treat); the lift's reached-only view
comes out under groups named `reached_only/<metric>`, its negative outcomes under their type.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterator
from datetime import date, datetime

import redis
from pydantic import BaseModel, ConfigDict

from welcomemat.arms import Arm, assign_arm
from welcomemat.campaign.view import CampaignView
from welcomemat.errors import StoredValueError
from welcomemat.lift.comparison import LiftReport, Metric, RateEstimate, build_lift_report
from welcomemat.lift.daily import DEFAULT_DAYS, DailyCounts, daily_counts
from welcomemat.lift.groups import (
    NO_GROUP,
    GroupedLiftReport,
    LiftDimension,
    build_grouped_report,
)
from welcomemat.lift.negatives import NegativeOutcome
from welcomemat.lift.outcomes import collect_outcomes, cta_zone_ids
from welcomemat.lift.rate_comparison import Compared, RateComparison
from welcomemat.model_cost import LastRunCost, read_last_run_cost
from welcomemat.reasons import parse_reason
from welcomemat.records.conversions import GOAL_TYPES, ConversionType
from welcomemat.spreadsheet import spreadsheet_safe
from welcomemat.zones.resolution import RUNG_ORDER
from welcomemat.zones.zoneset import Rung, ZoneSet

__all__ = [
    "CSV_HEADER",
    "RANKED_FACT_TYPES",
    "FactTypeResult",
    "ResultsReport",
    "campaign_results",
    "results_csv",
    "results_rows",
]

# How many fact types the page names as the best and the worst.
RANKED_FACT_TYPES = 3
CSV_HEADER = ("section", "group", "day", "measure", "value")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FactTypeResult(_Model):
    """One fact type (the one the first personal zone cites) among personal accounts; its rates
    are per account assigned (intent to treat), as the report's."""

    fact_type: str
    accounts: int
    reached: int
    cta_click_rate: RateEstimate
    conversion_rate: RateEstimate


class ResultsReport(_Model):
    """Everything the results page shows, and what its JSON download holds."""

    tenant: str
    campaign: str
    generated_at: datetime
    first_day: date
    last_day: date
    lift: LiftReport
    variants: GroupedLiftReport | None
    daily: tuple[DailyCounts, ...]
    # Zones served to personal-arm accounts, by rung; those below personal, by why.
    rung_mix: dict[str, int]
    fallback_reasons: dict[str, int]
    # Ranked by CTA click rate, best first (fact types with reached personal accounts).
    fact_types: tuple[FactTypeResult, ...]
    top_fact_types: tuple[str, ...]
    bottom_fact_types: tuple[str, ...]
    # The last precompute run's cost (stored run report); None: no run stored, or one from before
    # costs were kept. Its per-account figure is None when the model had no price ("unknown").
    last_run_cost: LastRunCost | None = None


def _zone_tallies(
    zone_sets: list[ZoneSet], tenant: str, campaign: str, holdout: float
) -> tuple[dict[str, int], dict[str, int]]:
    rungs: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for zone_set in zone_sets:
        if assign_arm(tenant, campaign, zone_set.account_id, holdout) is not Arm.PERSONAL:
            continue  # the holdout is never shown its zone set
        for zone in zone_set.zones:
            rungs[zone.rung.value] += 1
            if zone.rung is not Rung.PERSONAL:
                reasons[parse_reason(zone.reason).name] += 1
    mix = {r.value: rungs[r.value] for r in RUNG_ORDER}
    return mix, dict(sorted(reasons.items(), key=lambda item: (-item[1], item[0])))


def _fact_types(grouped: GroupedLiftReport) -> list[FactTypeResult]:
    found = []
    for g in grouped.groups:
        personal = g.report.arm(Arm.PERSONAL)
        if g.group == NO_GROUP or personal.reached == 0:
            continue
        found.append(
            FactTypeResult(
                fact_type=g.group,
                accounts=personal.accounts,
                reached=personal.reached,
                cta_click_rate=g.report.metric(Metric.CTA_CLICK_RATE).variant_rate,
                conversion_rate=g.report.metric(Metric.CONVERSION_RATE).variant_rate,
            )
        )
    return sorted(found, key=lambda f: (-(f.cta_click_rate.rate or 0.0), -f.reached, f.fact_type))


def campaign_results(
    client: redis.Redis,
    view: CampaignView,
    *,
    now: datetime,
    days: int = DEFAULT_DAYS,
    types: frozenset[ConversionType] | None = None,
    problems: list[str] | None = None,
) -> ResultsReport:
    """The campaign's results, read from Redis now (the clock is the caller's)."""
    sink: list[str] = problems if problems is not None else []
    zone_sets: list[ZoneSet] = []
    outcomes = collect_outcomes(client, view, types=types, problems=sink, zone_sets=zone_sets)
    tenant, campaign, holdout = view.tenant, view.campaign_id, view.campaign.holdout_fraction
    conversion_types = [t.value for t in (types or GOAL_TYPES)]

    def grouped(by: LiftDimension, variants: list[str]) -> GroupedLiftReport:
        return build_grouped_report(
            outcomes,
            by,
            tenant=tenant,
            campaign=campaign,
            holdout_fraction=holdout,
            generated_at=now,
            variants=variants,
            conversion_types=conversion_types,
        )

    lift = build_lift_report(
        outcomes,
        tenant=tenant,
        campaign=campaign,
        holdout_fraction=holdout,
        generated_at=now,
        conversion_types=conversion_types,
    )
    experiment = view.campaign.experiment
    variant_ids = [v.id for v in experiment.variants] if experiment is not None else []
    variants = grouped(LiftDimension.VARIANT, variant_ids) if experiment is not None else None
    ranked = _fact_types(grouped(LiftDimension.FACT_TYPE, []))
    top = [f.fact_type for f in ranked[:RANKED_FACT_TYPES]]
    bottom = [f.fact_type for f in reversed(ranked) if f.fact_type not in top][:RANKED_FACT_TYPES]
    daily = daily_counts(
        client,
        tenant,
        campaign,
        outcomes,
        cta_zone_ids(view.zones, view.campaign.page_zone_ids()),
        now=now,
        days=days,
        variants=variant_ids,
        types=types or GOAL_TYPES,  # a negative outcome is never a conversion, per day either
        problems=sink,
    )
    mix, reasons = _zone_tallies(zone_sets, tenant, campaign, holdout)
    try:
        last_run = read_last_run_cost(client, tenant, campaign)
    except StoredValueError as exc:  # left out and named, as every stored value that does not decode
        sink.append(str(exc))
        last_run = None
    sink[:] = dict.fromkeys(sink)  # the lift and the daily series read conversions: each bad one once
    return ResultsReport(
        tenant=tenant,
        campaign=campaign,
        generated_at=now,
        first_day=daily[0].day,
        last_day=daily[-1].day,
        lift=lift,
        variants=variants,
        daily=tuple(daily),
        rung_mix=mix,
        fallback_reasons=reasons,
        fact_types=tuple(ranked),
        top_fact_types=tuple(top),
        bottom_fact_types=tuple(bottom),
        last_run_cost=last_run,
    )


# -- the CSV download ------------------------------------------------------------------------------

Number = int | float | None


def _rate(prefix: str, estimate: RateEstimate) -> Iterator[tuple[str, Number]]:
    yield f"{prefix}_successes", estimate.successes
    yield f"{prefix}_trials", estimate.trials
    yield f"{prefix}_rate", estimate.rate
    yield f"{prefix}_low", estimate.low
    yield f"{prefix}_high", estimate.high


def _comparison(c: RateComparison | NegativeOutcome) -> Iterator[tuple[str, Number]]:
    if isinstance(c, NegativeOutcome):
        yield from _rate("personal", c.personal)
        yield from _rate("holdout", c.holdout)
    else:  # the rows' names are the JSON's: the arms by name, a contrast's variants by role
        arms = c.compared is Compared.ARMS
        yield from _rate("personal" if arms else "variant", c.variant_rate)
        yield from _rate("holdout" if arms else "reference", c.reference_rate)
    yield "difference", c.difference
    yield "difference_low", c.difference_low
    yield "difference_high", c.difference_high
    yield "sequential_low", c.sequential_low
    yield "sequential_high", c.sequential_high
    if isinstance(c, NegativeOutcome):
        yield "warn_threshold", c.warn_threshold
        yield "raised", int(c.raised)
    else:
        yield "minimum_detectable_effect", c.minimum_detectable_effect


def _lift_rows(section: str, prefix: str, report: LiftReport) -> Iterator[tuple[str, str, str, str, Number]]:
    for a in report.arms:
        for name, value in a.model_dump(exclude={"arm"}).items():
            yield section, f"{prefix}{a.arm.value}", "", name, value
    for m in report.metrics:  # per account assigned (intent to treat)
        for name, value in _comparison(m):
            yield section, f"{prefix}{m.metric.value}", "", name, value
    for m in report.reached_only.metrics:  # among visitors: descriptive, labelled in the group
        for name, value in _comparison(m):
            yield section, f"{prefix}reached_only/{m.metric.value}", "", name, value
    for n in report.negative_outcomes:
        for name, value in _comparison(n):
            yield section, f"{prefix}{n.outcome.value}", "", name, value


def results_rows(report: ResultsReport) -> Iterator[tuple[str, str, str, str, Number]]:
    """Every number of the report as (section, group, day, measure, value)."""
    yield from _lift_rows("lift", "", report.lift)
    if report.variants is not None:
        for g in report.variants.groups:
            yield from _lift_rows("variant_lift", f"{g.group}/", g.report)
        for c in report.variants.contrasts:
            for name, value in _comparison(c):
                yield "variant_contrast", f"{c.variant}/{c.reference}/{c.metric.value}", "", name, value
    for d in report.daily:
        group = d.arm.value if d.variant is None else f"{d.arm.value}/{d.variant}"
        for name in ("visits", "reached_accounts", "cta_clicks", "conversions"):
            yield "daily", group, d.day.isoformat(), name, getattr(d, name)
    for rung, count in report.rung_mix.items():
        yield "rung_mix", rung, "", "zones", count
    for reason, count in report.fallback_reasons.items():
        yield "fallback_reasons", reason, "", "zones", count
    for f in report.fact_types:
        yield "fact_types", f.fact_type, "", "accounts", f.accounts
        yield "fact_types", f.fact_type, "", "reached", f.reached
        for name, value in _rate("cta_click", f.cta_click_rate):
            yield "fact_types", f.fact_type, "", name, value
        for name, value in _rate("conversion", f.conversion_rate):
            yield "fact_types", f.fact_type, "", name, value
    if report.last_run_cost is not None:
        run, cost = report.last_run_cost, report.last_run_cost.cost
        total, each = cost.cost_usd, run.cost_per_personal_account_usd
        model = cost.model or ""  # empty: no model wrote (the offline composer)
        yield "run_cost", model, "", "model_calls", cost.model_calls
        yield "run_cost", model, "", "input_tokens", cost.input_tokens
        yield "run_cost", model, "", "output_tokens", cost.output_tokens
        yield "run_cost", model, "", "cost_usd", None if total is None else float(total)
        yield "run_cost", model, "", "personal_published", run.personal_published
        yield "run_cost", model, "", "cost_per_personal_account_usd", None if each is None else float(each)


def _cell(value: Number) -> str:
    return "" if value is None else repr(value)  # repr: a float's every digit, so CSV == JSON


def results_csv(report: ResultsReport) -> str:
    """The report as CSV (`CSV_HEADER`, one number a row); text cells guarded against formulas."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_HEADER)
    for section, group, day, measure, value in results_rows(report):
        writer.writerow([section, spreadsheet_safe(group), day, measure, _cell(value)])
    return out.getvalue()
