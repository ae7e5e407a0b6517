"""What a precompute run and the population QA print for a person: the run report, the verdict.

Shared by `welcomemat precompute`, `welcomemat qa`, `welcomemat precompute-status` and the
demo, so every command says a run's outcome in the same words (`--json` prints the reports'
own serializers instead).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from precompute.facts.refusals import FactRefusal
from precompute.findings import format_findings
from precompute.provider_faults import deferral_lines, every_call_failed
from precompute.qa import QaReport
from precompute.report import RunReport
from welcomemat.model_cost import cost_line

__all__ = ["FACT_REFUSALS_SHOWN", "print_fact_refusals", "print_qa", "print_run_report"]


def print_run_report(report: RunReport) -> None:
    out = sys.stdout
    print(
        f"precompute {report.tenant}/{report.campaign} ({report.provider}): {report.accounts} accounts "
        f"from {report.rows_read} rows in {report.seconds:.2f}s ({report.accounts_per_second:.0f}/s)",
        file=out,
    )
    print(
        f"  published {report.published} new versions, {report.unchanged} unchanged"
        + (f", {report.resumed} resumed" if report.resumed else "")
        + f", {report.pending_review} waiting for review, {len(report.failed)} failed",
        file=out,
    )
    if report.suppressed or report.contacts_suppressed:
        print(
            f"  left out as erased (welcomemat erase): {report.suppressed} accounts, "
            f"{report.contacts_suppressed} contacts of published accounts",
            file=out,
        )
    print("  accounts by mode: " + ", ".join(f"{k} {v}" for k, v in sorted(report.by_mode.items())), file=out)
    print(
        "  zones by rung:    " + ", ".join(f"{k} {v}" for k, v in sorted(report.zones_by_rung.items())),
        file=out,
    )
    top = list(report.fallback_reasons.items())[:6]
    if top:
        print("  fallback reasons: " + ", ".join(f"{k} {v}" for k, v in top), file=out)
    if report.check_failures:
        print(
            "  check failures:   "
            + ", ".join(f"{k} {v}" for k, v in list(report.check_failures.items())[:6]),
            file=out,
        )
    if report.model_calls or report.deferred:
        print(
            f"  model calls {report.model_calls} ({report.retries} retries), tokens {report.tokens}, "
            f"circuit breaker opened {report.breaker_openings} times, {report.deferred} accounts deferred "
            "(asked again on the next run)",
            file=out,
        )
    # One line per provider fault, with its fix: a fault is no decision (precompute.provider_faults).
    for line in deferral_lines(report.deferred_causes):
        print(f"  {line}", file=out)
    if every_call_failed(report):
        print(
            "  every model call failed: published versions were kept, nothing new was written; "
            "fix the cause above and run again",
            file=out,
        )
    print(f"  {cost_line(report.cost)}", file=out)
    if report.budget_reached:
        print(
            f"  budget {report.budget} reached: {report.budget_deferred} accounts deferred, not started and "
            "not published (no fallback written); the next run does them",
            file=out,
        )
    for row in report.malformed[:20]:
        where = f"{row.file}:{row.line}" + (f", field '{row.field}'" if row.field else "")
        print(f"  skipped {where}: {row.reason}", file=sys.stderr)
    if len(report.malformed) > 20:
        print(f"  ... and {len(report.malformed) - 20} more skipped rows (see --json)", file=sys.stderr)
    for failure in report.failed[:20]:
        print(f"  failed {failure.account_id}: {failure.reason}", file=sys.stderr)
    if report.theme_refused:
        print(
            f"  {len(report.theme_refused)} accounts shown in the built-in frame: their pages fail the theme",
            file=out,
        )
    for refused in report.theme_refused[:20]:
        print(f"  theme refused for {refused.account_id}: {refused.reason}", file=sys.stderr)


FACT_REFUSALS_SHOWN = 3  # reasons listed with an example; the rest are counted on one line


def print_fact_refusals(refusals: Sequence[FactRefusal]) -> None:
    """The top reasons facts were refused, each with one example saying what would pass."""
    if not refusals:
        return
    total = sum(r.facts for r in refusals)
    print(f"  facts refused: {total}; top reasons (welcomemat explain CAMPAIGN ACCOUNT shows each):")
    for refusal in refusals[:FACT_REFUSALS_SHOWN]:
        print(
            f"    {refusal.reason} {refusal.facts} facts, {refusal.accounts} accounts; e.g. {refusal.example}"
        )
    rest = refusals[FACT_REFUSALS_SHOWN:]
    if rest:
        print("    also: " + ", ".join(f"{r.reason} {r.facts}" for r in rest))


def print_qa(report: QaReport) -> None:
    print(f"QA {report.tenant}/{report.campaign}: {report.verdict}")
    print(
        f"  {report.accounts} zone sets; by status: "
        + ", ".join(f"{k} {v}" for k, v in sorted(report.by_status.items()))
    )
    print(
        "  by mode: "
        + ", ".join(f"{k} {v}" for k, v in sorted(report.by_mode.items()))
        + f"; fallback rate {report.fallback_rate:.1%}"
        + f" (max {report.thresholds.get('max_fallback_rate', 0):.0%})"
    )
    print(
        f"  personal attempts {report.personal_attempts}, failed checks {report.check_failed} "
        f"({report.check_failure_rate:.1%}, max {report.thresholds.get('max_check_failure_rate', 0):.0%})"
    )
    for g in report.by_guideline_version:
        print(
            f"  guidelines {g.guideline_version} ({(g.guideline_hash or 'no hash')[:12]}): "
            f"{g.accounts} accounts, "
            f"{g.personal_zones} personal zones, failed checks {g.check_failed}/{g.personal_attempts}"
        )
    if report.fallback_reasons:
        print("  fallback reasons: " + ", ".join(f"{k} {v}" for k, v in report.fallback_reasons.items()))
    print_fact_refusals(report.fact_refusals)
    if report.findings_by_code:
        print("  findings: " + ", ".join(f"{k} {v}" for k, v in report.findings_by_code.items()))
    blockers = [f for f in report.findings if f.severity == "blocker"][:10]
    for finding in blockers:
        print(f"    BLOCKER {finding.code} {finding.account_id} {finding.zone_id or ''}: {finding.detail}")
    print(f"  sample to read ({len(report.sample)} accounts, by segment/mode):")
    for item in report.sample[:12]:
        headline = next((z for z in item.zones if z.rung == "personal"), item.zones[0])
        print(f"    [{item.stratum}] {item.account_id}: “{headline.text}” ({headline.rung})")
    if report.cohort_findings is not None:
        for line in format_findings(report.cohort_findings):
            print(line)
