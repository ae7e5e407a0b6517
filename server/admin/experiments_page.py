"""`/admin/campaigns/{campaign}/experiments`: the campaign's copy experiment, its variants and their figures.

The experiment the published campaign declares (a campaign runs at most one at a time): its
id and zone, its state (running; stopped, and the variant kept; stopped by a guideline version
the next precompute publishes), its variants (what each changes, the split: equal shares of the
personal arm), and each variant's figures: `welcomemat.lift.groups.campaign_grouped_report` by
variant, the numbers `welcomemat report lift --by variant` prints (each variant's personal
accounts against the holdout, and each variant against the first declared, with the verdict of
the always-valid interval). Stops of experiments the campaign no longer declares are listed from
the guideline versions (`server.admin.experiment_steps`).

Stopping rewrites `campaign.yaml` (a new guideline version), which the renderer must not touch
(its filesystem may be read-only): to a person or token whose role manages experiments (`admin`)
the page shows the exact `welcomemat experiment stop` command per variant and the precompute
that follows; to a viewer or reviewer, the state and that an admin stops experiments. HTML, or
JSON when `Accept` names `application/json` first, for a person's session or a bearer token alike.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from server.admin.endpoint import (
    admin_endpoint,
    campaign_not_found_doc,
    guarded_read,
    html_answer,
    json_answer,
    path_campaign,
)
from server.admin.experiment_steps import experiment_rows
from server.admin.guideline_steps import CAMPAIGN_FILE
from server.admin.page_format import check_params, wants_json, wants_page
from server.admin.report_pages import REPORT_TIMEOUT_S
from server.renderer_state import RendererState
from welcomemat.arms import Arm
from welcomemat.campaign.guidelines import GuidelineChange, GuidelineStore
from welcomemat.lift.groups import GroupedLiftReport, LiftDimension, campaign_grouped_report
from welcomemat.lift.rate_comparison import Metric
from welcomemat.security.people import Role

__all__ = ["EXPERIMENTS_ROUTE", "experiments_page"]

EXPERIMENTS_ROUTE = "/admin/campaigns/{campaign}/experiments"


def _read_versions(
    renderer: RendererState, tenant: str, campaign: str
) -> tuple[list[GuidelineChange], str | None]:
    store = GuidelineStore(renderer.client)
    return store.history(tenant, campaign), store.active_version(tenant, campaign)


@admin_endpoint(html=wants_page)
async def experiments_page(request: Request, renderer: RendererState) -> Response:
    state = await path_campaign(request, renderer)
    tenant, campaign, view = state.tenant, state.campaign_id, state.view
    check_params(request, frozenset())
    history, active = await guarded_read(
        renderer, "admin_experiments", lambda: _read_versions(renderer, tenant, campaign)
    )
    actor = request.state.actor
    may_stop = actor.role.allows(Role.ADMIN)
    rows, earlier = experiment_rows(
        view.campaign, history, active, may_stop=may_stop, by=actor.name if actor.is_person else None
    )
    figures: GroupedLiftReport | None = None
    problems: list[str] = []
    if rows:
        now = renderer.now()
        figures = await renderer.guard.call(
            "admin_experiments_figures",
            lambda: campaign_grouped_report(
                renderer.client, view, LiftDimension.VARIANT, now=now, problems=problems
            ),
            timeout_s=max(REPORT_TIMEOUT_S, renderer.guard.timeout_s),
        )
    holdout = view.campaign.holdout_fraction
    if wants_json(request):
        return json_answer(
            {
                "tenant": tenant,
                "campaign": campaign,
                "published_version": view.campaign.guideline_version,
                "active_version": active,
                "may_stop": may_stop,
                "experiments": [
                    {**row.to_json(holdout), "figures": figures.model_dump(mode="json") if figures else None}
                    for row in rows
                ],
                "earlier": [stop.to_json() for stop in earlier],
                "problems": problems,
            }
        )
    return html_answer(
        "admin/experiments.html",
        admin_stylesheet="/static/admin.css",
        tenant=tenant,
        campaign=campaign,
        rows=rows,
        earlier=earlier,
        figures={g.group: g.report for g in figures.groups} if figures else {},
        grouped=figures,
        holdout=holdout,
        published=view.campaign.guideline_version,
        active=active,
        may_stop=may_stop,
        campaign_file=CAMPAIGN_FILE,
        personal=Arm.PERSONAL,
        metrics=(Metric.CTA_CLICK_RATE, Metric.CONVERSION_RATE),
        problems=problems,
    )


experiments_page.__doc__ = (
    """
    summary: The campaign's copy experiment, its variants, split and figures, and how it is stopped (admin).
    description: >
      The experiment the published campaign declares: id, zone, state (running; stopped and the
      variant kept; stopped by a guideline version the next precompute publishes), each variant
      (what it changes, its share of the personal arm) with its figures (`welcomemat report lift
      --by variant`: its personal accounts against the holdout, and against the first variant),
      and the stops of experiments no longer declared. Stopping rewrites campaign.yaml, which the
      renderer cannot reach: to the `admin` role (a bearer token is one) the page gives the
      exact `welcomemat experiment stop` command per variant, then `welcomemat precompute`;
      to a viewer or reviewer, none. HTML, or JSON when `Accept` names `application/json` first.
    security: [{adminBearer: []}, {adminSession: []}]
    parameters:
      - {name: campaign, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
    responses:
      200:
        description: "The experiment, its variants and figures."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {type: object}}
      400:
        description: "A query parameter: the page takes none."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {$ref: "#/components/schemas/Problem"}}
      401: {$ref: "#/components/responses/BearerRefused"}"""
    + campaign_not_found_doc()
    + """
      503: {$ref: "#/components/responses/RedisUnavailablePage"}
"""
)
