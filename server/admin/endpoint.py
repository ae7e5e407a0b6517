"""What every `/admin/...` route shares: the bearer check first, ids checked, no-store answers.

`admin_endpoint` wraps a route: `admin_auth.require_credential` runs before anything else
(404 when no admin token is configured, as if the routes did not exist; 401 without a
token), and its refusals are rendered by `server.problems` as JSON or an HTML page. A route
reaches its campaign only through `path_campaign` (`admin_auth.campaign_for`: a token scoped
to a tenant gets any other tenant's campaign as an unknown one) and reads Redis through
`guarded_read` (the renderer's guard, with an operator's longer budget). Every answer is
`Cache-Control: no-store`, and HTML ones carry the admin CSP.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from server.admin.auth import campaign_for, require_credential
from server.campaigns import CampaignState
from server.problems import HTTPProblem, errors_as_html
from server.render import TEMPLATES_DIR, template_environment
from server.renderer_state import RendererState
from welcomemat.ids import is_valid_id

__all__ = [
    "ADMIN_CSP",
    "ADMIN_REDIS_TIMEOUT_S",
    "HTML_HEADERS",
    "NO_STORE",
    "AdminEndpoint",
    "admin_endpoint",
    "admin_templates",
    "campaign_not_found_doc",
    "guarded_read",
    "html_answer",
    "json_answer",
    "path_campaign",
    "path_id",
]

_T = TypeVar("_T")

# An operator waits a little longer than a visitor's page would (it is one request, not a
# page view), but never on a hung Redis.
ADMIN_REDIS_TIMEOUT_S = 2.0
NO_STORE = {"cache-control": "no-store"}
# Admin pages run no script at all (default-src 'none' covers script-src); the preview's page
# is shown in a sandboxed srcdoc frame, which may load only our stylesheets, images and fonts
# (a campaign's theme files included).
ADMIN_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; font-src 'self'; frame-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HTML_HEADERS = {**NO_STORE, "content-security-policy": ADMIN_CSP}


AdminEndpoint = Callable[[Request, RendererState], Awaitable[Response]]
_Route = Callable[[Request], Awaitable[Response]]


@functools.cache
def admin_templates() -> jinja2.Environment:
    return template_environment(TEMPLATES_DIR)


def json_answer(payload: Any) -> JSONResponse:
    return JSONResponse(payload, headers=NO_STORE)


def html_answer(template: str, **context: Any) -> HTMLResponse:
    return HTMLResponse(admin_templates().get_template(template).render(**context), headers=HTML_HEADERS)


def admin_endpoint(*, html: bool = False) -> Callable[[AdminEndpoint], _Route]:
    """Wrap an admin endpoint: the bearer check first. Its refusals (`HTTPProblem`, Redis
    faults) are rendered by `server.problems`: as an HTML page when `html`, else JSON."""

    def decorate(endpoint: AdminEndpoint) -> _Route:
        @functools.wraps(endpoint)  # keeps the docstring OpenAPI reads
        async def guarded(request: Request) -> Response:
            renderer: RendererState = request.app.state.renderer
            # raises 404 / 401; the credential is who the audit log says acted, and its scope
            request.state.credential = require_credential(request, renderer.settings.admin_credentials())
            return await endpoint(request, renderer)

        return errors_as_html(lambda request: html)(guarded)

    return decorate


def path_id(request: Request, name: str) -> str:
    value = request.path_params[name]
    if not is_valid_id(value):
        raise HTTPProblem(404, f"{name} {value!r} is not a valid id")
    return value


async def path_campaign(request: Request, renderer: RendererState) -> CampaignState:
    return await campaign_for(request.state.credential, renderer.campaigns, path_id(request, "campaign"))


async def guarded_read(renderer: RendererState, op: str, fn: Callable[[], _T]) -> _T:
    return await renderer.guard.call(op, fn, timeout_s=max(ADMIN_REDIS_TIMEOUT_S, renderer.guard.timeout_s))


def campaign_not_found_doc(more: str = "") -> str:
    """The 404 of a route that takes its campaign from the path, as OpenAPI reads it from the
    endpoint's docstring; `more`: what else is not found (`, or no such account`)."""
    return f"""
      404:
        $ref: "#/components/responses/AdminNotFound"
        description: >-
          Admin routes off, or no such campaign (to a tenant-scoped token, also any its tenant
          does not own){more}."""
