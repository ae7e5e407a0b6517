"""`welcomemat report lift`: personal vs holdout with intervals (`cli.lift_report`)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run_lift"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = sub.add_parser(
        "report",
        help="reports on a campaign's outcomes",
        description="Reports on a campaign's outcomes: `lift`, personal copy against the holdout.",
    )
    report_sub = report.add_subparsers(dest="report", metavar="REPORT", required=True)
    lift = report_sub.add_parser(
        "lift",
        help="personal vs holdout (and copy variants): reach, CTA clicks, conversions, with 95%% intervals",
        description="Personal vs holdout: accounts, reached, visits, CTA clicks, conversions, unsubscribes "
        "and spam complaints; rates per account assigned to each arm (intent to treat) with 95% intervals, "
        "the same among accounts that visited as a second, labelled view, negative outcomes with a warning "
        "when personal raises them, the difference with a fixed and an always-valid (sequential) 95% "
        "interval and the minimum detectable effect. Plain warnings when samples are too small, when a "
        "difference holds only on a first look (peeking) and on a sample-ratio mismatch. --by: one report "
        "per group, and with `variant` each copy variant against the first. --json: the same numbers.",
    )
    lift.add_argument("campaign", help="tenant/campaign, campaign.yaml, or a published campaign id")
    lift.add_argument("--json", action="store_true", help="print the report as JSON")
    lift.add_argument(
        "--type",
        action="append",
        default=None,
        metavar="TYPE",
        # Checked by `welcomemat.records.conversions.goal_types` (exit 2 naming --type): a negative outcome
        # is refused with its own reason, which argparse's choices could not say.
        help="count only these conversion types: positive_reply, meeting_booked, opportunity, "
        "closed_won (repeatable; default: every one). Unsubscribes and spam complaints are shown on "
        "their own",
    )
    lift.add_argument(
        "--by",
        choices=["variant", "fact_type", "segment", "guideline_version", "rung"],
        default=None,
        help="one report per group (copy variant, headline fact type, segment, guideline version, "
        "most personal rung); with variant, each variant against the first",
    )
    lift.set_defaults(handler=run_lift)


def run_lift(args: argparse.Namespace) -> int:
    from cli.lift_report import run_report_lift

    return run_report_lift(args.campaign, as_json=args.json, types=args.type, by=args.by)
