"""`welcomemat guidelines propose|promote|rollback`: versioned guidelines (`cli.guidelines`)."""

from __future__ import annotations

import argparse

from cli.operator import add_by_argument

__all__ = ["register", "run_promote", "run_propose", "run_rollback"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    guidelines = sub.add_parser(
        "guidelines", help="versioned guidelines: replay a candidate, promote it, roll it back"
    )
    actions = guidelines.add_subparsers(dest="guidelines", metavar="ACTION", required=True)

    propose = actions.add_parser(
        "propose",
        help="replay a candidate campaign.yaml against the replay, held-out and regression sets; "
        "write its report (publishes nothing; exit 1 when NOT READY)",
    )
    propose.add_argument("campaign", help="the campaign's campaign.yaml")
    propose.add_argument(
        "candidate", metavar="NEW.yaml", help="the candidate: campaign.yaml with new guidelines"
    )
    propose.add_argument("--reason", default=None, help="why the guidelines change (required)")
    propose.add_argument(
        "--evidence", action="append", default=None, help="a link or note behind the change (repeatable)"
    )
    propose.add_argument(
        "--out", default=None, help="the report file (default guidelines/<version>.report.json)"
    )
    propose.add_argument(
        "--as-of", default=None, help="replay as of this day (default: after the newest fact)"
    )
    propose.add_argument("--provider", choices=["offline", "openai"], default="offline")
    propose.add_argument("--json", action="store_true", help="print the report as JSON")
    add_by_argument(propose)
    propose.set_defaults(handler=run_propose)

    promote = actions.add_parser(
        "promote",
        help="approve a READY candidate report; with its approvers (two for risk_tier: high) it becomes "
        "campaign.yaml",
    )
    promote.add_argument("campaign", help="the campaign's campaign.yaml")
    promote.add_argument("report", help="the report `propose` wrote")
    add_by_argument(promote)
    promote.set_defaults(handler=run_promote)

    rollback = actions.add_parser("rollback", help="restore the previous guideline version")
    rollback.add_argument("campaign", help="the campaign's campaign.yaml")
    rollback.add_argument("--reason", default=None, help="why, for the audit log (required)")
    add_by_argument(rollback)
    rollback.set_defaults(handler=run_rollback)


def run_propose(args: argparse.Namespace) -> int:
    from cli import guidelines
    from cli.operator import cli_auditor

    return guidelines.run_propose(
        args.campaign,
        args.candidate,
        reason=args.reason,
        evidence=args.evidence,
        out=args.out,
        as_of=args.as_of,
        provider=args.provider,
        auditor=cli_auditor(args.by),
        as_json=args.json,
    )


def run_promote(args: argparse.Namespace) -> int:
    from cli import guidelines
    from cli.operator import cli_auditor

    return guidelines.run_promote(args.campaign, args.report, auditor=cli_auditor(args.by))


def run_rollback(args: argparse.Namespace) -> int:
    from cli import guidelines
    from cli.operator import cli_auditor

    return guidelines.run_rollback(args.campaign, reason=args.reason, auditor=cli_auditor(args.by))
