"""A request's query parameters, read straight from the ASGI scope's query string.

The hot routes read one or two parameters per request (`wm`, `campaign`); Starlette's
`request.query_params` builds a multidict of every one first.
"""

from __future__ import annotations

from urllib.parse import unquote_plus

__all__ = ["query_values"]


def query_values(query_string: bytes) -> dict[str, list[str]]:
    """Parameters as `parse_qsl(keep_blank_values=True)` reads them (UTF-8, undecodable bytes
    replaced), without the cost of Starlette's multidict on this hot path."""
    found: dict[str, list[str]] = {}
    for part in query_string.decode("latin-1").split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        if "%" in name or "+" in name:
            name = unquote_plus(name)
        if "%" in value or "+" in value:
            value = unquote_plus(value)
        elif not value.isascii():
            value = value.encode("latin-1").decode("utf-8", "replace")
        found.setdefault(name, []).append(value)
    return found
