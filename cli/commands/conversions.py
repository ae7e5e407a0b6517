"""`welcomemat conversions import`: CRM outcomes per account, for the lift report."""

from __future__ import annotations

import argparse

__all__ = ["register", "run_import"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    conversions = sub.add_parser(
        "conversions",
        help="CRM outcomes per account, for the lift report",
        description="CRM outcomes per account, stored with the account's arm, for `welcomemat report lift`.",
    )
    conversions_sub = conversions.add_subparsers(dest="conversions", metavar="ACTION", required=True)
    conversions_import = conversions_sub.add_parser(
        "import",
        help="record conversions from a JSON Lines file (one POST /v1/conversions body a line)",
        description="Records CRM outcomes, one `POST /v1/conversions` body a line: goals (`positive_reply`, "
        "`meeting_booked`, `opportunity`, `closed_won`) and negative outcomes (`unsubscribe`, "
        "`spam_complaint`), each stored with the account's arm. Bad lines are named (file, line, field) and "
        "skipped, exit 2 if any.",
    )
    conversions_import.add_argument("file", help="conversions.jsonl")
    conversions_import.set_defaults(handler=run_import)


def run_import(args: argparse.Namespace) -> int:
    from cli.conversions_import import run_conversions_import

    return run_conversions_import(args.file)
