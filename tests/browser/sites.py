"""The other origins of the snippet tests: a customer's site, and a stand-in for the renderer's API.

`customer_site(config)`: a page on its own origin that embeds the snippet as the contract
says (`<script async src="{api}/snippet.js" data-wm-campaign=…>`), under a strict CSP (no
inline script or style; scripts and connections only to the API origin), with
`[data-wm-zone]` elements holding default text and a stylesheet file that reserves their
space (`/site.css`), or does not (`/site-unreserved.css`, the control that shows a layout
shift is measured at all). A footer below the zones is what would move.

`api_stand_in(renderer, mode)`: an origin serving the real `snippet.js` bytes, whose
`/v1/zones` is slow (proxied to the renderer after a delay or until released), down
(503) or hostile (the renderer's answer rewritten); beacons are proxied. The snippet
calls the origin it was loaded from, so this is how a test makes the API slow, broken or
hostile while everything else stays real.
"""

from __future__ import annotations

import asyncio
import html
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

__all__ = ["ApiMode", "SiteConfig", "SiteZone", "api_stand_in", "customer_site"]

_PROXIED_HEADERS = ("content-type", "access-control-allow-origin", "access-control-allow-credentials", "vary")


@dataclass(frozen=True)
class SiteZone:
    zone_id: str
    tag: str  # "h1", "p" or "a"
    default_text: str
    href: str | None = None


@dataclass
class SiteConfig:
    """What the customer's page embeds; tests change it between loads."""

    api_origin: str
    campaign: str
    zones: list[SiteZone]
    budget_ms: int | None = None


_RESERVED_CSS = """
body { margin: 0; font: 16px/1.5 sans-serif; width: 900px; }
.zone { display: block; margin: 0 0 8px; min-height: 7.5em; overflow-wrap: anywhere; }
h1.zone { font-size: 24px; line-height: 1.5; }
.footer { margin: 0; }
"""
_UNRESERVED_CSS = """
body { margin: 0; font: 16px/1.5 sans-serif; width: 900px; }
.zone { display: block; margin: 0 0 8px; overflow-wrap: anywhere; }
h1.zone { font-size: 24px; line-height: 1.5; }
.footer { margin: 0; }
"""


def _page(config: SiteConfig, stylesheet: str) -> str:
    api = html.escape(config.api_origin)
    budget = f' data-wm-budget="{config.budget_ms}"' if config.budget_ms is not None else ""
    zones = []
    for zone in config.zones:
        href = f' href="{html.escape(zone.href)}"' if zone.href else ""
        zones.append(
            f'<{zone.tag} class="zone" data-wm-zone="{html.escape(zone.zone_id)}"{href}>'
            f"{html.escape(zone.default_text)}</{zone.tag}>"
        )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Customer site</title>"
        f'<link rel="stylesheet" href="/{stylesheet}">'
        f'<script async src="{api}/snippet.js" data-wm-campaign="{html.escape(config.campaign)}"{budget}>'
        "</script></head><body><main>" + "".join(zones) + '</main><p class="footer">Footer</p></body></html>'
    )


def customer_site(config: SiteConfig) -> Starlette:
    async def page(request: Request) -> Response:
        stylesheet = (
            "site-unreserved.css" if request.query_params.get("layout") == "unreserved" else "site.css"
        )
        policy = (
            f"default-src 'self'; script-src {config.api_origin}; connect-src {config.api_origin}; "
            "style-src 'self'"
        )
        return HTMLResponse(_page(config, stylesheet), headers={"content-security-policy": policy})

    async def reserved(request: Request) -> Response:
        return Response(_RESERVED_CSS, media_type="text/css")

    async def unreserved(request: Request) -> Response:
        return Response(_UNRESERVED_CSS, media_type="text/css")

    return Starlette(
        routes=[
            Route("/", page),
            Route("/site.css", reserved),
            Route("/site-unreserved.css", unreserved),
        ]
    )


@dataclass
class ApiMode:
    """How the stand-in answers `/v1/zones`: after `hold` is set (if given) and `delay_s`,
    the renderer's answer (through `rewrite`, if given); or `status`. `answered` is set
    once it has answered."""

    delay_s: float = 0.0
    status: int | None = None
    hold: threading.Event | None = None
    # Changes the renderer's JSON before the page gets it (a hostile or broken API).
    rewrite: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    answered: threading.Event = field(default_factory=threading.Event)


def api_stand_in(renderer_url: str, snippet_js: bytes, mode: ApiMode) -> Starlette:
    async def snippet(request: Request) -> Response:
        return Response(snippet_js, media_type="text/javascript")

    async def proxy(request: Request) -> Response:
        headers = {k: v for k, v in request.headers.items() if k in ("origin", "content-type")}
        async with httpx.AsyncClient() as client:
            upstream = await client.request(
                request.method,
                f"{renderer_url}{request.url.path}",
                params=request.query_params,
                headers=headers,
                content=await request.body(),
            )
        kept = {k: v for k, v in upstream.headers.items() if k in _PROXIED_HEADERS}
        return Response(upstream.content, status_code=upstream.status_code, headers=kept)

    async def zones(request: Request) -> Response:
        try:
            if mode.status is not None:
                # Readable by the page (CORS granted): the snippet sees the status, not a network error.
                origin = request.headers.get("origin", "*")
                return Response(
                    "unavailable",
                    status_code=mode.status,
                    media_type="text/plain",
                    headers={"access-control-allow-origin": origin, "vary": "Origin"},
                )
            if mode.hold is not None:
                await asyncio.to_thread(mode.hold.wait, 30)
            await asyncio.sleep(mode.delay_s)
            response = await proxy(request)
            if mode.rewrite is not None:
                body = json.dumps(mode.rewrite(json.loads(bytes(response.body)))).encode()
                headers = {k: v for k, v in response.headers.items() if k != "content-length"}
                return Response(body, status_code=response.status_code, headers=headers)
            return response
        finally:
            mode.answered.set()

    return Starlette(
        routes=[
            Route("/snippet.js", snippet),
            Route("/v1/zones", zones),
            Route("/v1/events", proxy, methods=["POST"]),
        ]
    )
