"""How an admin page answers: HTML for a browser, JSON when the request asks for it first.

The browser pages (`/admin/`, the campaign overview, the account page, the audit log) answer
HTML unless `Accept` names `application/json` before any `text/html` (what `curl -H "Accept:
application/json"` and scripts send); their refusals follow the same choice. Their links
carry query strings built here, from values already checked, percent-encoded once. A query
parameter a page does not take, or one given twice, is 400 (`check_params`).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode

from starlette.requests import Request

from server.problems import HTTPProblem

__all__ = ["check_params", "page_link", "wants_json", "wants_page"]


def wants_json(request: Request) -> bool:
    """Whether `Accept` asks for JSON ahead of HTML."""
    accept = request.headers.get("accept", "").lower()
    position = accept.find("application/json")
    if position < 0:
        return False
    html = accept.find("text/html")
    return html < 0 or position < html


def wants_page(request: Request) -> bool:
    """The opposite: an HTML page (and HTML refusals)."""
    return not wants_json(request)


def check_params(request: Request, allowed: frozenset[str]) -> None:
    """400 for a query parameter the page does not take, or one given twice: a misspelt filter
    would otherwise show every account as if it were applied."""
    names = [name for name, _ in request.query_params.multi_items()]
    takes = ", ".join(sorted(allowed)) or "none"
    for name in names:
        if name not in allowed:
            raise HTTPProblem(400, f"unknown query parameter {name[:40]!r}: this page takes {takes}")
        if names.count(name) > 1:
            raise HTTPProblem(400, f"query parameter {name!r} given more than once")


def page_link(path: str, params: Mapping[str, str]) -> str:
    """`path?a=1&b=2` (no `?` without parameters); the template escapes it for its attribute."""
    return f"{path}?{urlencode(sorted(params.items()))}" if params else path
