"""`welcomemat audit`: list the audit log (`cli.audit_table`)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = sub.add_parser(
        "audit",
        help="who approved, rejected, rolled back, published, erased or exported what, when and why",
        description="The audit log: every tenant's (and the key-rotation log) unless --tenant or --campaign "
        "names one, oldest first, as a table (id, when, who, action, campaign, account, version, why) or "
        "JSON Lines. --since takes a date or a date-time (UTC unless it says otherwise). Exit 1 when an "
        "entry does not decode (named on stderr).",
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
