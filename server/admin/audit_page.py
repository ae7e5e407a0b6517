"""`GET /admin/audit`: a tenant's audit log (`welcomemat.records.audit`), newest first, a page at a time.

A tenant-scoped credential reads its tenant's log only: any other `tenant` is 404, as an
unknown one. An unscoped one reads any tenant's, chosen with `tenant` among those with a
published campaign (the first by default). Pages go back with `before` (a stream entry id),
`limit` entries each (1-200, 50). HTML, or JSON when `Accept` asks for it first.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.requests import Request
from starlette.responses import Response

from server.admin.endpoint import admin_endpoint, guarded_read, html_answer, json_answer
from server.admin.page_format import check_params, page_link, wants_json, wants_page
from server.problems import HTTPProblem
from server.renderer_state import RendererState
from welcomemat import keys
from welcomemat.campaign.owner import parse_campaigns_index
from welcomemat.errors import StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.records.audit import STREAM_ID, read_page

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "audit_log"]

DEFAULT_PAGE_SIZE = 50  # entries
MAX_PAGE_SIZE = 200  # entries: a bigger page is refused


def _limit(request: Request) -> int:
    raw = request.query_params.get("limit") or str(DEFAULT_PAGE_SIZE)
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 4 and 1 <= int(raw) <= MAX_PAGE_SIZE):
        raise HTTPProblem(400, f"limit must be a whole number from 1 to {MAX_PAGE_SIZE}")
    return int(raw)


@admin_endpoint(html=wants_page)
async def audit_log(request: Request, renderer: RendererState) -> Response:
    check_params(request, frozenset({"tenant", "before", "limit"}))
    credential = request.state.credential
    asked = request.query_params.get("tenant") or None
    if asked is not None and not is_valid_id(asked):
        raise HTTPProblem(400, f"tenant {asked[:80]!r} is not a valid id")
    before = request.query_params.get("before") or None
    if before is not None and not STREAM_ID.fullmatch(before):
        raise HTTPProblem(400, "before must be an audit entry id (`<ms>-<n>`)")
    limit = _limit(request)
    if credential.tenant is not None:
        tenants = [credential.tenant]
        if asked is not None and asked != credential.tenant:
            raise HTTPProblem(404, f"no audit log for tenant {asked!r}")
    else:
        raw: Iterable[bytes] = await guarded_read(
            renderer,
            "admin_audit_tenants",
            lambda: renderer.client.hkeys(keys.campaigns_index_key()),  # type: ignore[arg-type,return-value]
        )
        tenants = sorted({t for owners in parse_campaigns_index(raw).values() for t in owners})
        if asked is not None and asked not in tenants:
            tenants = sorted([*tenants, asked])
    tenant = asked or (tenants[0] if tenants else None)
    unreadable: list[StoredValueError] = []
    entries, following = (
        await guarded_read(
            renderer,
            "admin_audit",
            lambda: read_page(renderer.client, tenant, before=before, limit=limit, problems=unreadable),
        )
        if tenant is not None
        else ([], None)
    )
    if unreadable:
        renderer.metrics.stored_value_errors.inc(len(unreadable))
    params = {"tenant": tenant} if tenant else {}
    if limit != DEFAULT_PAGE_SIZE:
        params["limit"] = str(limit)
    older = page_link("/admin/audit", {**params, "before": following}) if following else None
    newest = page_link("/admin/audit", params) if before else None
    if wants_json(request):
        return json_answer(
            {
                "tenant": tenant,
                "tenants": tenants,
                "entries": [e.model_dump(mode="json", exclude={"op"}) for e in entries],
                "unreadable": len(unreadable),
                "older": older,
                "newest": newest,
            }
        )
    return html_answer(
        "admin/audit.html",
        admin_stylesheet="/static/admin.css",
        tenant=tenant,
        campaign=None,
        tenants=tenants,
        tenant_links=[(t, page_link("/admin/audit", {"tenant": t})) for t in tenants],
        entries=entries,
        unreadable=len(unreadable),
        older=older,
        newest=newest,
    )


audit_log.__doc__ = """
    summary: A tenant's audit log, newest first, a page at a time (admin).
    description: >
      Who published, approved, rejected, rolled back or erased what, when and why. A
      tenant-scoped token reads its own tenant's log only. `before` pages back from an entry id,
      `limit` entries a page (1-200, 50); an empty value is as if not given. HTML, or JSON
      when `Accept` names `application/json` first. Bearer admin token (`adminBearer`).
    security: [{adminBearer: []}, {adminSession: []}]
    parameters:
      - {name: tenant, in: query, required: false, schema: {$ref: "#/components/schemas/IdOrBlank"}}
      - name: before
        in: query
        required: false
        schema: {type: string, pattern: "^([0-9]{1,19}-[0-9]{1,19})?$"}
      - name: limit
        in: query
        required: false
        schema: {anyOf: [{type: integer, minimum: 1, maximum: 200}, {type: string, maxLength: 0}]}
    responses:
      200:
        description: "A page of the log."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {type: object}}
      400:
        description: "A query value that is not one of its kind, or an unknown or repeated parameter."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {$ref: "#/components/schemas/Problem"}}
      401: {$ref: "#/components/responses/BearerRefused"}
      404:
        $ref: "#/components/responses/AdminNotFound"
        description: Admin routes off, or (to a tenant-scoped token) another tenant's log.
      503: {$ref: "#/components/responses/RedisUnavailablePage"}
"""
