"""`welcomemat review`: approve or reject zone sets waiting for a person (`cli.precompute_command`)."""

from __future__ import annotations

import argparse

from cli.arg_types import positive_int
from cli.operator import add_by_argument

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    review = sub.add_parser(
        "review",
        help="approve or reject zone sets waiting for a person; roll an account back",
        description="The human review queue. `list` shows what waits (`held` entries list each held draft's "
        "layer and note), `show` one account's zone set. `approve --version N` approves only the version you "
        "read; `approve --held ZONE` publishes that zone's held draft as personal copy (exit 1 when it "
        "cannot be approved). `rollback` restores the account's previous version. `reject` and `rollback` "
        "need --reason (exit 2 without, nothing done). Each decision is audit-logged as --by (else "
        "WELCOMEMAT_OPERATOR, else `login:<login name>`).",
    )
    review.add_argument(
        "action",
        choices=["list", "show", "approve", "reject", "rollback"],
        help="list the queue, show an account, or approve, reject or roll back its zone set",
    )
    review.add_argument("campaign", help="campaign.yaml, tenant/campaign, or a published campaign id")
    review.add_argument("account", nargs="?", help="account id (show, approve, reject, rollback)")
    review.add_argument("--version", type=positive_int, default=None, help="the version you reviewed")
    review.add_argument(
        "--held",
        metavar="ZONE",
        default=None,
        help="approve: publish ZONE's held draft (see `review list`, `explain`) as personal copy",
    )
    review.add_argument(
        "--reason", default=None, help="why, for the audit log (required to reject or roll back)"
    )
    add_by_argument(review)
    review.add_argument("--zones", default=None, help=argparse.SUPPRESS)
    review.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.operator import cli_auditor
    from cli.precompute_command import run_review

    return run_review(
        args.action,
        args.campaign,
        args.account,
        version=args.version,
        held=args.held,
        zones=args.zones,
        reason=args.reason,
        auditor=cli_auditor(args.by),
    )
