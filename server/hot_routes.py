"""The busiest routes dispatched straight to their endpoints, ahead of Starlette's stack.

A cached landing page costs the renderer little of its own work, and Starlette's error
middleware, exception middleware, router and per-route wrappers add a good part of that
again (closures built per request, every route's regex tried in turn; bench/README.md).
For the three routes that carry a campaign's traffic, `GET|HEAD /c/{campaign}`,
`GET|HEAD /c/{campaign}/continue`, `GET|HEAD /v1/zones` and a mail drop's
`GET|HEAD /q/{token}`, this layer recognises the path by its shape and calls the endpoint
itself. Everything else, including these paths with any other method, goes through
Starlette unchanged (405s, 404s, error pages, the OpenAPI schema).

Nothing is lost by skipping Starlette's layers on these routes: their endpoints never raise
(`faults.fail_closed` wraps the pages and the QR entry, `ZonesApi.zones` catches everything
itself) and
never raise `HTTPException`; the security layer stays outside this one. The endpoints are
the routes' own (taken from the `Route` objects), so both ways of reaching them run the
same code; `hot_route` matches exactly the paths Starlette's `{campaign}` and `{token}`
parameters would (a non-empty segment without `/`), which tests/server/test_hot_routes.py
checks against Starlette's own matcher.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.requests import Request
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from server.faults import Endpoint

__all__ = ["HOT_PATHS", "HotRoutes", "hot_route"]

LANDING, CONTINUATION, ZONES, QR = "/c/{campaign}", "/c/{campaign}/continue", "/v1/zones", "/q/{token}"
HOT_PATHS = (LANDING, CONTINUATION, ZONES, QR)
# Starlette answers HEAD wherever it answers GET (it adds HEAD to a GET route): so do we.
_GET_METHODS = frozenset({"GET", "HEAD"})
_CONTINUE = "/continue"


def hot_route(method: str, path: str) -> tuple[str, dict[str, str]] | None:
    """(route path, path parameters) when `method` and `path` are a hot route's, else None."""
    if method not in _GET_METHODS:
        return None
    if path.startswith("/c/"):
        rest = path[3:]
        if not rest:
            return None
        if "/" not in rest:
            return LANDING, {"campaign": rest}
        if rest.endswith(_CONTINUE):
            campaign = rest[: -len(_CONTINUE)]
            if campaign and "/" not in campaign:
                return CONTINUATION, {"campaign": campaign}
        return None
    if path == ZONES:
        return ZONES, {}
    if path.startswith("/q/"):
        token = path[3:]
        if token and "/" not in token:
            return QR, {"token": token}
    return None


class HotRoutes:
    """ASGI: the hot routes straight to their endpoints; anything else to `app` (Starlette's stack)."""

    def __init__(self, app: ASGIApp, routes: Iterable[BaseRoute]) -> None:
        self.app = app
        self._endpoints: dict[str, Endpoint] = {}
        for route in routes:
            if isinstance(route, Route) and route.path in HOT_PATHS and "GET" in (route.methods or ()):
                self._endpoints.setdefault(route.path, route.endpoint)
        missing = set(HOT_PATHS) - set(self._endpoints)
        if missing:
            raise ValueError(f"no GET route for {sorted(missing)}")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # root_path set (mounted under a prefix): Starlette's routing knows how to strip it.
        if scope["type"] == "http" and not scope.get("root_path"):
            match = hot_route(scope["method"], scope["path"])
            if match is not None:
                route, scope["path_params"] = match
                endpoint = self._endpoints[route]
                scope["endpoint"] = endpoint
                response = await endpoint(Request(scope, receive))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
