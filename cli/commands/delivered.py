"""`welcomemat delivered import`: the sequencer's sent/delivered file, as workflow marks."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

__all__ = ["register", "run_import"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    delivered = sub.add_parser(
        "delivered",
        help="mark contacts delivered from a sequencer's sent/delivered CSV",
        description="Mark contacts `delivered` (a workflow state, shown by `welcomemat explain`) from a "
        "sequencer's sent/delivered CSV.",
    )
    actions = delivered.add_subparsers(dest="delivered", metavar="ACTION", required=True)
    importer = actions.add_parser(
        "import",
        help="mark each line's contact delivered (columns account_id, contact_id, optional delivered_at)",
        description="Marks each line's contact `delivered` from a sequencer's sent/delivered CSV with the "
        "export's `account_id` and `contact_id` columns and an optional `delivered_at` (ISO 8601 with a UTC "
        "offset, years 2000 to 2100 in UTC; else the import's time); other columns are ignored. Idempotent. "
        "Bad lines are named (file, line, field) and skipped, exit 2 if any.",
    )
    importer.add_argument("campaign", help="tenant/campaign, campaign.yaml, or a published campaign id")
    importer.add_argument("file", help="the sequencer's CSV")
    importer.set_defaults(handler=run_import)


def run_import(args: argparse.Namespace) -> int:
    from cli.delivered_import import run_delivered_import

    return run_delivered_import(args.campaign, args.file, now=datetime.now(UTC))
