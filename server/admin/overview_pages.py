"""`GET /admin/` (the campaigns a credential may see) and `GET /admin/campaigns/{campaign}` (one
campaign's accounts: filters, a search by account id prefix, pages).

The campaigns come from the campaigns index (`keys.campaigns_index_key`), each kept only when
`campaign_for` (the one choke point) lets the credential reach it, as for a campaign in a path:
a tenant-scoped token sees its tenant's campaigns and nothing of the others. The
overview is `welcomemat.zones.overview.read_overview` (an index written with the zone sets,
fast at 100,000 accounts); its query values are checked there before any key is built, and a
bad one is 400 naming the parameter. HTML for a browser, JSON when `Accept` asks for it
(`server.admin.page_format`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import redis
from starlette.requests import Request
from starlette.responses import Response

from server.admin.auth import campaign_for
from server.admin.endpoint import admin_endpoint, guarded_read, html_answer, json_answer, path_campaign
from server.admin.page_format import check_params, page_link, wants_json, wants_page
from server.problems import HTTPProblem
from server.renderer_state import RendererState
from welcomemat import keys
from welcomemat.arms import Arm
from welcomemat.campaign.owner import parse_campaigns_index
from welcomemat.errors import InputError, StoredValueError
from welcomemat.zones.overview import (
    QUERY_PARAMS,
    OverviewQuery,
    overview_built,
    read_overview,
    rebuild_overview,
)
from welcomemat.zones.zoneset import Rung, ZoneSetStatus

__all__ = ["admin_home", "campaign_overview"]

log = logging.getLogger(__name__)

_ID_PARAM = '{name: %s, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}'
_PAGE_RESPONSES = """
      401: {$ref: "#/components/responses/BearerRefused"}
      503: {$ref: "#/components/responses/RedisUnavailablePage"}
