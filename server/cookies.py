"""The first-party identification cookie: its name, its flags, and when we do not set it.

One cookie per campaign (`wm_<campaign id>`), holding a COOKIE-kind token bound to the
tenant and campaign, so a cookie of one campaign never identifies anyone in another.
Flags: HttpOnly (no script reads it), Secure, SameSite=Lax (sent on the top-level
navigation from an email link, not on cross-site subrequests). A request carrying the
Global Privacy Control signal (`Sec-GPC: 1`) or `DNT: 1` gets no cookie at all.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import Response

__all__ = ["cookie_name", "set_identity_cookie", "tracking_refused"]

_PREFIX = "wm_"


def cookie_name(campaign: str) -> str:
    """Campaign ids are opaque ids (letters, digits, `_.-`): valid cookie-name characters."""
    return _PREFIX + campaign


def tracking_refused(headers: Headers) -> bool:
    """The visitor asked not to be tracked (GPC or DNT)."""
    return headers.get("sec-gpc", "").strip() == "1" or headers.get("dnt", "").strip() == "1"


def set_identity_cookie(response: Response, campaign: str, token: str, max_age_s: int) -> None:
    response.set_cookie(
        cookie_name(campaign),
        token,
        max_age=max_age_s,
        path="/",
        secure=True,
        httponly=True,
        samesite="lax",
    )
