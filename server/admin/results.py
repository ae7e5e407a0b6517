"""`GET /admin/results/{campaign}`: the campaign's results page, and its CSV and JSON downloads.

What a marketer reads: visits, reached accounts, CTA clicks and conversions per arm and copy
variant, per day; the lift per account assigned with its fixed and always-valid intervals, the
negative outcomes, and the visitors' rates as a labelled, descriptive second view; the rung mix and the
fallback reasons of the zones the personal arm is served; the best and worst fact types; what the
last precompute run cost per personal account it published ("unknown" for an unpriced model). The
numbers are `welcomemat.lift.results` (the `lift` in it is exactly `welcomemat report lift --json`).

Guarded like every admin route: the bearer token through `admin_auth.require_credential` (404
when no admin token is set, 401 without one), the campaign through `admin_auth.campaign_for`
(a tenant-scoped token gets another tenant's campaign as an unknown one: 404). The page is
server-rendered (Jinja2, autoescaped), runs no script and loads nothing but `/static/admin.css`;
its charts are SVG drawn on the server and shown as `data:` images, so it works without
JavaScript under the admin CSP (`server.admin.endpoint.ADMIN_CSP`). `?format=json` and `?format=csv`
download the same numbers, each written by its one serializer. Redis down: 503, as the lift page.
A stored value that does not decode is left out of the numbers, never a 5xx: the page names
each, the downloads count them in `SKIPPED_HEADER`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from server.admin.endpoint import NO_STORE, admin_endpoint, html_answer, json_answer
from server.admin.report_pages import build_report, report_format, report_operation_doc, wants_html_report
from server.renderer_state import RendererState
from welcomemat.lift.chart import chart_data_uri
from welcomemat.lift.results import campaign_results, results_csv
from welcomemat.lift.results_chart import DAILY_MEASURES, render_daily_chart
from welcomemat.lift.svg import svg_data_uri
from welcomemat.model_cost import cost_line, format_usd

__all__ = ["RESULTS_ROUTE", "SKIPPED_HEADER", "results_page"]

RESULTS_ROUTE = "/admin/results/{campaign}"
# On the JSON and CSV downloads: how many stored values (a record, a zone set, a conversion, an
# event) did not decode and were left out of the numbers.
SKIPPED_HEADER = "x-welcomemat-skipped"
_FORMATS = ("html", "json", "csv")


@admin_endpoint(html=wants_html_report)
async def results_page(request: Request, renderer: RendererState) -> Response:
    """
    summary: The campaign's results over time, with the lift and its intervals (admin).
    description: >
      Visits, reached accounts, CTA clicks and conversions per arm and copy variant per day
      (UTC, the event stream's 30 days), the lift personal vs holdout per account assigned
      (intent to treat) with fixed and always-valid 95% intervals, negative outcomes per arm,
      the rates among accounts that visited under their own label (descriptive, biased by who
      visits), variants against the reference, the rung mix and fallback
      reasons of the personal arm's zones, fact types ranked by CTA click rate, and the last
      precompute run's cost per personal account it published (`last_run_cost`). HTML with
      server-drawn SVG charts (no script), or the same numbers as `format=json` (its `lift` is
      `welcomemat report lift --json`) or `format=csv` (section, group, day, measure, value).
      Bearer admin token (`adminBearer`).
    """
    fmt = report_format(request, _FORMATS)
    report, problems = await build_report(request, "admin_results", campaign_results)
    # The downloads carry no problems list (the JSON is `report lift --json`): how many stored
    # values were skipped is said in a header, and each is named on the HTML page.
    skipped = {SKIPPED_HEADER: str(len(problems))}
    if fmt == "json":
        answer = json_answer(report.model_dump(mode="json"))
        answer.headers.update(skipped)
        return answer
    if fmt == "csv":
        filename = f"{report.tenant}-{report.campaign}-results.csv"  # ids: [A-Za-z0-9_.-] only
        return Response(
            results_csv(report),
            media_type="text/csv; charset=utf-8",
            headers={**NO_STORE, **skipped, "content-disposition": f'attachment; filename="{filename}"'},
        )
    charts = {m: svg_data_uri(render_daily_chart(report.daily, m)) for m in DAILY_MEASURES}
    return html_answer(
        "admin/results.html",
        admin_stylesheet="/static/admin.css",
        tenant=report.tenant,
        campaign=report.campaign,
        results=report,
        report=report.lift,
        lift_chart=chart_data_uri(report.lift),
        charts=charts,
        measures=DAILY_MEASURES,
        problems=problems,
        money=format_usd,
        cost_line=cost_line,
    )


results_page.__doc__ = (results_page.__doc__ or "").rstrip() + report_operation_doc(
    _FORMATS,
    """
        description: "The results (HTML, JSON or CSV)."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {$ref: "#/components/schemas/ResultsReport"}}
          text/csv: {schema: {type: string}}""",
)
