"""The first-party identification cookie: its name, its flags, and when we do not set it.

One cookie per campaign (`wm_<campaign id>`), holding a COOKIE-kind token bound to the
tenant and campaign, so a cookie of one campaign never identifies anyone in another.
Flags: HttpOnly (no script reads it), Secure, SameSite=Lax (sent on the top-level
navigation from an email link, not on cross-site subrequests). A request carrying the
Global Privacy Control signal (`Sec-GPC: 1`) or `DNT: 1` gets no cookie at all.
"""

from __future__ import annotations

from http.cookies import _unquote  # what Starlette's cookie_parser uses

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from server.scope_headers import header_value

__all__ = [
    "cookie_name",
    "cookie_value",
    "identity_cookie",
    "identity_cookie_header",
    "set_identity_cookie",
    "tracking_refused",
]

_PREFIX = "wm_"


def cookie_name(campaign: str) -> str:
    """Campaign ids are opaque ids (letters, digits, `_.-`): valid cookie-name characters."""
    return _PREFIX + campaign


def identity_cookie(request: Request, campaign: str) -> str | None:
    """The campaign's cookie value. Reads the raw headers and looks into a Cookie header only
    when our name is in it: most page views carry other cookies (analytics), not ours."""
    name = cookie_name(campaign)
    needle = name.encode("ascii")
    for key, value in request.scope["headers"]:
        if key == b"cookie" and needle in value:
            found = cookie_value(value.decode("latin-1"), name)
            if found is not None:
                return found
    return None


def cookie_value(header: str, name: str) -> str | None:
    """`starlette.requests.cookie_parser(header).get(name)` for a non-empty `name`, without
    building (and unquoting) every other cookie of the header: the last pair named `name`
    wins, name and value stripped, the value unquoted the same way."""
    found = None
    for chunk in header.split(";"):
        key, sep, value = chunk.partition("=")
        if sep and key.strip() == name:
            found = value
    return None if found is None else str(_unquote(found.strip()))


def tracking_refused(scope: Scope) -> bool:
    """The visitor asked not to be tracked (GPC or DNT)."""
    return (header_value(scope, b"sec-gpc") or "").strip() == "1" or (
        header_value(scope, b"dnt") or ""
    ).strip() == "1"


def identity_cookie_header(campaign: str, token: str, max_age_s: int) -> tuple[bytes, bytes]:
    """The `Set-Cookie` header for the campaign's cookie: the bytes Starlette's `set_cookie`
    writes for these flags (tests compare the two), without building a `SimpleCookie`.
    Nothing needs quoting: the name is an id and a token is `[A-Za-z0-9_.-]`."""
    flags = f"HttpOnly; Max-Age={int(max_age_s)}; Path=/; SameSite=lax; Secure"
    value = f"{cookie_name(campaign)}={token}; {flags}"
    return b"set-cookie", value.encode("latin-1")


def set_identity_cookie(response: Response, header: tuple[bytes, bytes]) -> None:
    """Add a header `identity_cookie_header` made (remembered with the token that earned it)."""
    response.raw_headers.append(header)
