"""CORS for the snippet's API: only a campaign's configured origins, never credentials.

`/v1/zones` and `/v1/events` answer `Access-Control-Allow-Origin: <origin>` only when
the request's `Origin` is one of the campaign's `snippet_origins` (compared in the form
a browser sends: lowercase scheme and host, default port left out, no trailing slash),
never `Access-Control-Allow-Credentials`, and `Vary: Origin` on every response so that
no cache hands one origin's answer to another. A preflight (`OPTIONS`) is answered 204
for a listed origin, 403 for anything else.

The snippet itself needs no preflight: its `GET` carries no custom header and its
beacons are `text/plain`. Preflights come from other clients (a `fetch` with an
`application/json` body).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

from starlette.responses import Response
from starlette.types import Scope

from server.scope_headers import header_value
from welcomemat.security.urlgate import browser_origin

__all__ = [
    "VARY_ORIGIN",
    "allowed_origins",
    "cors_headers",
    "normalise_origin",
    "preflight_response",
    "request_origin",
]

VARY_ORIGIN = (b"vary", b"Origin")
# Preflights are cached by the browser this long (seconds): origins change rarely.
_PREFLIGHT_MAX_AGE_S = 600


def normalise_origin(origin: str) -> str | None:
    """`scheme://host[:port]` as a browser serialises it in an `Origin` header; None when
    `origin` is not an http(s) origin."""
    return browser_origin(origin.strip())


@functools.lru_cache(maxsize=1024)
def allowed_origins(origins: tuple[str, ...]) -> frozenset[str]:
    """A campaign's `snippet_origins`, normalised (remembered: campaigns are few)."""
    return frozenset(o for o in map(normalise_origin, origins) if o is not None)


def request_origin(scope: Scope) -> str | None:
    """The request's `Origin` header, as sent (browsers send it normalised), or None."""
    return header_value(scope, b"origin")


def cors_headers(origin: str | None, allowed: frozenset[str]) -> list[tuple[bytes, bytes]]:
    """`Vary: Origin`, and `Access-Control-Allow-Origin` when `origin` is listed."""
    if origin is not None and origin in allowed:
        return [VARY_ORIGIN, (b"access-control-allow-origin", origin.encode("latin-1"))]
    return [VARY_ORIGIN]


def preflight_response(origin: str | None, allowed: Iterable[str], methods: Sequence[str]) -> Response:
    """The answer to an `OPTIONS` preflight: 204 with the CORS grant for a listed origin, else 403."""
    if origin is None or origin not in allowed:
        return Response(status_code=403, headers={"vary": "Origin", "cache-control": "no-store"})
    return Response(
        status_code=204,
        headers={
            "vary": "Origin",
            "access-control-allow-origin": origin,
            "access-control-allow-methods": ", ".join(methods),
            "access-control-allow-headers": "content-type",
            "access-control-max-age": str(_PREFLIGHT_MAX_AGE_S),
        },
    )
