"""`welcomemat audit`: list the audit log (`cli.audit_table`)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = sub.add_parser(
        "audit", help="who approved, rejected, rolled back, published, erased or exported what, when and why"
    )
    audit.add_argument("--tenant", default=None, help="one tenant's log (default: every tenant's)")
    audit.add_argument(
        "--campaign",
        default=None,
        help="entries about one campaign (tenant/campaign, campaign.yaml or an id)",
    )
    audit.add_argument("--account", default=None, help="entries about one account")
    audit.add_argument(
        "--since", default=None, metavar="ISO", help="entries at or after this date or time (UTC)"
    )
    audit.add_argument("--json", action="store_true", help="one JSON object a line instead of a table")
    audit.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.audit_table import run_audit

    return run_audit(
        tenant=args.tenant, campaign=args.campaign, account=args.account, since=args.since, as_json=args.json
    )
