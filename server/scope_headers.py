"""A request header read straight from the ASGI scope, for the hot routes.

`request.headers.get(name)` builds a `Headers` object over the scope's list and walks it
through the `Mapping` machinery on every call; a page view reads two or three headers. This
is the same answer (the first header of that name, Latin-1 decoded: ASGI servers hand over
lower-case names, which `Headers` relies on too) from one loop over the raw list.
"""

from __future__ import annotations

from starlette.types import Scope

__all__ = ["header_value", "joined_header"]


def header_value(scope: Scope, name: bytes) -> str | None:
    """The first `name` header (a lower-case name) as `Headers.get` reads it, or None."""
    headers: list[tuple[bytes, bytes]] = scope["headers"]
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


def joined_header(scope: Scope, name: bytes) -> str | None:
    """Every `name` header, Latin-1 decoded and joined with "," (`",".join(Headers.getlist)`,
    the one reading of a header a proxy may send several times), or None when there is none."""
    values = [value.decode("latin-1") for key, value in scope["headers"] if key == name]
    return ",".join(values) if values else None
