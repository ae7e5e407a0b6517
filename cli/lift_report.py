"""`welcomemat report lift CAMPAIGN [--json] [--type T ...] [--by DIMENSION]`: the lift report, printed.

The report itself (population, arms, Wilson and Newcombe intervals, always-valid intervals,
minimum detectable effect, sample-ratio check, negative outcomes, warnings) is
`welcomemat.lift.comparison`, the same one the admin's lift page shows. The table puts the rates per
account assigned (intent to treat) first, then the reached-only view under its label, then
the negative outcomes; per group and per copy variant it is `welcomemat.lift.groups`.
This module resolves the campaign, reads the report from Redis now and prints it as a table
or as JSON (the same numbers).
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime

from welcomemat.campaign.ref import resolve_campaign_ref
from welcomemat.campaign.view import load_campaign_view
from welcomemat.errors import InputError
from welcomemat.lift.comparison import LiftReport, RateEstimate
from welcomemat.lift.groups import GroupedLiftReport, LiftDimension, campaign_grouped_report
from welcomemat.lift.negatives import NegativeOutcome
from welcomemat.lift.outcomes import campaign_lift_report
from welcomemat.lift.rate_comparison import RateComparison
from welcomemat.records.conversions import ConversionType, goal_types
from welcomemat.settings import Settings
from welcomemat.storage.connection import connect, resolve_redis

__all__ = ["format_grouped_report", "format_lift_report", "run_report_lift"]


def _pct(estimate: RateEstimate) -> str:
    if estimate.rate is None:
        return "n/a"
    return f"{estimate.rate:6.1%} [{estimate.low:.1%}, {estimate.high:.1%}]"


def format_lift_report(report: LiftReport) -> str:
    """The report as the plain-text table `welcomemat report lift` prints."""
    pct = f"{report.confidence:.0%}"
    lines = [
        f"lift {report.tenant}/{report.campaign} at {report.generated_at:%Y-%m-%d %H:%M} UTC "
        f"(holdout {report.holdout_fraction:.0%}; conversions: {', '.join(report.conversion_types)})",
        "",
        f"{'arm':<10}{'accounts':>10}{'reached':>10}{'visits':>10}{'cta clicks':>12}{'conversions':>13}"
        f"{'unsubscribes':>14}{'spam complaints':>17}",
    ]
    for a in report.arms:
        lines.append(
            f"{a.arm.value:<10}{a.accounts:>10}{a.reached:>10}{a.visits:>10}{a.cta_clicks:>12}{a.conversions:>13}"
            f"{a.unsubscribes:>14}{a.spam_complaints:>17}"
        )
    header = (
        f"{'metric':<18}{'personal (' + pct + ' interval)':<34}{'holdout':<34}"
        f"{'difference [fixed]':<30}{'always-valid':<18}mde"
    )
    view = report.reached_only
    lines += ["", report.question, header]
    lines += [_metric_row(m) for m in report.metrics]
    lines += ["", *(m.conclusion for m in report.metrics)]
    lines += ["", f"{view.label}. {view.question}", header]
    lines += [_metric_row(m) for m in view.metrics]
    lines += ["", *(m.conclusion for m in view.metrics)]
    lines += [
        "",
        "Negative outcomes, per account assigned (a warning when the personal arm raises one):",
        f"{'outcome':<18}{'personal':<34}{'holdout':<34}{'difference [fixed]':<30}always-valid",
    ]
    lines += [_negative_row(n) for n in report.negative_outcomes]
    ratio = report.sample_ratio
    lines += [
        "",
        *(n.conclusion for n in report.negative_outcomes),
        f"Arms: {', '.join(f'{n} {c}' for n, c in ratio.observed.items())} accounts; sample-ratio "
        f"check p = {ratio.p_value:.3g}{' (MISMATCH)' if ratio.mismatch else ''}.",
    ]
    if report.warnings:
        lines += ["", "Warnings:", *(f"  - {w}" for w in report.warnings)]
    lines += [
        "",
        "Rates per account (assigned, unless under the visited-only label); "
        f"intervals: {report.interval_method}; difference: {report.difference_method}; "
        f"always-valid: {report.sequential_method}; mde: minimum detectable effect at 80% power.",
    ]
    return "\n".join(lines)


def _metric_row(m: RateComparison) -> str:
    return f"{m.metric.value:<18}{_pct(m.variant_rate):<34}{_pct(m.reference_rate):<34}{_difference_cells(m)}"


def _negative_row(n: NegativeOutcome) -> str:
    diff = seq = "n/a"
    if n.difference is not None:
        diff = f"{n.difference * 100:+.1f} pts {_span(n.difference_low, n.difference_high)}"
        seq = _span(n.sequential_low, n.sequential_high)
    return f"{n.outcome.value:<18}{_pct(n.personal):<34}{_pct(n.holdout):<34}{diff:<30}{seq:<18}".rstrip()


def _span(low: float, high: float) -> str:
    return f"[{low * 100:+.1f}, {high * 100:+.1f}]"


def _difference_cells(c: RateComparison) -> str:
    """The difference with its fixed interval, the always-valid interval and the MDE, as table cells."""
    diff = seq = "n/a"
    if c.difference is not None:
        diff = f"{c.difference * 100:+.1f} pts {_span(c.difference_low, c.difference_high)}"
        seq = _span(c.sequential_low, c.sequential_high)
    mde = "n/a" if c.minimum_detectable_effect is None else f"{c.minimum_detectable_effect * 100:.1f} pts"
    return f"{diff:<30}{seq:<18}{mde}"


def format_grouped_report(grouped: GroupedLiftReport) -> str:
    """The per-group reports, the variant contrasts and the warnings, as plain text."""
    parts = [f"{grouped.by.value} {g.group}\n{format_lift_report(g.report)}" for g in grouped.groups]
    if grouped.contrasts:
        lines = [
            "Variants against the reference (personal accounts only, per account assigned to each variant):",
            f"{'variant':<16}{'metric':<18}{'rate':<12}{'reference':<12}{'difference [fixed]':<30}"
            f"{'always-valid':<18}mde",
        ]
        for c in grouped.contrasts:
            rate = f"{c.variant_rate.rate:.1%}" if c.variant_rate.rate is not None else "n/a"
            ref = f"{c.reference_rate.rate:.1%}" if c.reference_rate.rate is not None else "n/a"
            lines.append(f"{c.variant:<16}{c.metric.value:<18}{rate:<12}{ref:<12}{_difference_cells(c)}")
        lines += ["", *(c.conclusion for c in grouped.contrasts)]
        parts.append("\n".join(lines))
    if grouped.variant_sample_ratio is not None:
        ratio = grouped.variant_sample_ratio
        parts.append(
            f"Variants: {', '.join(f'{n} {c}' for n, c in ratio.observed.items())} accounts; sample-ratio "
            f"check p = {ratio.p_value:.3g}{' (MISMATCH)' if ratio.mismatch else ''}."
        )
    if grouped.warnings:
        parts.append("\n".join(["Warnings (whole population):", *(f"  - {w}" for w in grouped.warnings)]))
    return "\n\n".join(parts)


def run_report_lift(
    campaign_ref: str, *, as_json: bool, types: list[str] | None, by: str | None = None
) -> int:
    """`welcomemat report lift CAMPAIGN [--json] [--type T ...] [--by guideline_version]`.

    `--by DIMENSION` (variant, fact_type, segment, guideline_version, rung): one report per
    group, and for `variant` each variant against the reference (`welcomemat.lift.groups`).
    """
    try:
        chosen: frozenset[ConversionType] | None = goal_types(types or ())
    except ValueError as exc:  # an unknown type, or a negative outcome (never a conversion)
        raise InputError(str(exc), field="--type") from None
    settings = Settings.from_env()
    client = connect(resolve_redis(settings))
    problems: list[str] = []
    try:
        tenant, campaign = resolve_campaign_ref(campaign_ref, client=client)
        view = load_campaign_view(client, tenant, campaign)
        if by is not None:
            grouped = campaign_grouped_report(
                client, view, LiftDimension(by), now=datetime.now(UTC), types=chosen, problems=problems
            )
        else:
            report = campaign_lift_report(
                client, view, now=datetime.now(UTC), types=chosen, problems=problems
            )
    finally:
        client.close()
    if by is not None:
        print(grouped.model_dump_json(indent=2) if as_json else format_grouped_report(grouped))
    elif as_json:
        print(report.model_dump_json(indent=2))
    else:
        print(format_lift_report(report))
    for problem in problems:
        print(f"welcomemat: skipped: {problem}", file=sys.stderr)
    return 0
