"""`welcomemat init DIR`: a new campaign folder to start from (`cli/init.py`)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    init = sub.add_parser(
        "init",
        help="scaffold a new campaign folder: commented campaign.yaml, tenant.yaml, zones/, sample accounts",
        description="Write a campaign to start from into DIR (new, or an empty folder; never overwrites): "
        "campaign.yaml with every section commented, tenant.yaml, the zone contracts it uses in zones/, and "
        "five sample accounts dated from today, each showing a different outcome. Prints what it wrote and "
        "the commands to run next. A folder that is not empty is refused (exit 2).",
    )
    init.add_argument("directory", metavar="DIR", help="the folder to create (must not exist, or be empty)")
    init.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.init import run_init

    # The one place the clock is read: the sample accounts are dated from this day.
    return run_init(args.directory, today=datetime.now(UTC).date())
