"""`GET /snippet.js`: the embeddable script, the same bytes for every request; and the
routes of the snippet with its API (`snippet_routes`: `/snippet.js`, `/v1/zones`, `/v1/events`).

The file is `templates/static/snippet.js`, hand-written, no build step. It is read once
when the app is built, so its bytes, its ETag and its Subresource Integrity hash cannot
change while the process runs: a page that pins the hash (`integrity="sha384-…"`, shown
in docs/renderer.md) keeps loading it until the file changes in a release.

Headers: `text/javascript; charset=utf-8`; `Cache-Control: public, max-age=300` (a
fix reaches every site within five minutes); an ETag (304 on `If-None-Match`);
`Access-Control-Allow-Origin: *` because a `<script crossorigin="anonymous"
integrity=…>` is fetched in CORS mode and needs it (no credentials, nothing personal);
`Cross-Origin-Resource-Policy: cross-origin` so sites that require CORP may embed it.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from server.engagement.events_api import EVENTS_ROUTE, EventsApi
from server.renderer_state import RendererState
from server.zones_api import ZONES_ROUTE, ZonesApi

__all__ = ["SNIPPET_PATH", "Snippet", "snippet_routes", "sri_hash"]

SNIPPET_PATH = Path("static") / "snippet.js"


def sri_hash(data: bytes) -> str:
    """The Subresource Integrity value of `data`: `sha384-<base64>`."""
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode("ascii")


class Snippet:
    """The snippet file of one app, loaded once."""

    def __init__(self, templates_dir: Path) -> None:
        self.body = (templates_dir / SNIPPET_PATH).read_bytes()
        self.integrity = sri_hash(self.body)
        self.etag = f'"{hashlib.sha256(self.body).hexdigest()[:32]}"'
        self._headers = {
            "content-type": "text/javascript; charset=utf-8",
            "cache-control": "public, max-age=300",
            "etag": self.etag,
            "access-control-allow-origin": "*",
            "cross-origin-resource-policy": "cross-origin",
        }

    async def endpoint(self, request: Request) -> Response:
        """
        summary: The embeddable snippet (plain JavaScript, the same bytes for every request).
        description: >
          Embed with `<script async src=".../snippet.js" integrity="sha384-..."
          crossorigin="anonymous" data-wm-campaign="CAMPAIGN"></script>`. ETag and
          `If-None-Match` (304) supported.
        responses:
          200:
            description: "The script."
            headers: {ETag: {required: true, schema: {type: string}}}
            content: {text/javascript: {schema: {type: string}}}
          304: {description: "Not modified (ETag matched)."}
        """
        if_none_match = request.headers.get("if-none-match")
        if if_none_match is not None and self._matches(if_none_match):
            return Response(status_code=304, headers=self._headers)
        return Response(self.body, headers=self._headers)

    def _matches(self, header: str) -> bool:
        tags = [t.strip().removeprefix("W/") for t in header.split(",")]
        return "*" in tags or self.etag in tags


def snippet_routes(renderer: RendererState, templates_dir: Path) -> list[BaseRoute]:
    """`GET /snippet.js`, `GET|OPTIONS /v1/zones`, `POST|OPTIONS /v1/events` for one app."""
    snippet = Snippet(templates_dir)
    zones = ZonesApi(renderer)
    events = EventsApi(renderer)
    # The busiest first: routing tries each route in turn.
    return [
        Route(ZONES_ROUTE, zones.zones, methods=["GET"]),
        Route(EVENTS_ROUTE, events.events, methods=["POST"]),
        Route("/snippet.js", snippet.endpoint, methods=["GET"]),
        Route(ZONES_ROUTE, zones.preflight, methods=["OPTIONS"], include_in_schema=False),
        Route(EVENTS_ROUTE, events.preflight, methods=["OPTIONS"], include_in_schema=False),
    ]
