"""`welcomemat export`: the sequencer export (`outbound.export`)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = sub.add_parser(
        "export",
        help="sequencer export: one row per contact, the copy the page serves, every cell filled",
        description="One row per contact of every account with a published zone set: stable lowercase "
        "columns (lemlist / Smartlead variables), each zone's copy for the account's arm, the fact for "
        "the rep, a signed personal page link. Needs WELCOMEMAT_SECRET.",
    )
    export.add_argument("campaign", help="tenant/campaign, campaign.yaml, or a published campaign id")
    export.add_argument("--format", default="csv", choices=["csv", "jsonl"], help="csv (default) or jsonl")
    export.add_argument("--out", default=None, metavar="FILE", help="write FILE atomically (default: stdout)")
    export.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from outbound.export import run_export

    return run_export(args.campaign, args.format, args.out)
