"""`GET /admin/lift/{campaign}`: the lift report as an operator page, with a chart (or JSON, or SVG).

Bearer admin token through `admin_auth.require_credential` (404 when unset, 401 without it),
the campaign through `admin_auth.campaign_for` (a tenant-scoped token: 404 for another tenant's,
as for an unknown campaign). The report is `welcomemat.lift.campaign_lift_report`, the same one `welcomemat
report lift` prints. The chart is drawn on the server (`welcomemat.lift_chart`) and shown as
an `<img>` with a `data:` URI: no script, no chart library, nothing of it parsed as the
page's HTML, and it works under the admin CSP (`img-src 'self' data:`).

`?format=json` answers the report as JSON, `?format=svg` the chart alone; `?type=` (repeatable)
counts only those conversion types. Like every admin route, when Redis cannot answer this is
503 with `Retry-After` (counted by the renderer's Redis guard), never a 500 and never a
made-up report.
"""

from __future__ import annotations

import functools

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from server.admin import ADMIN_CSP
from server.admin_auth import campaign_for, require_credential
from server.problems import HTTPProblem, errors_as_html
from server.render import TEMPLATES_DIR, template_environment
from server.renderer_state import RendererState
from welcomemat.conversions import ConversionType
from welcomemat.credentials import Credential
from welcomemat.ids import is_valid_id
from welcomemat.lift import LiftReport, campaign_lift_report
from welcomemat.lift_chart import chart_data_uri, render_lift_chart

__all__ = [
    "LIFT_REPORT_TIMEOUT_S",
    "LIFT_ROUTE",
    "REPORT_REFUSALS_DOC",
    "conversion_types",
    "lift_page",
]


LIFT_ROUTE = "/admin/lift/{campaign}"
# A report reads every published zone set and account record of the campaign: seconds to
# tens of seconds at 100k accounts, which an operator waits for once. Generous, because the
# guard counts a timeout as a Redis fault (towards its breaker); still bounded, so a hung
# Redis is a 503 and not a request that never ends.
LIFT_REPORT_TIMEOUT_S = 120.0
_NO_STORE = {"cache-control": "no-store"}
_FORMATS = ("html", "json", "svg")
# The refusals of a report page (this one, the results page), as OpenAPI reads them from the
# endpoint's docstring: appended to it below.
REPORT_REFUSALS_DOC = """
      400:
        description: "Unknown format or conversion type (HTML for `format=html`, else JSON)."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {$ref: "#/components/schemas/Problem"}}
      401: {$ref: "#/components/responses/BearerRefused"}
      404:
        $ref: "#/components/responses/AdminNotFound"
        description: >-
          Admin routes off, or no such campaign (to a tenant-scoped token, also any its tenant
          does not own).
      503:
        $ref: "#/components/responses/RedisUnavailablePage"
        description: "Redis is unavailable (HTML or JSON)."
"""


@functools.cache
def _templates() -> jinja2.Environment:
    return template_environment(TEMPLATES_DIR)


def _wants_html(request: Request) -> bool:
    """The report's own errors as the format asked for: an HTML page, or JSON (`json`, `svg`, unknown)."""
    return request.query_params.get("format", "html") == "html"


def conversion_types(request: Request) -> frozenset[ConversionType] | None:
    """The `?type=` conversion types to count (None: every type); 400 naming an unknown one."""
    names = request.query_params.getlist("type")
    if not names:
        return None
    known = {t.value for t in ConversionType}
    unknown = sorted(set(names) - known)
    if unknown:
        raise HTTPProblem(400, f"unknown conversion type {unknown[0]!r}; use {', '.join(sorted(known))}")
    return frozenset(ConversionType(n) for n in names)


async def _report(
    request: Request, renderer: RendererState, credential: Credential
) -> tuple[LiftReport, list[str]]:
    campaign_id = request.path_params["campaign"]
    if not is_valid_id(campaign_id):
        raise HTTPProblem(404, f"campaign {campaign_id!r} is not a valid id")
    types = conversion_types(request)
    state = await campaign_for(credential, renderer.campaigns, campaign_id)
    view, now = state.view, renderer.now()
    problems: list[str] = []
    report = await renderer.guard.call(
        "admin_lift",
        lambda: campaign_lift_report(renderer.client, view, now=now, types=types, problems=problems),
        timeout_s=max(LIFT_REPORT_TIMEOUT_S, renderer.guard.timeout_s),
    )
    return report, problems


@errors_as_html(_wants_html)
async def lift_page(request: Request) -> Response:
    """
    summary: The campaign's lift report, personal vs holdout, with a chart (admin).
    description: >
      Per arm: accounts, accounts reached, visits, CTA clicks, conversions; reach, CTA click
      rate and conversion rate with 95% Wilson intervals; the difference with its Newcombe
      interval; warnings when samples are too small to conclude. HTML with a server-rendered
      SVG chart, or `format=json` / `format=svg`. Bearer admin token (`adminBearer`).
    security: [{adminBearer: []}]
    parameters:
      - {name: campaign, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
      - {name: format, in: query, required: false, schema: {type: string, enum: [html, json, svg]}}
      - name: type
        in: query
        required: false
        schema: {type: string, enum: [meeting_booked, opportunity, closed_won]}
        description: count only these conversion types (repeatable)
    responses:
      200:
        description: "The report (HTML, JSON or SVG)."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {$ref: "#/components/schemas/LiftReport"}}
          image/svg+xml: {schema: {type: string}}
    """
    renderer: RendererState = request.app.state.renderer
    credential = require_credential(request, renderer.settings.admin_credentials())  # raises 404 / 401
    fmt = request.query_params.get("format", "html")
    if fmt not in _FORMATS:
        raise HTTPProblem(400, f"format must be one of {', '.join(_FORMATS)}")
    report, problems = await _report(request, renderer, credential)
    if fmt == "json":
        return JSONResponse(report.model_dump(mode="json"), headers=_NO_STORE)
    if fmt == "svg":
        return Response(
            render_lift_chart(report),
            media_type="image/svg+xml",
            headers={**_NO_STORE, "content-security-policy": "default-src 'none'"},
        )
    html = (
        _templates()
        .get_template("admin/lift.html")
        .render(
            admin_stylesheet="/static/admin.css",
            tenant=report.tenant,
            campaign=report.campaign,
            report=report,
            chart_uri=chart_data_uri(report),
            problems=problems,
        )
    )
    return HTMLResponse(html, headers={**_NO_STORE, "content-security-policy": ADMIN_CSP})


lift_page.__doc__ = (lift_page.__doc__ or "").rstrip() + REPORT_REFUSALS_DOC
