"""Turn a pydantic ValidationError into the (field path, message) pairs a user can act on."""

from __future__ import annotations

from pydantic import ValidationError

__all__ = [
    "dotted",
    "every_problem",
    "first_problem",
]

Loc = tuple[int | str, ...]


def _plain(message: str) -> str:
    return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def every_problem(error: ValidationError) -> list[tuple[Loc, str]]:
    """Every failing field's location and message, in pydantic's order, without its prefixes."""
    return [(tuple(e["loc"]), _plain(e["msg"])) for e in error.errors()]


def first_problem(error: ValidationError) -> tuple[Loc, str]:
    """The first failing field's location and message, without pydantic's prefixes."""
    return every_problem(error)[0]


def _printable(part: int | str) -> str:
    # A key is the input's own text: one with control characters (a terminal escape, a
    # newline) or a lone surrogate is shown escaped, so the message cannot be forged or break.
    text = str(part)
    return text if text.isprintable() else ascii(text)[1:-1]


def dotted(loc: tuple[int | str, ...]) -> str | None:
    """`("contacts", 0, "email")` -> `"contacts.0.email"`; the empty path -> None. Parts that
    are not printable are escaped (`"\x1b[2J"` is shown as `\\x1b[2J`)."""
    return ".".join(_printable(part) for part in loc) or None
