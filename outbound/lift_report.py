"""`welcomemat report lift CAMPAIGN [--json] [--type T ...]`: the lift report, printed.

The report itself (population, arms, Wilson and Newcombe intervals, warnings) is
`welcomemat.lift`, the same one the admin's lift page shows; this module resolves the
campaign, reads the report from Redis now and prints it as a table or as JSON.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

from welcomemat.campaign_ref import resolve_campaign_ref
from welcomemat.campaign_view import load_campaign_view
from welcomemat.connection import connect, resolve_redis
from welcomemat.conversions import ConversionType
from welcomemat.errors import InputError
from welcomemat.lift import (
    LiftReport,
    RateEstimate,
    campaign_lift_report,
    campaign_lift_reports_by_guideline_version,
)
from welcomemat.settings import Settings

__all__ = ["format_lift_report", "run_report_lift"]


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
        f"{'arm':<10}{'accounts':>10}{'reached':>10}{'visits':>10}{'cta clicks':>12}{'conversions':>13}",
    ]
    for a in report.arms:
        lines.append(
            f"{a.arm.value:<10}{a.accounts:>10}{a.reached:>10}{a.visits:>10}{a.cta_clicks:>12}{a.conversions:>13}"
        )
    lines += ["", f"{'metric':<18}{'personal (' + pct + ' interval)':<34}{'holdout':<34}difference"]
    for m in report.metrics:
        diff = "n/a"
        if m.difference is not None:
            low, high = m.difference_low * 100, m.difference_high * 100
            diff = f"{m.difference * 100:+.1f} pts [{low:+.1f}, {high:+.1f}]"
        lines.append(f"{m.metric.value:<18}{_pct(m.personal):<34}{_pct(m.holdout):<34}{diff}")
    lines += ["", *(m.conclusion for m in report.metrics)]
    if report.warnings:
        lines += ["", "Warnings:", *(f"  - {w}" for w in report.warnings)]
    lines += [
        "",
        f"Rates per account; intervals: {report.interval_method}; difference: {report.difference_method}.",
    ]
    return "\n".join(lines)


def run_report_lift(
    campaign_ref: str, *, as_json: bool, types: list[str] | None, by: str | None = None
) -> int:
    """`welcomemat report lift CAMPAIGN [--json] [--type T ...] [--by guideline_version]`.

    `--by guideline_version`: one report per guideline version that wrote the published zone
    sets (JSON: an object by version), so a change of guidelines can be judged on its lift.
    """
    chosen: frozenset[ConversionType] | None = None
    if types:
        known = {t.value for t in ConversionType}
        for t in types:
            if t not in known:
                raise InputError(
                    f"unknown conversion type {t!r}; use {', '.join(sorted(known))}", field="--type"
                )
        chosen = frozenset(ConversionType(t) for t in types)
    settings = Settings.from_env()
    client = connect(resolve_redis(settings))
    problems: list[str] = []
    try:
        tenant, campaign = resolve_campaign_ref(campaign_ref, client=client)
        view = load_campaign_view(client, tenant, campaign)
        if by == "guideline_version":
            reports = campaign_lift_reports_by_guideline_version(
                client, view, now=datetime.now(UTC), types=chosen, problems=problems
            )
        else:
            report = campaign_lift_report(
                client, view, now=datetime.now(UTC), types=chosen, problems=problems
            )
    finally:
        client.close()
    if by == "guideline_version":
        if as_json:
            print(json.dumps({v: r.model_dump(mode="json") for v, r in reports.items()}, indent=2))
        else:
            print("\n\n".join(f"guideline version {v}\n{format_lift_report(r)}" for v, r in reports.items()))
    elif as_json:
        print(report.model_dump_json(indent=2))
    else:
        print(format_lift_report(report))
    for problem in problems:
        print(f"welcomemat: skipped: {problem}", file=sys.stderr)
    return 0
