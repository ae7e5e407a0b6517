"""Turn a pydantic ValidationError into the (field path, message) a user can act on."""

from __future__ import annotations

from pydantic import ValidationError

__all__ = [
    "dotted",
    "first_problem",
]


def first_problem(error: ValidationError) -> tuple[tuple[int | str, ...], str]:
    """The first failing field's location and message, without pydantic's prefixes."""
    first = error.errors()[0]
    message = first["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return tuple(first["loc"]), message


def dotted(loc: tuple[int | str, ...]) -> str | None:
    """`("contacts", 0, "email")` -> `"contacts.0.email"`; the empty path -> None."""
    return ".".join(str(part) for part in loc) or None
