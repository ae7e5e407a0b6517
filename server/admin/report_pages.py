"""What the admin report pages (`/admin/lift`, `/admin/results`) share, written once.

Both are `admin_endpoint`s (a bearer token or a person's session), and read the campaign from
the path through `admin_auth.campaign_for` (a tenant-scoped token or person gets another
tenant's campaign as an unknown one: 404), take the same `?format=` and
`?type=` parameters, build their report from Redis behind the renderer's guard (Redis down:
503 with `Retry-After`, never a 500 and never a made-up report), answer their own errors as
an HTML page or JSON by the format asked for, and document the same refusals.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, TypeVar

import redis
from starlette.requests import Request

from server.admin.auth import campaign_for
from server.admin.endpoint import campaign_not_found_doc
from server.problems import HTTPProblem
from server.renderer_state import RendererState
from welcomemat.campaign.view import CampaignView
from welcomemat.ids import is_valid_id
from welcomemat.records.conversions import GOAL_TYPES, ConversionType, goal_types

__all__ = [
    "REPORT_REFUSALS_DOC",
    "REPORT_TIMEOUT_S",
    "ReportBuilder",
    "build_report",
    "conversion_types",
    "report_format",
    "report_operation_doc",
    "wants_html_report",
]

# A report reads every published zone set and account record of the campaign: seconds to
# tens of seconds at 100k accounts, which an operator waits for once. Generous, because the
# guard counts a timeout as a Redis fault (towards its breaker); still bounded, so a hung
# Redis is a 503 and not a request that never ends.
REPORT_TIMEOUT_S = 120.0
# The refusals of a report page, as OpenAPI reads them from the endpoint's docstring:
# appended to each page's own.
REPORT_REFUSALS_DOC = (
    """
      400:
        description: "Unknown format or conversion type (HTML for `format=html`, else JSON)."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {$ref: "#/components/schemas/Problem"}}
      401: {$ref: "#/components/responses/BearerRefused"}"""
    + campaign_not_found_doc()
    + """
      503:
        $ref: "#/components/responses/RedisUnavailablePage"
        description: "Redis is unavailable (HTML or JSON)."
"""
)

_Report = TypeVar("_Report", covariant=True)


class ReportBuilder(Protocol[_Report]):
    """Builds a report from Redis (`welcomemat.lift.outcomes.campaign_lift_report`,
    `welcomemat.lift.results.campaign_results`): the campaign view, now, the conversion types to
    count (None: every type), and a list it appends the stored values it skipped to."""

    def __call__(
        self,
        client: redis.Redis,
        view: CampaignView,
        *,
        now: datetime,
        types: frozenset[ConversionType] | None = None,
        problems: list[str] | None = None,
    ) -> _Report: ...


def wants_html_report(request: Request) -> bool:
    """A report's own errors as the format asked for: an HTML page, or JSON (any other format)."""
    return request.query_params.get("format", "html") == "html"


def conversion_types(request: Request) -> frozenset[ConversionType] | None:
    """The `?type=` conversion types to count (None: every goal type); 400 naming an unknown one,
    or a negative outcome (shown on its own, never counted as a conversion)."""
    try:
        return goal_types(request.query_params.getlist("type"))
    except ValueError as exc:
        raise HTTPProblem(400, f"type: {exc}") from None


def report_format(request: Request, formats: tuple[str, ...]) -> str:
    """The `?format=` asked for (default `html`); 400 for a format not in `formats`. Called once
    `admin_endpoint` has found the actor (`build_report` then decides what it may see)."""
    fmt = request.query_params.get("format", "html")
    if fmt not in formats:
        raise HTTPProblem(400, f"format must be one of {', '.join(formats)}")
    return fmt


async def build_report(
    request: Request, guard_name: str, build: ReportBuilder[_Report]
) -> tuple[_Report, list[str]]:
    """The path's campaign's report (404 for an invalid id or a campaign this credential may
    not see) and the problems its builder skipped, built behind the renderer's Redis guard."""
    renderer: RendererState = request.app.state.renderer
    campaign_id = request.path_params["campaign"]
    if not is_valid_id(campaign_id):
        raise HTTPProblem(404, f"campaign {campaign_id!r} is not a valid id")
    types = conversion_types(request)
    state = await campaign_for(request.state.credential, renderer.campaigns, campaign_id)
    view, now = state.view, renderer.now()
    problems: list[str] = []
    report = await renderer.guard.call(
        guard_name,
        lambda: build(renderer.client, view, now=now, types=types, problems=problems),
        timeout_s=max(REPORT_TIMEOUT_S, renderer.guard.timeout_s),
    )
    return report, problems


def report_operation_doc(formats: tuple[str, ...], ok: str) -> str:
    """The OpenAPI text of a report page after its summary and description: its parameters
    (`?format=` one of `formats`, `?type=`), its 200 answer (`ok`) and its refusals."""
    return (
        f"""
    security: [{{adminBearer: []}}, {{adminSession: []}}]
    parameters:
      - {{name: campaign, in: path, required: true, schema: {{$ref: "#/components/schemas/Id"}}}}
      - {{name: format, in: query, required: false, schema: {{type: string, enum: [{", ".join(formats)}]}}}}
      - name: type
        in: query
        required: false
        schema: {{type: string, enum: [{", ".join(t.value for t in ConversionType if t in GOAL_TYPES)}]}}
        description: count only these conversion types (repeatable; negative outcomes are shown on their own)
    responses:
      200:{ok}"""
        + REPORT_REFUSALS_DOC
    )
