"""The last line of hard invariant 5: no page route answers 5xx, whatever breaks.

Page handlers already turn every Redis fault into the fallback. `fail_closed` wraps each
page endpoint and catches what nobody foresaw (a bug, a template error): it logs it,
counts it and serves the plain page with 200. A person on a landing page cannot retry
the way an API client can. A wrapper on the page endpoints rather than a middleware:
only page routes need it, and a middleware layer costs every request.

Client mistakes are not faults: they are `HTTPException`s, which `server.problems` renders.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from server.log_redaction import redacted_target
from server.security import csp_nonce

if TYPE_CHECKING:
    from server.renderer_state import RendererState

__all__ = ["NO_STORE", "Endpoint", "fail_closed"]

log = logging.getLogger(__name__)

NO_STORE = {"cache-control": "private, no-store"}
Endpoint = Callable[[Request], Awaitable[Response]]


def fail_closed(route: str) -> Callable[[Endpoint], Endpoint]:
    """Decorate a page endpoint: any exception becomes the plain page (200), logged and counted."""

    def decorate(endpoint: Endpoint) -> Endpoint:
        @functools.wraps(endpoint)  # keeps the docstring OpenAPI reads
        async def guarded(request: Request) -> Response:
            try:
                return await endpoint(request)
            except Exception:
                log.exception("unhandled error on %s", redacted_target(request.url.path))
                renderer: RendererState = request.app.state.renderer
                renderer.metrics.faults.labels(route).inc()
                html = renderer.pages.plain().finish(csp_nonce(request.scope), "")
                return HTMLResponse(html, headers=NO_STORE)

        return guarded

    return decorate
