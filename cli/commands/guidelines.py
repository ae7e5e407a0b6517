"""`welcomemat guidelines propose|signoff|promote|rollback`: versioned guidelines
(`cli.guideline_versions`)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from cli.operator import add_by_argument

__all__ = ["register", "run_promote", "run_propose", "run_rollback", "run_signoff"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    guidelines = sub.add_parser(
        "guidelines",
        help="versioned guidelines: replay a candidate, promote it, roll it back",
        description="Versioned guidelines. `propose` replays a candidate campaign.yaml against the "
        "campaign's replay, held-out and regression account sets and writes its report; `signoff` records "
        "another person's check of a READY report (needed when a version says `risk_tier: high`); `promote` "
        "makes a READY candidate the active version; `rollback` restores the previous one. Each is "
        "audit-logged; zone sets change at the next `welcomemat precompute`.",
    )
    actions = guidelines.add_subparsers(dest="guidelines", metavar="ACTION", required=True)

    propose = actions.add_parser(
        "propose",
        help="replay a candidate campaign.yaml against the replay, held-out and regression sets; "
        "write its report (publishes nothing; exit 1 when NOT READY)",
        description="Replays a candidate campaign.yaml against the campaign's replay, held-out and "
        "regression account sets, under the active guidelines and under the candidate, with the same "
        "provider (offline by default). Writes the candidate report (`guidelines/<version>.report.json`: per "
        "set, passes, zones that changed rung or text, new blockers, the check-failure rate before and "
        "after, the guideline fields it changes, every field outside the bundle in which it differs, READY "
        "FOR PROMOTION or NOT READY) and a candidate change record. A regression case (account id) that "
        "changes rung or text makes it NOT READY unless named with --intended-change (then listed as "
        "intended; a name that is not a case is exit 2). Publishes nothing. Exit 1 when NOT READY, 2 on bad "
        "input.",
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
    propose.add_argument(
        "--intended-change",
        metavar="CASE",
        action="append",
        default=None,
        help="a regression case (account id) the change is meant to change (repeatable); any other "
        "regression case that changes makes the report NOT READY",
    )
    propose.add_argument(
        "--provider",
        choices=["offline", "openai"],
        default="offline",
        help="zone writer of both replays (default: offline)",
    )
    propose.add_argument("--json", action="store_true", help="print the report as JSON")
    add_by_argument(propose)
    propose.set_defaults(handler=run_propose)

    signoff = actions.add_parser(
        "signoff",
        help="sign off a READY report's diagnosis: the first of a high-risk change's two steps "
        "(risk_tier: high); someone else then promotes it",
        description="Records that --by checked a READY report's diagnosis (who and when, in the change "
        "record and the audit log): the first of a high-risk change's two steps, after which someone else "
        "promotes it. Refused (exit 2) when the report is not the candidate's latest or is already signed "
        "off.",
    )
    signoff.add_argument("campaign", help="the campaign's campaign.yaml")
    signoff.add_argument("report", help="the report `propose` wrote")
    add_by_argument(signoff)
    signoff.set_defaults(handler=run_signoff)

    promote = actions.add_parser(
        "promote",
        help="make a READY candidate's guidelines active: written into campaign.yaml, its other fields "
        "kept (risk_tier: high: after someone else's signoff)",
        description="Makes a READY report's candidate the active version: writes its guideline bundle into "
        "campaign.yaml, every other field and line of it kept, the previous file kept in guidelines/. "
        "Refused (exit 2): a NOT READY report; a candidate or the guidelines in campaign.yaml changed since; "
        "a candidate that changes a field outside the bundle that campaign.yaml does not have yet (named); "
        "and, when either version says `risk_tier: high`, no sign-off or a sign-off by the promoter.",
    )
    promote.add_argument("campaign", help="the campaign's campaign.yaml")
    promote.add_argument("report", help="the report `propose` wrote")
    add_by_argument(promote)
    promote.set_defaults(handler=run_promote)

    rollback = actions.add_parser(
        "rollback",
        help="restore the previous guideline version",
        description="Restores the active guideline version's previous one (campaign.yaml from guidelines/, "
        "the records in Redis), audit-logged; zone sets change at the next `welcomemat precompute`.",
    )
    rollback.add_argument("campaign", help="the campaign's campaign.yaml")
    rollback.add_argument("--reason", default=None, help="why, for the audit log (required)")
    add_by_argument(rollback)
    rollback.set_defaults(handler=run_rollback)


def run_propose(args: argparse.Namespace) -> int:
    from cli import guideline_versions as guidelines
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
        intended=args.intended_change,
    )


def run_signoff(args: argparse.Namespace) -> int:
    from cli import guideline_versions as guidelines
    from cli.operator import cli_auditor

    return guidelines.run_signoff(
        args.campaign, args.report, auditor=cli_auditor(args.by), now=datetime.now(UTC)
    )


def run_promote(args: argparse.Namespace) -> int:
    from cli import guideline_versions as guidelines
    from cli.operator import cli_auditor

    return guidelines.run_promote(
        args.campaign, args.report, auditor=cli_auditor(args.by), now=datetime.now(UTC)
    )


def run_rollback(args: argparse.Namespace) -> int:
    from cli import guideline_versions as guidelines
    from cli.operator import cli_auditor

    return guidelines.run_rollback(args.campaign, reason=args.reason, auditor=cli_auditor(args.by))
