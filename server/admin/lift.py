"""`GET /admin/lift/{campaign}`: the lift report as an operator page, with a chart (or JSON, or SVG).

Bearer admin token through `admin_auth.require_credential` (404 when unset, 401 without it),
the campaign through `admin_auth.campaign_for` (a tenant-scoped token: 404 for another tenant's,
as for an unknown campaign). The report is `welcomemat.lift.outcomes.campaign_lift_report`,
the same one `welcomemat report lift` prints. The chart is drawn on the server
(`welcomemat.lift.chart`) and shown as an `<img>` with a `data:` URI: no script, no chart
library, nothing of it parsed as the page's HTML, and it works under the admin CSP
(`img-src 'self' data:`).

`?format=json` answers the report as JSON, `?format=svg` the chart alone; `?type=` (repeatable)
counts only those conversion types. Like every admin route, when Redis cannot answer this is
503 with `Retry-After` (counted by the renderer's Redis guard), never a 500 and never a
made-up report.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from server.admin.endpoint import NO_STORE, admin_endpoint, html_answer, json_answer
from server.admin.report_pages import build_report, report_format, report_operation_doc, wants_html_report
from server.renderer_state import RendererState
from welcomemat.lift.chart import chart_data_uri, render_lift_chart
from welcomemat.lift.outcomes import campaign_lift_report

__all__ = ["LIFT_ROUTE", "lift_page"]


LIFT_ROUTE = "/admin/lift/{campaign}"
_FORMATS = ("html", "json", "svg")


@admin_endpoint(html=wants_html_report)
async def lift_page(request: Request, renderer: RendererState) -> Response:
    """
    summary: The campaign's lift report, personal vs holdout, with a chart (admin).
    description: >
      Per arm: accounts assigned, accounts reached, visits, CTA clicks, conversions,
      unsubscribes, spam complaints; reach, CTA click rate and conversion rate per account
      assigned (intent to treat) with 95% Wilson intervals and the difference with its Newcombe
      interval; the same rates among accounts that visited as a second view labelled
      descriptive (`reached_only`); negative outcomes per arm (`negative_outcomes`); warnings
      when samples are too small to conclude or the personal arm raises a negative outcome.
      HTML with a server-rendered SVG chart, or `format=json` / `format=svg`. Bearer admin
      token (`adminBearer`).
    """
    fmt = report_format(request, _FORMATS)
    report, problems = await build_report(request, "admin_lift", campaign_lift_report)
    if fmt == "json":
        return json_answer(report.model_dump(mode="json"))
    if fmt == "svg":
        return Response(
            render_lift_chart(report),
            media_type="image/svg+xml",
            headers={**NO_STORE, "content-security-policy": "default-src 'none'"},
        )
    return html_answer(
        "admin/lift.html",
        admin_stylesheet="/static/admin.css",
        tenant=report.tenant,
        campaign=report.campaign,
        report=report,
        chart_uri=chart_data_uri(report),
        problems=problems,
    )


lift_page.__doc__ = (lift_page.__doc__ or "").rstrip() + report_operation_doc(
    _FORMATS,
    """
        description: "The report (HTML, JSON or SVG)."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {$ref: "#/components/schemas/LiftReport"}}
          image/svg+xml: {schema: {type: string}}""",
)
