"""`welcomemat validate`: every problem with a campaign's inputs at once (`cli/validate.py`)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from cli.arg_types import iso_day

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    validate = sub.add_parser(
        "validate",
        help="check a campaign, its zone contracts, tenant policy and accounts: every problem at once",
        description="Loads the inputs exactly as `welcomemat precompute` does (zone contracts, campaign, "
        "tenant.yaml, policy precedence), reads every accounts line and judges every fact as a run today "
        "would (dates, subject, other company, window, the campaign's patterns and fact types, fields). "
        "Prints every problem, one per line on stderr as `file:line: field: message`, then the facts' "
        "counts per reason (--json: the report on stdout, its `problems` a list of "
        "`{file, line, field, message}` and `facts` the facts' problems with their `reason`, account and "
        "fact ids, and counts). Exit 2 when an input is malformed (a bad accounts line included), else 1 "
        "when some facts will not be used as written, else 0. Every field of these files: docs/campaign.md.",
    )
    validate.add_argument("campaign", help="path to campaign.yaml")
    validate.add_argument("accounts", nargs="?", help="path to accounts.jsonl")
    validate.add_argument(
        "--zones",
        default=None,
        help="zone contracts folder (default: zones/ beside the campaign, else ./zones, else its parent's)",
    )
    validate.add_argument(
        "--tenant-policy", default=None, help="tenant.yaml (default: tenant.yaml beside the campaign)"
    )
    validate.add_argument(
        "--as-of",
        type=iso_day,
        default=None,
        metavar="YYYY-MM-DD",
        help="judge the facts as a run on this day would (default: today, UTC)",
    )
    validate.add_argument("--json", action="store_true", help="print the report (and its problems) as JSON")
    validate.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.validate import run_validate

    return run_validate(
        args.campaign,
        args.accounts,
        zones=args.zones,
        tenant_policy=args.tenant_policy,
        as_json=args.json,
        today=args.as_of or datetime.now(UTC).date(),
    )
