"""Argument types the commands share: each refuses a bad value with a message naming it (exit 2)."""

from __future__ import annotations

import argparse
from datetime import date

__all__ = ["add_fill_empty", "fixed_port", "iso_day", "port", "positive_float", "positive_int"]


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text} must be more than 0")
    return value


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (0 to 65535)")
    return value


def fixed_port(text: str) -> int:
    """A port to listen on that the user names (0, "any port", is refused: nobody would know it)."""
    value = port(text)
    if value == 0:
        raise argparse.ArgumentTypeError("0 is not a fixed port (1 to 65535)")
    return value


def iso_day(text: str) -> date:
    """A calendar day written YYYY-MM-DD, in the years 2000 to 2100 (`welcomemat.bounded_time`)."""
    from welcomemat.bounded_time import parse_day  # here: it imports pydantic, which `--help` must not

    try:
        return parse_day(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_fill_empty(parser: argparse.ArgumentParser) -> None:
    """`--fill-empty COLUMN=TEXT` (repeatable): the export and its preview fill alike."""
    parser.add_argument(
        "--fill-empty",
        action="append",
        default=[],
        metavar="COLUMN=TEXT",
        help="write TEXT into empty first_name, last_name or title cells (repeatable), for a sequencer "
        "without a fallback syntax of its own; default: empty cells",
    )