"""


@admin_endpoint(html=wants_page)
async def admin_home(request: Request, renderer: RendererState) -> Response:
    check_params(request, frozenset())
    credential = request.state.credential
    raw: Iterable[bytes] = await guarded_read(
        renderer,
        "admin_campaigns",
        lambda: renderer.client.hkeys(keys.campaigns_index_key()),  # type: ignore[arg-type,return-value]
    )
    campaigns: list[dict[str, Any]] = []
    for campaign_id in sorted(parse_campaigns_index(raw)):
        try:  # the one choke point decides, as for a campaign in a path
            state = await campaign_for(credential, renderer.campaigns, campaign_id)
        except HTTPProblem:  # not this credential's, or no longer published
            continue
        except StoredValueError:  # its config does not decode: its own pages say so
            renderer.metrics.stored_value_errors.inc()
            continue
        campaigns.append({"tenant": state.tenant, "campaign": campaign_id})
    campaigns.sort(key=lambda c: (c["tenant"], c["campaign"]))

    def totals() -> list[Any]:
        pipe = renderer.client.pipeline(transaction=False)
        for c in campaigns:
            pipe.zcard(keys.overview_ids_key(c["tenant"], c["campaign"]))
        return pipe.execute() if campaigns else []

    for c, total in zip(
        campaigns, await guarded_read(renderer, "admin_campaign_totals", totals), strict=True
    ):
        c["accounts_indexed"] = int(total)
    if wants_json(request):
        return json_answer({"campaigns": campaigns})
    return html_answer(
        "admin/campaigns.html",
        admin_stylesheet="/static/admin.css",
        tenant=credential.tenant,
        campaign=None,
        campaigns=campaigns,
    )


admin_home.__doc__ = (
    """
    summary: The campaigns this credential may see, with links to each one's pages (admin).
    description: >
      Every published campaign whose owner the credential may act on (a tenant-scoped token:
      its tenant's only), with how many accounts its overview lists. HTML, or JSON when
      `Accept` names `application/json` first. Bearer admin token (`adminBearer`).
    security: [{adminBearer: []}, {adminSession: []}]
    responses:
      200:
        description: "The campaigns."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {type: object}}
      400:
        description: "A query parameter the page does not take, or one given twice."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {$ref: "#/components/schemas/Problem"}}
      404:
        $ref: "#/components/responses/AdminNotFound"
        description: Admin routes off."""
    + _PAGE_RESPONSES
)


def _rebuild(client: redis.Redis, tenant: str, campaign: str) -> None:
    try:
        rebuild_overview(client, tenant, campaign)
    except Exception:  # a thread of its own: nobody else would hear of it; the next page view tries again
        log.exception("rebuilding the overview index of %s/%s failed", tenant, campaign)


def _visit_iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


@admin_endpoint(html=wants_page)
async def campaign_overview(request: Request, renderer: RendererState) -> Response:
    state = await path_campaign(request, renderer)
    tenant, campaign = state.tenant, state.campaign_id
    check_params(request, QUERY_PARAMS)
    try:
        query = OverviewQuery.from_params(request.query_params)
    except InputError as exc:
        raise HTTPProblem(400, exc.message) from None
    holdout = state.view.campaign.holdout_fraction
    client = renderer.client
    if not await guarded_read(
        renderer, "admin_overview_built", lambda: overview_built(client, tenant, campaign)
    ):
        # A campaign published before the index: built once (about 30 s at 100,000 accounts) on a
        # thread of its own, so this page (and the next, until it is done) shows what it holds so far.
        threading.Thread(
            target=_rebuild, args=(client, tenant, campaign), name=f"overview-{campaign}", daemon=True
        ).start()
    page = await guarded_read(
        renderer,
        "admin_overview",
        lambda: read_overview(client, tenant, campaign, query, holdout_fraction=holdout, build_missing=False),
    )
    path = f"/admin/campaigns/{campaign}"
    next_link = page_link(path, query.params(after=page.next_after)) if page.next_after else None
    prev_link = page_link(path, query.params(before=page.prev_before)) if page.prev_before else None
    if wants_json(request):
        return json_answer(
            {
                "tenant": tenant,
                "campaign": campaign,
                **page.to_json(),
                "next": next_link,
                "previous": prev_link,
            }
        )
    return html_answer(
        "admin/overview.html",
        admin_stylesheet="/static/admin.css",
        tenant=tenant,
        campaign=campaign,
        query=query,
        page=page,
        next_link=next_link,
        prev_link=prev_link,
        statuses=[s.value for s in ZoneSetStatus],
        rungs=[r.value for r in Rung],
        arms=[a.value for a in Arm],
        reasons=sorted(page.counts.get("reason", {})),
        variants=sorted(page.counts.get("variant", {})),
        visit=_visit_iso,
    )


campaign_overview.__doc__ = (
    """
    summary: A campaign's accounts, filtered, searched and paged (admin).
    description: >
      One row per account with a zone set: arm, each zone's rung and reason, copy variant,
      status, zone-set version, last visit. Filters `status`, `rung` (any zone's), `reason` (a
      reason code, any zone's), `variant` (`-`: none), `arm`; `q` searches account ids by
      prefix; `after` / `before` page from an account id, `limit` rows (1-200, 50). HTML, or
      JSON when `Accept` names `application/json` first. Bearer admin token (`adminBearer`).
    security: [{adminBearer: []}, {adminSession: []}]
    parameters:
      - """
    + _ID_PARAM % "campaign"
    + """
      - {name: q, in: query, required: false, schema: {type: string, pattern: "^[A-Za-z0-9_.-]{0,64}$"}}
      - name: status
        in: query
        required: false
        schema: {type: string, enum: [published, pending_review, rejected, ""]}
      - name: rung
        in: query
        required: false
        schema: {type: string, enum: [personal, segment, default, ""]}
      - name: arm
        in: query
        required: false
        schema: {type: string, enum: [personal, holdout, anonymous, ""]}
      - {name: reason, in: query, required: false, schema: {$ref: "#/components/schemas/IdOrBlank"}}
      - {name: variant, in: query, required: false, schema: {type: string}}
      - {name: after, in: query, required: false, schema: {$ref: "#/components/schemas/IdOrBlank"}}
      - {name: before, in: query, required: false, schema: {$ref: "#/components/schemas/IdOrBlank"}}
      - name: limit
        in: query
        required: false
        schema: {anyOf: [{type: integer, minimum: 1, maximum: 200}, {type: string, maxLength: 0}]}
    responses:
      200:
        description: "A page of the overview."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {type: object}}
      400:
        description: "A bad query value (the parameter named), or an unknown or repeated parameter."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {$ref: "#/components/schemas/Problem"}}
      404:
        $ref: "#/components/responses/AdminNotFound"
        description: >-
          Admin routes off, or no such campaign (to a tenant-scoped token, also any its tenant
          does not own)."""
    + _PAGE_RESPONSES
)
