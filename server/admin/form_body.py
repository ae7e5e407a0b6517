"""An HTML form's body on an admin route (`application/x-www-form-urlencoded`), read once.

Read by the one bounded reader (`server.bodies`), at most `ADMIN_BODY_MAX_BYTES`, and kept on
the request: the CSRF check (`server.admin.csrf`) and the route read the same fields. A field
sent twice, a body that is not UTF-8 or has more fields than a form of ours sends is 400.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request

from server.bodies import read_bounded_body
from server.problems import HTTPProblem
from server.renderer_state import RendererState
from welcomemat.limits import ADMIN_BODY_MAX_BYTES

__all__ = ["FORM_MEDIA_TYPE", "MAX_FORM_FIELDS", "is_form_post", "read_form"]

FORM_MEDIA_TYPE = "application/x-www-form-urlencoded"
# The most fields an admin form sends (csrf, version, held, reason): a few more are refused.
MAX_FORM_FIELDS = 8


def is_form_post(request: Request) -> bool:
    """Whether the body is a form's (what a browser's `<form method=post>` sends)."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return media_type == FORM_MEDIA_TYPE


async def read_form(request: Request, renderer: RendererState) -> dict[str, str]:
    """The form's fields (400 when malformed; `server.bodies`' refusals when too big or slow)."""
    cached: dict[str, str] | None = getattr(request.state, "admin_form", None)
    if cached is not None:
        return cached
    body = await read_bounded_body(request, ADMIN_BODY_MAX_BYTES, renderer.tuning.body_read_timeout_s)
    try:
        pairs = parse_qsl(
            body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS, errors="strict"
        )
    except UnicodeDecodeError:
        raise HTTPProblem(400, "the form is not UTF-8") from None
    except ValueError:
        raise HTTPProblem(400, f"the form has more than {MAX_FORM_FIELDS} fields") from None
    fields: dict[str, str] = {}
    for name, value in pairs:
        if name in fields:
            raise HTTPProblem(400, f"the form field {name!r} is sent twice")
        fields[name] = value
    request.state.admin_form = fields
    return fields
