"""`welcomemat subject-export`: everything held about a person or an account (`cli.subject_requests`)."""

from __future__ import annotations

import argparse

from cli.operator import add_by_argument

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = sub.add_parser(
        "subject-export",
        help="data-subject access: everything held about a person or an account, as JSON",
        description="Data-subject access: everything held about a person (their profile, per-campaign "
        "engagement and workflow marks, events, seller alerts, erasure marks and audit entries) or an "
        "account (its record, zone sets, explain records, journal entries, IP ranges, conversions, events, "
        "seller alerts) as one JSON document, on stdout or in FILE (written whole, mode 0600); audit-logged.",
    )
    export.add_argument("subject", metavar="SUBJECT", help="a person's e-mail address, or an account id")
    export.add_argument("--tenant", default=None, help="the tenant to look in (default: every one)")
    export.add_argument(
        "--campaign", default=None, help="look in this campaign's tenant (tenant/campaign, campaign.yaml, id)"
    )
    export.add_argument(
        "--out", default=None, metavar="FILE", help="write it here (mode 0600) instead of stdout"
    )
    add_by_argument(export)
    export.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.operator import cli_auditor
    from cli.subject_requests import run_subject_export

    return run_subject_export(
        args.subject, tenant=args.tenant, campaign=args.campaign, out=args.out, auditor=cli_auditor(args.by)
    )
