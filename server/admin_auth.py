"""The one check every `/admin/...` and operator route makes: the bearer token, and whose it is.

Admin routes pass every admin token by name (`Settings.admin_credentials`: the shared
`WELCOMEMAT_ADMIN_TOKEN` as `admin`, each `WELCOMEMAT_ADMIN_TOKENS` entry as its name), the
CRM's `POST /v1/conversions` passes `WELCOMEMAT_CRM_TOKEN`. No token configured means the
routes are off (404, as if they did not exist), so a renderer deployed without the variables
exposes nothing. A missing or wrong token is 401 with `WWW-Authenticate: Bearer`. The
comparison is constant-time and made against every configured token (no early exit), so
neither a token nor which names exist can be guessed from response times. The name of the
token that matched is who the audit log says acted.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.requests import Request

__all__ = ["require_admin"]

_SCHEME = "bearer "


def require_admin(request: Request, tokens: str | Mapping[str, str] | None) -> str:
    """The name of the token the request carries (a lone token string is named `admin`).

    Raises 404 when no token is configured (its routes are off), 401 unless the request carries one.
    """
    named = {"admin": tokens} if isinstance(tokens, str) else dict(tokens or {})
    named = {name: token for name, token in named.items() if token}
    if not named:
        raise HTTPException(404, "Not Found")
    header = request.headers.get("authorization", "")
    offered = header[len(_SCHEME) :].strip() if header[: len(_SCHEME)].lower() == _SCHEME else ""
    matched: str | None = None
    for name, token in named.items():
        if hmac.compare_digest(offered.encode(), token.encode()) and offered:
            matched = name
    if matched is None:
        raise HTTPException(401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"})
    return matched
