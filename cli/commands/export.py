"""`welcomemat export`: the sequencer export (`outbound.export`)."""

from __future__ import annotations

import argparse

from cli.arg_types import add_fill_empty

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = sub.add_parser(
        "export",
        help="sequencer export: one row per contact, the copy email may show, fallback rows for bad records",
        description="One row per contact of every account in the campaign: stable lowercase columns "
        "(lemlist / Smartlead / Outreach / Apollo variables), each zone's copy allowed on email for the "
        "account's arm, the fact for the rep, a signed personal page link and a status; a record with a "
        "problem (pending review, rejected, expired, unreadable, a refused cell) gets its fallback row and "
        "is listed on stderr. --fill-empty writes its text into empty first_name, last_name or title cells, "
        "never the fact columns. --out is written atomically. Exit 0 when the file is written, 1 only when "
        "it could not be produced (nothing written to --out). Needs WELCOMEMAT_SECRET.",
    )
    export.add_argument("campaign", help="tenant/campaign, campaign.yaml, or a published campaign id")
    export.add_argument("--format", default="csv", choices=["csv", "jsonl"], help="csv (default) or jsonl")
    export.add_argument("--out", default=None, metavar="FILE", help="write FILE atomically (default: stdout)")
    export.add_argument(
        "--json",
        action="store_true",
        help="with --out: print the report (counts, and every record that got its fallback, and why) as JSON",
    )
    add_fill_empty(export)
    export.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.export_command import run_export
    from welcomemat.outreach.sequencer_row import parse_fill

    fill = dict(parse_fill(spec) for spec in args.fill_empty)
    return run_export(args.campaign, args.format, args.out, as_json=args.json, fill=fill)
