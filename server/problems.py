"""Errors as HTTP answers, in one place: an exception carries its status, one handler renders it.

    HTTPException (Starlette)   the router's own (unknown route, wrong method) and the
    │                           bearer check's: rendered by path, like any unknown route
    └── HTTPProblem             a request refused on purpose: status, a message safe to show,
                                headers (e.g. Retry-After), extra JSON fields

`problem_handler` is registered on the app for these and for the two faults an operator or
API route may let through, mapped here rather than per route:

- `RedisUnavailable` ▸ 503, `Retry-After`: Redis could not answer in its budget (the guard
  already counted it); a retry will do.
- `StoredValueError` ▸ 503, `Retry-After`, counted and logged with its key: the message shown
  says only that a stored value does not decode (keys and decoder text stay in the log).

Visitor routes let no fault through: the pages serve the fallback (`faults.fail_closed`),
`/v1/zones` answers with no zones. Their refusals (an unknown campaign, a bad parameter) are
`HTTPProblem`s too, answered with `problem_response` rather than raised: the hot routes
bypass Starlette's handlers (`server.hot_routes`).

JSON (`{"error": message, **fields}`) or HTML (`{status}.html`, else `error.html`), chosen by
the route: an endpoint decorated with `errors_as_html` says which of its requests want HTML;
otherwise the path decides (`/v1/`, `/openapi`, `/metrics` and the admin JSON routes are
JSON, everything else HTML). The bearer check's 401/404 are plain `HTTPException`s rendered
by path only, exactly as the router renders an unknown route: routes that are off must look
as if they did not exist. Every `HTTPProblem` answer is `Cache-Control: no-store`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from server.log_redaction import redacted_target
from server.metrics import RendererMetrics
from server.redis_guard import RedisUnavailable
from server.render import PageRenderer
from welcomemat.errors import StoredValueError

__all__ = [
    "PROBLEM_CLASSES",
    "RETRY_AFTER_S",
    "HTTPProblem",
    "errors_as_html",
    "problem_handler",
    "problem_response",
    "redis_unavailable",
]

log = logging.getLogger(__name__)

# What a 503 tells clients to wait before retrying, in seconds (the breaker's reset is of this order).
RETRY_AFTER_S = 5
_NO_STORE = {"cache-control": "no-store"}
_JSON_PREFIXES = ("/v1/", "/openapi", "/metrics")
_WANTS_HTML = "wants_html"

_E = TypeVar("_E", bound=Callable[..., Any])


class HTTPProblem(HTTPException):
    """A request refused on purpose: its status, a message safe to show the client, and headers.

    `public_message` goes out as it is: it names what the client sent or may do, never an
    internal value (a Redis key, an exception's text). `fields` are extra JSON members
    (e.g. `current_version` of a 409).
    """

    def __init__(
        self,
        status: int,
        public_message: str,
        *,
        headers: Mapping[str, str] | None = None,
        fields: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(status, public_message, dict(headers) if headers else None)
        self.fields = dict(fields or {})

    @property
    def status(self) -> int:
        return self.status_code

    @property
    def public_message(self) -> str:
        return self.detail


def redis_unavailable() -> HTTPProblem:
    """503 with `Retry-After`: what an operator or API route answers while Redis cannot."""
    return HTTPProblem(503, "Redis is unavailable; retry later", headers={"retry-after": str(RETRY_AFTER_S)})


def _stored_value_unreadable() -> HTTPProblem:
    return HTTPProblem(
        503,
        "a stored value does not decode; the renderer's log names it",
        headers={"retry-after": str(RETRY_AFTER_S)},
    )


def errors_as_html(wants_html: Callable[[Request], bool]) -> Callable[[_E], _E]:
    """Declare which requests of an endpoint want their `HTTPProblem`s as an HTML page.

    Put it outermost (on the function the `Route` holds): the handler reads it from the
    request's endpoint.
    """

    def mark(endpoint: _E) -> _E:
        setattr(endpoint, _WANTS_HTML, wants_html)
        return endpoint

    return mark


def _by_path(request: Request) -> bool:
    return not request.url.path.startswith(_JSON_PREFIXES)


def _wants_html(request: Request, problem: HTTPException) -> bool:
    if isinstance(problem, HTTPProblem):
        choose = getattr(request.scope.get("endpoint"), _WANTS_HTML, None)
        if choose is not None:
            return bool(choose(request))
        if request.url.path.startswith("/admin/"):
            return False  # operator APIs answer JSON unless their endpoint says otherwise
    return _by_path(request)


def problem_response(request: Request, problem: HTTPException, pages: PageRenderer) -> Response:
    """The answer for `problem`: JSON or HTML as the route wants, with its headers."""
    status, message = problem.status_code, str(problem.detail)
    headers = dict(problem.headers or {})
    fields: dict[str, Any] = {}
    if isinstance(problem, HTTPProblem):
        headers = {**_NO_STORE, **headers}
        fields = problem.fields
    if _wants_html(request, problem):
        return HTMLResponse(pages.error(status, message), status_code=status, headers=headers)
    return JSONResponse({"error": message, **fields}, status_code=status, headers=headers)


def problem_handler(
    pages: PageRenderer, metrics: RendererMetrics
) -> Callable[[Request, Exception], Awaitable[Response]]:
    """The app's one handler for `PROBLEM_CLASSES`."""

    async def handle(request: Request, exc: Exception) -> Response:
        if isinstance(exc, HTTPException):
            problem = exc
        elif isinstance(exc, RedisUnavailable):
            log.warning("%s %s: %s", request.method, redacted_target(request.url.path), exc)
            problem = redis_unavailable()
        elif isinstance(exc, StoredValueError):
            metrics.stored_value_errors.inc()
            log.error("%s", exc)  # names the key and what is wrong; the client is told less
            problem = _stored_value_unreadable()
        else:  # pragma: no cover - registered only for PROBLEM_CLASSES
            raise exc
        return problem_response(request, problem, pages)

    return handle


# What `problem_handler` is registered for (HTTPProblem is an HTTPException).
PROBLEM_CLASSES: tuple[type[Exception], ...] = (HTTPException, RedisUnavailable, StoredValueError)
