"""`welcomemat schema KIND`: the JSON Schema of an input format (`welcomemat.reference`)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # Kinds mirror welcomemat.reference.FORMATS (not imported here: `--help` stays fast).
    schema = sub.add_parser(
        "schema",
        help="print the JSON Schema of an input format, for editors that validate as you type",
        description="The JSON Schema (draft 2020-12) of campaign.yaml, tenant.yaml, a zone contract or one "
        "line of accounts.jsonl, built from the models the loaders use. Save it "
        "(`welcomemat schema campaign > campaign.schema.json`) and point the YAML file at it with "
        "`# yaml-language-server: $schema=./campaign.schema.json`; docs/campaign.md documents every field.",
    )
    schema.add_argument("kind", choices=["campaign", "tenant", "zone", "accounts"], help="the input format")
    schema.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from welcomemat.reference import schema_text

    sys.stdout.write(schema_text(args.kind))
    return 0
