"""The one check every `/admin/...` and operator route makes: the bearer token.

Admin routes pass `WELCOMEMAT_ADMIN_TOKEN`, the CRM's `POST /v1/conversions` passes
`WELCOMEMAT_CRM_TOKEN`. A token unset means its routes are off (404, as if they did not
exist), so a renderer deployed without the variable exposes nothing. A missing or wrong
token is 401 with `WWW-Authenticate: Bearer`; the comparison is constant-time so the
token cannot be guessed a byte at a time from response times.
"""

from __future__ import annotations

import hmac

from starlette.exceptions import HTTPException
from starlette.requests import Request

__all__ = ["require_admin"]

_SCHEME = "bearer "


def require_admin(request: Request, token: str | None) -> None:
    """Raise 404 when `token` is unset (its routes are off), 401 unless the request carries it."""
    if not token:
        raise HTTPException(404, "Not Found")
    header = request.headers.get("authorization", "")
    offered = header[len(_SCHEME) :].strip() if header[: len(_SCHEME)].lower() == _SCHEME else ""
    if not offered or not hmac.compare_digest(offered.encode(), token.encode()):
        raise HTTPException(401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"})
