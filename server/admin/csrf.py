"""The CSRF check of every state-changing admin request made with a person's session.

Two checks, both required:

- the request's `Origin` is `WELCOMEMAT_PUBLIC_URL`'s origin (a browser sends it on every POST;
  when it is absent, the `Referer`'s origin stands in; neither is a refusal): a page of any
  other origin, same site or not, cannot post here;
- the session's CSRF token comes back, as the form field `csrf` or the `X-CSRF-Token` header,
  compared in constant time: only a page this renderer served to the session holds it.

A refusal is 403, logged (the route and the reason) and counted
(`welcomemat_admin_refusals{route, reason}`), before anything is read or changed. Requests
with a bearer token carry no cookie (a browser cannot be made to send one) and are not checked.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Mapping
from urllib.parse import urlsplit

from starlette.requests import Request

from server.admin.actor import AdminActor
from server.problems import HTTPProblem
from server.renderer_state import RendererState

__all__ = ["CSRF_FIELD", "CSRF_HEADER", "check_origin", "check_token", "refuse"]

log = logging.getLogger(__name__)

CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"


def refuse(request: Request, renderer: RendererState, route: str, reason: str, message: str) -> HTTPProblem:
    """The 403 of a refused admin request, logged and counted under `route` and `reason`."""
    # The route's name, never its path: a sign-in path carries an invite token.
    log.warning("admin %s (%s) refused: %s", request.method, route, reason)
    renderer.metrics.admin_refusals.labels(route, reason).inc()
    return HTTPProblem(403, message)


def _origin_of(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    default = {"http": 80, "https": 443}[parts.scheme]
    netloc = parts.hostname if port is None or port == default else f"{parts.hostname}:{port}"
    return f"{parts.scheme}://{netloc}"


def check_origin(request: Request, renderer: RendererState, route: str) -> None:
    """403 unless the request comes from a page of `WELCOMEMAT_PUBLIC_URL`'s origin."""
    sent = request.headers.get("origin")
    if sent is None:
        referer = request.headers.get("referer")
        if referer is None:
            raise refuse(request, renderer, route, "no_origin", "a form post must say where it comes from")
        sent = referer
    if _origin_of(sent) != _origin_of(renderer.settings.public_url):
        raise refuse(request, renderer, route, "cross_origin", "a form post from another site is refused")


def check_token(
    request: Request, renderer: RendererState, route: str, actor: AdminActor, form: Mapping[str, str] | None
) -> None:
    """403 unless the session's CSRF token came back (form field or header), compared in constant time."""
    offered = request.headers.get(CSRF_HEADER)
    if offered is None and form is not None:
        offered = form.get(CSRF_FIELD)
    if not offered:
        raise refuse(
            request, renderer, route, "no_token", "the form's CSRF token is missing: reload the page"
        )
    expected = actor.csrf or ""
    if not expected or not hmac.compare_digest(offered.encode(), expected.encode()):
        raise refuse(
            request, renderer, route, "wrong_token", "the form's CSRF token is wrong: reload the page"
        )
