"""`GET /admin/results/{campaign}`: the campaign's results page, and its CSV and JSON downloads.

What a marketer reads: visits, reached accounts, CTA clicks and conversions per arm and copy
variant, per day; the lift with its fixed and always-valid intervals; the rung mix and the
fallback reasons of the zones the personal arm is served; the best and worst fact types. The
numbers are `welcomemat.results` (the `lift` in it is exactly `welcomemat report lift --json`).

Guarded like every admin route: the bearer token through `admin_auth.require_credential` (404
when no admin token is set, 401 without one), the campaign through `admin_auth.campaign_for`
(a tenant-scoped token gets another tenant's campaign as an unknown one: 404). The page is
server-rendered (Jinja2, autoescaped), runs no script and loads nothing but `/static/admin.css`;
its charts are SVG drawn on the server and shown as `data:` images, so it works without
JavaScript under the admin CSP (`server.admin.ADMIN_CSP`). `?format=json` and `?format=csv`
download the same numbers, each written by its one serializer. Redis down: 503, as the lift page.
"""

from __future__ import annotations

import functools

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from server.admin import ADMIN_CSP
from server.admin_auth import campaign_for, require_credential
from server.admin_lift import LIFT_REPORT_TIMEOUT_S, REPORT_REFUSALS_DOC, conversion_types
from server.problems import HTTPProblem, errors_as_html
from server.render import TEMPLATES_DIR, template_environment
from server.renderer_state import RendererState
from welcomemat.ids import is_valid_id
from welcomemat.lift_chart import chart_data_uri
from welcomemat.results import ResultsReport, campaign_results, results_csv
from welcomemat.results_chart import DAILY_MEASURES, render_daily_chart
from welcomemat.svg import svg_data_uri

__all__ = ["RESULTS_ROUTE", "results_page"]

RESULTS_ROUTE = "/admin/results/{campaign}"
_NO_STORE = {"cache-control": "no-store"}
_FORMATS = ("html", "json", "csv")


@functools.cache
def _templates() -> jinja2.Environment:
    return template_environment(TEMPLATES_DIR)


async def _results(request: Request, renderer: RendererState) -> tuple[ResultsReport, list[str]]:
    campaign_id = request.path_params["campaign"]
    if not is_valid_id(campaign_id):
        raise HTTPProblem(404, f"campaign {campaign_id!r} is not a valid id")
    types = conversion_types(request)
    state = await campaign_for(request.state.credential, renderer.campaigns, campaign_id)
    view, now = state.view, renderer.now()
    problems: list[str] = []
    report = await renderer.guard.call(
        "admin_results",
        lambda: campaign_results(renderer.client, view, now=now, types=types, problems=problems),
        timeout_s=max(LIFT_REPORT_TIMEOUT_S, renderer.guard.timeout_s),
    )
    return report, problems


@errors_as_html(lambda request: request.query_params.get("format", "html") == "html")
async def results_page(request: Request) -> Response:
    """
    summary: The campaign's results over time, with the lift and its intervals (admin).
    description: >
      Visits, reached accounts, CTA clicks and conversions per arm and copy variant per day
      (UTC, the event stream's 30 days), the lift personal vs holdout with fixed and
      always-valid 95% intervals, variants against the reference, the rung mix and fallback
      reasons of the personal arm's zones, and fact types ranked by CTA click rate. HTML with
      server-drawn SVG charts (no script), or the same numbers as `format=json` (its `lift` is
      `welcomemat report lift --json`) or `format=csv` (section, group, day, measure, value).
      Bearer admin token (`adminBearer`).
    security: [{adminBearer: []}]
    parameters:
      - {name: campaign, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
      - {name: format, in: query, required: false, schema: {type: string, enum: [html, json, csv]}}
      - name: type
        in: query
        required: false
        schema: {type: string, enum: [meeting_booked, opportunity, closed_won]}
        description: count only these conversion types (repeatable)
    responses:
      200:
        description: "The results (HTML, JSON or CSV)."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {$ref: "#/components/schemas/ResultsReport"}}
          text/csv: {schema: {type: string}}
    """
    renderer: RendererState = request.app.state.renderer
    # raises 404 / 401; campaign_for then decides what this credential may see
    request.state.credential = require_credential(request, renderer.settings.admin_credentials())
    fmt = request.query_params.get("format", "html")
    if fmt not in _FORMATS:
        raise HTTPProblem(400, f"format must be one of {', '.join(_FORMATS)}")
    report, problems = await _results(request, renderer)
    if fmt == "json":
        return JSONResponse(report.model_dump(mode="json"), headers=_NO_STORE)
    if fmt == "csv":
        filename = f"{report.tenant}-{report.campaign}-results.csv"  # ids: [A-Za-z0-9_.-] only
        return Response(
            results_csv(report),
            media_type="text/csv; charset=utf-8",
            headers={**_NO_STORE, "content-disposition": f'attachment; filename="{filename}"'},
        )
    charts = {m: svg_data_uri(render_daily_chart(report.daily, m)) for m in DAILY_MEASURES}
    html = (
        _templates()
        .get_template("admin/results.html")
        .render(
            admin_stylesheet="/static/admin.css",
            tenant=report.tenant,
            campaign=report.campaign,
            results=report,
            report=report.lift,
            lift_chart=chart_data_uri(report.lift),
            charts=charts,
            measures=DAILY_MEASURES,
            problems=problems,
        )
    )
    return HTMLResponse(html, headers={**_NO_STORE, "content-security-policy": ADMIN_CSP})


results_page.__doc__ = (results_page.__doc__ or "").rstrip() + REPORT_REFUSALS_DOC
