"""`GET /admin/campaigns/{campaign}/accounts/{account}`: one account of a campaign, on one page.

What `/admin/preview` and `/admin/explain` show, together: the page as the account sees it
(its arm, rendered exactly as a visitor's request renders it, in a sandboxed frame), each
zone's provenance (rung, reason, cited facts with their source links through the URL gate,
failed checks; `server.admin.preview`), the zone-set history (the current version and the
previous one a rollback would restore, `keys.previous_zone_set_key`), and the audit entries
that concern the account. An account with neither zone set nor explain record is 404. HTML,
or JSON when `Accept` asks for it first.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from server.admin.account_reads import AUDIT_ENTRIES_SCANNED, account_audit, account_explain
from server.admin.endpoint import (
    admin_endpoint,
    guarded_read,
    html_answer,
    json_answer,
    path_campaign,
    path_id,
)
from server.admin.page_format import check_params, wants_json, wants_page
from server.admin.preview import personal_refusal, read_page_zones, zone_provenance
from server.problems import HTTPProblem
from server.renderer_state import RendererState
from welcomemat import keys
from welcomemat.arms import assign_arm
from welcomemat.errors import StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import ZoneSet

__all__ = ["account_page"]

# As the preview: the account's latest entries, looking back this far in the tenant's log.


def _history(
    renderer: RendererState, tenant: str, campaign: str, account: str
) -> tuple[bytes | None, ZoneSet | None, ZoneSet | None, str | None]:
    """(explain record, current zone set, previous zone set, why the previous could not be read)."""
    store = ZoneSetStore(renderer.client)
    raw: Any = renderer.client.get(keys.explain_key(tenant, campaign, account))
    current = store.get(tenant, campaign, account)
    try:
        previous, problem = store.get_previous(tenant, campaign, account), None
    except StoredValueError as exc:  # the page still shows; say what is missing
        previous, problem = None, str(exc)
    return raw, current, previous, problem


@admin_endpoint(html=wants_page)
async def account_page(request: Request, renderer: RendererState) -> Response:
    state = await path_campaign(request, renderer)
    account = path_id(request, "account")
    check_params(request, frozenset({"page"}))
    view = state.view
    tenant, campaign = view.tenant, view.campaign_id
    page_id = request.query_params.get("page", "landing")
    if not is_valid_id(page_id) or view.page(page_id) is None:
        raise HTTPProblem(404, f"campaign {campaign!r} has no page {page_id!r}")
    raw, current, previous, previous_problem = await guarded_read(
        renderer, "admin_account", lambda: _history(renderer, tenant, campaign, account)
    )
    if raw is None and current is None and previous is None:
        raise HTTPProblem(404, f"no zone set for account {account!r} in {tenant}/{campaign}")
    audit = await account_audit(renderer, "admin_account_audit", tenant, account)
    explain, explain_problem = account_explain(renderer, raw, tenant, campaign, account, current)
    arm = assign_arm(tenant, campaign, account, view.campaign.holdout_fraction)
    now = renderer.now()
    if wants_json(request):
        return json_answer(
            {
                "tenant": tenant,
                "campaign": campaign,
                "account_id": account,
                "arm": arm.value,
                "personal_refusal": personal_refusal(arm, current, now),
                "current": current.model_dump(mode="json") if current else None,
                "previous": previous.model_dump(mode="json") if previous else None,
                "previous_problem": previous_problem,
                "explain": explain.model_dump(mode="json") if explain else None,
                "explain_problem": explain_problem,
                "audit": [e.model_dump(mode="json", exclude={"op"}) for e in audit.entries],
            }
        )
    page_html = renderer.pages.render(view, page_id, arm, current, now).finish("", "admin-preview")
    return html_answer(
        "admin/account.html",
        admin_stylesheet="/static/admin.css",
        tenant=tenant,
        campaign=campaign,
        account=account,
        pages=sorted(view.campaign.pages),
        page_id=page_id,
        arm=arm.value,
        zone_set=current,
        previous=previous,
        previous_problem=previous_problem,
        refusal=personal_refusal(arm, current, now),
        explain=explain,
        explain_problem=explain_problem,
        rows=zone_provenance(read_page_zones(page_html), current, explain),
        page_html=page_html,
        audit=audit.entries,
        audit_unreadable=audit.unreadable,
        audit_scanned=AUDIT_ENTRIES_SCANNED,
    )


account_page.__doc__ = """
    summary: One account of a campaign - its page, provenance, zone-set history and audit entries (admin).
    description: >
      The page rendered for the account's arm as a visitor's request renders it (no engagement
      event logged), each zone's rung, reason, cited facts and checks, the current and previous
      zone sets (what a rollback would restore), and the account's latest audit entries. HTML,
      or JSON when `Accept` names `application/json` first. Bearer admin token (`adminBearer`).
    security: [{adminBearer: []}, {adminSession: []}]
    parameters:
      - {name: campaign, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
      - {name: account, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
      - {name: page, in: query, required: false, schema: {type: string, default: landing}}
    responses:
      200:
        description: "The account (HTML or JSON)."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {type: object}}
      400:
        description: "A query parameter the page does not take, or one given twice."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {$ref: "#/components/schemas/Problem"}}
      401: {$ref: "#/components/responses/BearerRefused"}
      404:
        $ref: "#/components/responses/AdminNotFound"
        description: >-
          Admin routes off, or no such campaign (to a tenant-scoped token, also any its tenant
          does not own), page or account.
      503: {$ref: "#/components/responses/RedisUnavailablePage"}
"""
