"""The one error handler: each kind of error to its status, body and headers, as JSON or HTML."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from server.metrics import RendererMetrics
from server.problems import PROBLEM_CLASSES, HTTPProblem, errors_as_html, problem_handler
from server.redis_guard import RedisUnavailable
from server.render import PageRenderer, template_environment
from welcomemat.errors import StoredValueError

SECRET_KEY = "wm:v1:{t|c}:zs:acct_internal"


def _raiser(exc: Exception) -> Any:
    async def endpoint(request: Request) -> Response:
        raise exc

    return endpoint


@pytest.fixture
def metrics() -> RendererMetrics:
    return RendererMetrics()


def _client(metrics: RendererMetrics, routes: list[Route]) -> TestClient:
    pages = PageRenderer(template_environment(), 1, metrics)
    handle = problem_handler(pages, metrics)
    app = Starlette(routes=routes, exception_handlers=dict.fromkeys(PROBLEM_CLASSES, handle))
    return TestClient(app, raise_server_exceptions=False)


def test_a_problem_on_an_api_route_is_json_with_its_status_fields_and_headers(
    metrics: RendererMetrics,
) -> None:
    problem = HTTPProblem(
        409, "version 1 is no longer current", headers={"retry-after": "7"}, fields={"current_version": 2}
    )
    client = _client(metrics, [Route("/v1/thing", _raiser(problem))])
    answer = client.get("/v1/thing")
    assert answer.status_code == 409
    assert answer.json() == {"error": "version 1 is no longer current", "current_version": 2}
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["cache-control"] == "no-store"
    assert answer.headers["retry-after"] == "7"


def test_a_problem_carries_status_and_public_message() -> None:
    problem = HTTPProblem(404, "no such thing")
    assert (problem.status, problem.public_message, problem.fields) == (404, "no such thing", {})
    assert isinstance(problem, HTTPException) and problem.status_code == 404


def test_an_endpoint_that_wants_html_gets_the_error_page_escaped(metrics: RendererMetrics) -> None:
    endpoint = errors_as_html(lambda request: request.query_params.get("format", "html") == "html")(
        _raiser(HTTPProblem(400, "unknown <b>arm</b>"))
    )
    client = _client(metrics, [Route("/admin/page", endpoint)])
    page = client.get("/admin/page")
    assert page.status_code == 400
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["cache-control"] == "no-store"
    assert "unknown &lt;b&gt;arm&lt;/b&gt;" in page.text and "<b>arm" not in page.text
    as_json = client.get("/admin/page", params={"format": "json"})
    assert as_json.status_code == 400 and as_json.json() == {"error": "unknown <b>arm</b>"}


def test_a_404_problem_renders_the_not_found_page(metrics: RendererMetrics) -> None:
    endpoint = errors_as_html(lambda request: True)(_raiser(HTTPProblem(404, "no published campaign 'x'")))
    answer = _client(metrics, [Route("/admin/preview", endpoint)]).get("/admin/preview")
    assert answer.status_code == 404 and "Page not found" in answer.text
    assert "no published campaign &#39;x&#39;" in answer.text


def test_admin_routes_answer_json_unless_their_endpoint_says_html(metrics: RendererMetrics) -> None:
    answer = _client(metrics, [Route("/admin/explain", _raiser(HTTPProblem(404, "gone")))]).get(
        "/admin/explain"
    )
    assert answer.status_code == 404 and answer.json() == {"error": "gone"}


def test_redis_unavailable_is_503_with_retry_after_and_no_internals(metrics: RendererMetrics) -> None:
    fault = RedisUnavailable("admin_explain", "timeout", detail="10.0.0.7:6379 read timed out")
    client = _client(
        metrics,
        [
            Route("/v1/conversions", _raiser(fault)),
            Route("/admin/lift", errors_as_html(lambda request: True)(_raiser(fault))),
        ],
    )
    answer = client.get("/v1/conversions")
    assert answer.status_code == 503
    assert answer.json() == {"error": "Redis is unavailable; retry later"}
    assert answer.headers["retry-after"] == "5" and answer.headers["cache-control"] == "no-store"
    page = client.get("/admin/lift")
    assert page.status_code == 503 and page.headers["retry-after"] == "5"
    assert page.headers["content-type"].startswith("text/html")
    for text in (answer.text, page.text):
        assert "10.0.0.7" not in text and "admin_explain" not in text and "timeout" not in text


def test_a_stored_value_that_does_not_decode_is_503_counted_and_its_key_not_shown(
    metrics: RendererMetrics,
) -> None:
    fault = StoredValueError(SECRET_KEY, "Expecting value: line 1 column 1 (char 0)")
    answer = _client(metrics, [Route("/admin/explain", _raiser(fault))]).get("/admin/explain")
    assert answer.status_code == 503 and "does not decode" in answer.json()["error"]
    assert answer.headers["retry-after"] == "5" and answer.headers["cache-control"] == "no-store"
    assert "acct_internal" not in answer.text and "Expecting value" not in answer.text
    assert metrics.stored_value_errors._value.get() == 1


@pytest.mark.parametrize(("path", "json"), [("/nowhere", False), ("/v1/nowhere", True), ("/metrics/x", True)])
def test_the_routers_own_errors_are_rendered_by_path_and_unchanged(
    metrics: RendererMetrics, path: str, json: bool
) -> None:
    client = _client(metrics, [Route("/here", lambda request: PlainTextResponse("ok"))])
    answer = client.get(path)
    assert answer.status_code == 404
    assert "cache-control" not in answer.headers  # as before: only refusals on purpose are no-store
    if json:
        assert answer.json() == {"error": "Not Found"}
    else:
        assert answer.headers["content-type"].startswith("text/html") and "Page not found" in answer.text


def test_a_plain_http_exception_keeps_its_headers_and_the_path_decides_the_format(
    metrics: RendererMetrics,
) -> None:
    refusal = HTTPException(401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"})
    client = _client(metrics, [Route("/admin/x", _raiser(refusal)), Route("/v1/x", _raiser(refusal))])
    page = client.get("/admin/x")  # as an unknown /admin/ route would be: off routes look absent
    assert page.status_code == 401 and page.headers["www-authenticate"] == "Bearer"
    assert page.headers["content-type"].startswith("text/html")
    api = client.get("/v1/x")
    assert api.status_code == 401 and api.json() == {"error": "a valid bearer token is required"}
    assert api.headers["www-authenticate"] == "Bearer"
