"""Signing people in and out of the admin pages, and the page they land on.

- `GET /admin/sign-in/{token}`: the link `welcomemat admin invite` printed. It only shows a
  page with a "Sign in" button: a GET uses nothing up (mail scanners and link previews fetch
  links), and a link that is forged or past its 15 minutes is refused here already (400, 410).
- `POST /admin/sign-in/{token}` (the button; its `Origin` must be `WELCOMEMAT_PUBLIC_URL`'s):
  the invite is used up (`welcomemat.security.people.take_invite`: once, atomically), a session
  is started under a fresh random id (a session the browser had is ended first), its cookie set
  (`server.admin.sessions`), and the browser sent to `/admin` (303).
- `POST /admin/sign-out` (CSRF-checked like every state-changing admin request): the session
  ends and its cookie is dropped.
- `GET /admin` (the campaigns page, `server.admin.overview_pages`) is where signing in lands.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server.admin.csrf import check_origin
from server.admin.endpoint import (
    ADMIN_REDIS_TIMEOUT_S,
    admin_endpoint,
    guarded_read,
    html_answer,
)
from server.admin.sessions import clear_session_cookie, session_id_of, set_session_cookie
from server.problems import HTTPProblem, errors_as_html
from server.qr import see_other
from server.renderer_state import RendererState
from welcomemat.errors import InviteUsed, TokenError, TokenExpired
from welcomemat.security.admin_sessions import end_session, session_hash, start_session
from welcomemat.security.people import INVITE_PATH, take_invite
from welcomemat.security.tokens import TokenSigner

__all__ = ["sign_in_page", "sign_in_routes", "sign_out"]

_STYLESHEET = "/static/admin.css"


def _signer(renderer: RendererState) -> TokenSigner:
    if renderer.signer is None:  # no WELCOMEMAT_SECRET: no invite was ever signed for this renderer
        raise HTTPProblem(404, "Not Found")
    return renderer.signer


def _refused(exc: TokenError) -> HTTPProblem:
    if isinstance(exc, InviteUsed | TokenExpired):
        return HTTPProblem(410, "this sign-in link was used already or has expired: ask for a new one")
    return HTTPProblem(400, "this is not a sign-in link of ours: copy the whole link, or ask for a new one")


@errors_as_html(lambda request: True)
async def sign_in_page(request: Request) -> Response:
    """The sign-in page (GET) and signing in (POST) with an invite's token."""
    renderer: RendererState = request.app.state.renderer
    signer = _signer(renderer)
    token = request.path_params["token"]
    if request.method != "POST":
        try:
            signer.verify_invite(token)  # forged or expired: said now; used or not: the POST says
        except TokenError as exc:
            raise _refused(exc) from None
        return html_answer(
            "admin/sign_in.html",
            admin_stylesheet=_STYLESHEET,
            action=INVITE_PATH + token,
            signed_in=None,
            tenant=None,
            campaign=None,
        )
    check_origin(request, renderer, "sign_in")  # no session yet: the origin is the check
    settings = renderer.settings
    previous = session_id_of(request)

    def act() -> str | TokenError:
        try:
            invite = take_invite(renderer.client, signer, token)
        except TokenError as exc:
            return exc
        if previous is not None:  # a new sign-in never keeps the session the browser had
            end_session(renderer.client, session_hash(previous))
        session_id, _ = start_session(
            renderer.client,
            email=invite.email,
            tenant=invite.tenant,
            role=invite.role,
            now=renderer.clock(),
            idle_s=settings.admin_session_idle_s,
            max_s=settings.admin_session_max_s,
        )
        return session_id

    started = await renderer.guard.call(
        "admin_sign_in", act, timeout_s=max(ADMIN_REDIS_TIMEOUT_S, renderer.guard.timeout_s)
    )
    if isinstance(started, TokenError):
        raise _refused(started)
    answer = see_other(f"{settings.public_url}/admin")
    set_session_cookie(answer, started, settings)
    return answer


@admin_endpoint(html=True)
async def sign_out(request: Request, renderer: RendererState) -> Response:
    """End the session (a bearer token has none to end) and drop its cookie."""
    actor = request.state.actor
    if actor.session_hash is not None:
        hashed = actor.session_hash
        await guarded_read(renderer, "admin_sign_out", lambda: end_session(renderer.client, hashed))
    answer = html_answer(
        "admin/signed_out.html", admin_stylesheet=_STYLESHEET, signed_in=None, tenant=None, campaign=None
    )
    clear_session_cookie(answer, renderer.settings)
    return answer


def sign_in_routes() -> list[Route]:
    # Browser pages, not an API: left out of the OpenAPI document.
    return [
        Route(INVITE_PATH + "{token}", sign_in_page, methods=["GET", "POST"], include_in_schema=False),
        Route("/admin/sign-out", sign_out, methods=["POST"], include_in_schema=False),
    ]
