"""A person's admin session as the browser holds it: the cookie, and the session it names.

The cookie (`wm-admin`; no campaign's identity cookie, `wm_<campaign>`, can have this name)
holds the session id and nothing else: HttpOnly (no script reads it), SameSite=Strict (no other
site's page, link or form sends it), Path=/admin (no visitor page receives it), Secure when
`WELCOMEMAT_PUBLIC_URL` is https, and Max-Age the absolute timeout. The session itself, its
timeouts and the person's role are `welcomemat.security.admin_sessions`, read through the
renderer's Redis guard (Redis down: 503, as every admin route).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from server.admin.actor import AdminActor
from server.renderer_state import RendererState
from welcomemat.security.admin_sessions import read_session
from welcomemat.settings import Settings

__all__ = [
    "SESSION_COOKIE",
    "SESSION_PATH",
    "clear_session_cookie",
    "cleared_cookie_header",
    "session_actor",
    "session_id_of",
    "set_session_cookie",
]

SESSION_COOKIE = "wm-admin"
SESSION_PATH = "/admin"


def _secure(settings: Settings) -> bool:
    return settings.public_url.startswith("https://")


def set_session_cookie(response: Response, session_id: str, settings: Settings) -> None:
    response.set_cookie(
        SESSION_COOKIE,
        session_id,
        max_age=settings.admin_session_max_s,
        path=SESSION_PATH,
        secure=_secure(settings),
        httponly=True,
        samesite="strict",
    )


def cleared_cookie_header(settings: Settings) -> str:
    """A `Set-Cookie` value that makes the browser drop the session cookie."""
    secure = "; Secure" if _secure(settings) else ""
    return f"{SESSION_COOKIE}=; Max-Age=0; Path={SESSION_PATH}; HttpOnly; SameSite=Strict{secure}"


def clear_session_cookie(response: Response, settings: Settings) -> None:
    response.headers.append("set-cookie", cleared_cookie_header(settings))


def session_id_of(request: Request) -> str | None:
    return request.cookies.get(SESSION_COOKIE) or None


async def session_actor(request: Request, renderer: RendererState, timeout_s: float) -> AdminActor | None:
    """The person whose live session the request's cookie names (None: no cookie, or a session
    that has ended), its last use moved to now."""
    session_id = session_id_of(request)
    if session_id is None:
        return None
    settings = renderer.settings
    found = await renderer.guard.call(
        "admin_session",
        lambda: read_session(
            renderer.client,
            session_id,
            now=renderer.clock(),
            idle_s=settings.admin_session_idle_s,
            max_s=settings.admin_session_max_s,
        ),
        timeout_s=max(timeout_s, renderer.guard.timeout_s),
    )
    return AdminActor.of_session(found) if found is not None else None
