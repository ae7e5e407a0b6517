"""`welcomemat validate`: every problem with a campaign's inputs at once (`cli/validate.py`)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    validate = sub.add_parser(
        "validate",
        help="check a campaign, its zone contracts, tenant policy and accounts: every problem at once",
        description="Loads the inputs exactly as `welcomemat precompute` does (zone contracts, campaign, "
        "tenant.yaml, policy precedence), then reads every accounts line. Prints every problem, one per "
        "line on stderr as `file:line: field: message`. Exit 0 when nothing is wrong, 2 when anything is.",
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
    )
