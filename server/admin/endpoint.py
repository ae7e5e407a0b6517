"""What every `/admin/...` route shares: who is asking first, ids checked, no-store answers.

`admin_endpoint(needs=Role.X)` wraps a route. Before anything else it finds the actor
(`server.admin.actor.AdminActor`): a bearer token (`admin_auth.require_credential`: 404 when no
admin token is configured and the request carries no session cookie, as if the routes did not
exist; 401 without a valid token), or a person's session cookie (`server.admin.sessions`: 401
once the session has ended). A session's state-changing request then passes the CSRF check
(`server.admin.csrf`), and the actor's role must allow `needs` (403 otherwise, logged and
counted). The actor is `request.state.actor` (also `request.state.credential`, what the audit
log names); refusals are rendered by `server.problems` as JSON or an HTML page.

A route reaches its campaign only through `path_campaign` (`admin_auth.campaign_for`: a token
or a person scoped to a tenant gets any other tenant's campaign as an unknown one) and reads
Redis through `guarded_read` (the renderer's guard, with an operator's longer budget). Every
answer is `Cache-Control: no-store`, and HTML ones carry the admin CSP and say who is signed in.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeVar

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from server.admin.actor import AdminActor
from server.admin.auth import campaign_for, require_credential
from server.admin.csrf import check_origin, check_token, refuse
from server.admin.form_body import is_form_post, read_form
from server.admin.sessions import cleared_cookie_header, session_actor, session_id_of
from server.campaigns import CampaignState
from server.problems import HTTPProblem, errors_as_html
from server.render import TEMPLATES_DIR, template_environment
from server.renderer_state import RendererState
from welcomemat.ids import is_valid_id
from welcomemat.security.people import Role

__all__ = [
    "ADMIN_CSP",
    "ADMIN_REDIS_TIMEOUT_S",
    "HTML_HEADERS",
    "NO_STORE",
    "AdminEndpoint",
    "admin_endpoint",
    "admin_templates",
    "authenticate",
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
# (a campaign's theme files included). Forms post or submit to this origin only (the review
# buttons, the overview's filters).
ADMIN_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; font-src 'self'; frame-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Who the admin page being rendered is for: set by `admin_endpoint` around its route, read by
# `html_answer`, so that every admin page's header says who is signed in without each route
# passing it on.
_SIGNED_IN: ContextVar[AdminActor | None] = ContextVar("admin_signed_in", default=None)
HTML_HEADERS = {**NO_STORE, "content-security-policy": ADMIN_CSP}


AdminEndpoint = Callable[[Request, RendererState], Awaitable[Response]]
_Route = Callable[[Request], Awaitable[Response]]


@functools.cache
def admin_templates() -> jinja2.Environment:
    return template_environment(TEMPLATES_DIR)


def json_answer(payload: Any) -> JSONResponse:
    return JSONResponse(payload, headers=NO_STORE)


def html_answer(template: str, **context: Any) -> HTMLResponse:
    context.setdefault("signed_in", _SIGNED_IN.get())
    return HTMLResponse(admin_templates().get_template(template).render(**context), headers=HTML_HEADERS)


async def authenticate(request: Request, renderer: RendererState) -> AdminActor:
    """The actor of the request: its bearer token's, else its session cookie's person.

    404 when neither a bearer token is configured nor a session cookie sent (the routes are
    off), 401 for a wrong token or a session that has ended (the cookie is dropped), 503 when
    Redis cannot say.
    """
    if "authorization" not in request.headers and session_id_of(request) is not None:
        actor = await session_actor(request, renderer, ADMIN_REDIS_TIMEOUT_S)
        if actor is None:
            raise HTTPProblem(
                401,
                "your admin session has ended: sign in again with a new link",
                headers={
                    "www-authenticate": "Bearer",
                    "set-cookie": cleared_cookie_header(renderer.settings),
                },
            )
        return actor
    return AdminActor.of_credential(require_credential(request, renderer.settings.admin_credentials()))


async def _admit(request: Request, renderer: RendererState, route: str, needs: Role) -> AdminActor:
    actor = await authenticate(request, renderer)
    if actor.is_person and request.method not in _SAFE_METHODS:
        check_origin(request, renderer, route)
        form = await read_form(request, renderer) if is_form_post(request) else None
        check_token(request, renderer, route, actor, form)
    if not actor.role.allows(needs):
        raise refuse(
            request,
            renderer,
            route,
            "role",
            f"{actor.name} is a {actor.role} in {actor.tenant}: this needs {needs}",
        )
    return actor


def admin_endpoint(
    *, html: bool | Callable[[Request], bool] = False, needs: Role = Role.VIEWER
) -> Callable[[AdminEndpoint], _Route]:
    """Wrap an admin endpoint: the actor first (bearer token or session), the CSRF check of a
    session's state-changing request, then the role (`needs`). Its refusals (`HTTPProblem`,
    Redis faults) are rendered by `server.problems`: as an HTML page when `html` (or when
    `html(request)` says so), else JSON."""

    def decorate(endpoint: AdminEndpoint) -> _Route:
        route = endpoint.__name__

        @functools.wraps(endpoint)  # keeps the docstring OpenAPI reads
        async def guarded(request: Request) -> Response:
            renderer: RendererState = request.app.state.renderer
            actor = await _admit(request, renderer, route, needs)
            # who the audit log says acted, and the scope `path_campaign` applies
            request.state.actor = request.state.credential = actor
            signed_in = _SIGNED_IN.set(actor)
            try:
                return await endpoint(request, renderer)
            finally:
                _SIGNED_IN.reset(signed_in)

        return errors_as_html(html if callable(html) else (lambda request: html))(guarded)

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
