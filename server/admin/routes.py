"""`/admin/...`: the operator's views of a campaign — explain, preview-as-account, the review queue.

Every route finds who is asking before anything else (`server.admin.endpoint.admin_endpoint`: a
bearer token, or a person's session; 404 when no admin token is configured and no session
cookie is sent, as if the routes did not exist; 401 without either), then checks every
id with `is_valid_id` before it reaches a Redis key, and reaches the campaign only through
`admin_auth.campaign_for`: a token scoped to a tenant gets any other tenant's campaign as an
unknown one (404), and nothing of it is read or written. Every answer is
`Cache-Control: no-store`: it holds internal fields no cache may keep.

The shared steps are `server.admin.endpoint`; the review queue and its decisions (approve,
reject, rollback, audit-logged) are `server.admin.review_queue`; the guideline versions and a
candidate's sign-off are `server.admin.guidelines_page`; the copy experiment, its variants and
their figures are `server.admin.experiments_page`.

These are operator tools, not visitor pages: when Redis cannot answer they say so with
503 (JSON, `Retry-After`) rather than a fallback, because a fallback would be a wrong
answer to "what does this account see". Reads go through the renderer's Redis guard
(breaker, counted faults) with a budget longer than a page's. The review queue uses
`welcomemat.zones.review` (it needs nothing but Redis and the shared core), so the CLI and
these routes approve and reject through one implementation.
"""

from __future__ import annotations

import logging

from starlette.endpoints import HTTPEndpoint
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server.admin.account_page import account_page
from server.admin.account_reads import AUDIT_ENTRIES_SCANNED, account_audit, account_explain
from server.admin.audit_page import audit_log
from server.admin.endpoint import (
    admin_endpoint,
    guarded_read,
    html_answer,
    json_answer,
    path_campaign,
    path_id,
)
from server.admin.experiments_page import EXPERIMENTS_ROUTE, experiments_page
from server.admin.guidelines_page import GUIDELINES_ROUTE, SIGNOFF_ROUTE, guideline_signoff, guidelines_page
from server.admin.overview_pages import admin_home, campaign_overview
from server.admin.payloads import (
    parse_explain_record,
)
from server.admin.preview import personal_refusal, read_page_zones, zone_provenance
from server.admin.review_queue import review_approve, review_queue, review_reject, review_rollback
from server.admin.sign_in import sign_in_routes
from server.bodies import read_bounded_body
from server.problems import HTTPProblem, errors_as_html
from server.renderer_state import RendererState
from welcomemat import keys
from welcomemat.arms import Arm, assign_arm
from welcomemat.errors import InputError, StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.outreach.email_preview import BranchPreview, branch_previews
from welcomemat.outreach.email_template import (
    MAX_TEMPLATE_BYTES,
    EmailTemplate,
    TemplateError,
    parse_template,
)
from welcomemat.security.links import contact_links
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import ZoneSet

__all__ = [
    "admin_routes",
    "explain_account",
    "preview_account",
    "preview_account_email",
]

log = logging.getLogger(__name__)


def _explain_and_zone_set(
    renderer: RendererState, tenant: str, campaign: str, account: str
) -> tuple[bytes | None, ZoneSet | None]:
    raw = renderer.client.get(keys.explain_key(tenant, campaign, account))
    return raw, ZoneSetStore(renderer.client).get(tenant, campaign, account)  # type: ignore[return-value]


# -- explain ---------------------------------------------------------------------------------


@admin_endpoint()
async def explain_account(request: Request, renderer: RendererState) -> Response:
    """
    summary: Why an account sees what it sees (admin).
    description: >
      The explain record precompute stored with the account's zone set: identity, every
      fact's trust decision, every zone's rung, text, cited facts and failed checks. Status
      and version are the live zone set's. Bearer admin token (`adminBearer`).
    security: [{adminBearer: []}, {adminSession: []}]
    parameters:
      - {name: campaign, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
      - {name: account, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
    responses:
      200:
        description: "The explain record (JSON)."
        content: {application/json: {schema: {$ref: "#/components/schemas/ExplainPayload"}}}
      401: {$ref: "#/components/responses/BearerRefused"}
      404:
        $ref: "#/components/responses/AdminNotFound"
        description: >-
          Admin routes off, or no such campaign (to a tenant-scoped token, also any its tenant
          does not own) or explain record.
      503: {$ref: "#/components/responses/RedisUnavailable"}
    """
    state = await path_campaign(request, renderer)
    account = path_id(request, "account")
    tenant, campaign = state.tenant, state.campaign_id
    raw, current = await guarded_read(
        renderer, "admin_explain", lambda: _explain_and_zone_set(renderer, tenant, campaign, account)
    )
    if raw is None:
        raise HTTPProblem(404, f"no explain record for account {account!r} in {tenant}/{campaign}")
    payload = parse_explain_record(raw, keys.explain_key(tenant, campaign, account), current)
    return json_answer(payload.model_dump(mode="json"))


# -- preview -------------------------------------------------------------------------------


# The OpenAPI description of the two preview operations (one path): what differs, then what
# they share (`_preview_doc`).
_PREVIEW_GET_DOC = """
    summary: A page as an account would see it, each zone's provenance beside it (admin).
    description: >
      The page rendered for the account's arm and zone set exactly as a visitor's request
      renders it (no engagement event is logged), with each zone's rung, cited facts (source
      link, publish date), checks, the zone set's version, status and validity, and the
      account's latest audit-log entries (who published, approved, rejected, rolled back or
      erased what, when and why).
      `arm=personal` previews the personal copy of a holdout account. Bearer admin token (`adminBearer`).
"""
_PREVIEW_GET_RESPONSES = """
      200: {description: "The preview (HTML).", content: {text/html: {schema: {type: string}}}}
      400: {description: "Unknown arm.", content: {text/html: {schema: {type: string}}}}
"""
_PREVIEW_POST_DOC = """
    summary: The preview, with a sequencer e-mail template filled for every branch beside the page (admin).
    description: >
      The body is a sequencer e-mail template (`{{ var }}`, `{{ var | default: "text" }}`), at
      most 65536 bytes of UTF-8; `Content-Type: text/html` makes it an HTML template (values
      HTML-escaped), anything else plain text. The answer is the preview page of
      `GET /admin/preview/{campaign}/{account}` with the template filled with the export's own
      row for the account's first contact in the personal, segment and holdout branches, each
      variable the export has no column for or leaves empty without a default flagged.
      Bearer admin token (`adminBearer`).
    requestBody:
      required: true
      content:
        text/plain: {schema: {type: string, maxLength: 65536}}
        text/html: {schema: {type: string, maxLength: 65536}}
"""
_PREVIEW_POST_RESPONSES = """
      200:
        description: "The preview with the e-mail's branches (HTML)."
        content: {text/html: {schema: {type: string}}}
      400:
        description: "Unknown arm, or a template that is not UTF-8 or not a template (the line and why)."
        content: {text/html: {schema: {type: string}}}
      408: {description: "The template arrived too slowly.", content: {text/html: {schema: {type: string}}}}
      413: {description: "The template is over 65536 bytes.", content: {text/html: {schema: {type: string}}}}
"""


def _preview_doc(intro: str, responses: str) -> str:
    return (
        intro
        + """    security: [{adminBearer: []}, {adminSession: []}]
    parameters:
      - {name: campaign, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
      - {name: account, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
      - {name: page, in: query, required: false, schema: {type: string, default: landing}}
      - {name: arm, in: query, required: false, schema: {type: string, enum: [personal, holdout, anonymous]}}
    responses:"""
        + responses
        + """      401: {$ref: "#/components/responses/BearerRefused"}
      404:
        description: >-
          Admin routes off, or no such campaign (to a tenant-scoped token, also any its tenant
          does not own) or page.
        content: {text/html: {schema: {type: string}}}
      503: {$ref: "#/components/responses/RedisUnavailablePage"}
    """
    )


@admin_endpoint(html=True)
async def preview_account(request: Request, renderer: RendererState) -> Response:
    return await _preview_page(request, renderer, None)


@admin_endpoint(html=True)
async def preview_account_email(request: Request, renderer: RendererState) -> Response:
    body = await read_bounded_body(request, MAX_TEMPLATE_BYTES, renderer.tuning.body_read_timeout_s)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise HTTPProblem(400, "the template is not UTF-8") from None
    html = request.headers.get("content-type", "").split(";")[0].strip().lower() == "text/html"
    try:
        template = parse_template(text, html=html, source="template")
    except TemplateError as exc:
        raise HTTPProblem(400, str(exc)) from None
    return await _preview_page(request, renderer, template)


preview_account.__doc__ = _preview_doc(_PREVIEW_GET_DOC, _PREVIEW_GET_RESPONSES)
preview_account_email.__doc__ = _preview_doc(_PREVIEW_POST_DOC, _PREVIEW_POST_RESPONSES)


async def _preview_page(
    request: Request, renderer: RendererState, template: EmailTemplate | None
) -> Response:
    state = await path_campaign(request, renderer)
    account = path_id(request, "account")
    view = state.view
    tenant, campaign = view.tenant, view.campaign_id
    page_id = request.query_params.get("page", "landing")
    if not is_valid_id(page_id) or view.page(page_id) is None:
        raise HTTPProblem(404, f"campaign {campaign!r} has no page {page_id!r}")
    assigned = assign_arm(tenant, campaign, account, view.campaign.holdout_fraction)
    requested = request.query_params.get("arm")
    if requested is not None and requested not in {a.value for a in Arm}:
        raise HTTPProblem(400, f"arm must be one of {', '.join(a.value for a in Arm)}")
    arm = Arm(requested) if requested is not None else assigned

    raw, zone_set = await guarded_read(
        renderer, "admin_preview", lambda: _explain_and_zone_set(renderer, tenant, campaign, account)
    )
    audit = await account_audit(renderer, "admin_preview_audit", tenant, account)
    explain, explain_problem = account_explain(renderer, raw, tenant, campaign, account, zone_set)
    now = renderer.now()
    page = renderer.pages.render(view, page_id, arm, zone_set, now)
    page_html = page.finish("", "admin-preview")
    zones = read_page_zones(page_html)
    emails: list[BranchPreview] = []
    email_problem = None
    if template is not None:
        signer = renderer.signer
        # Without a signing key the rows' page_url is empty, and a template using it says so.
        link_for = (
            contact_links(signer, renderer.settings.public_url, tenant=tenant, campaign=campaign)
            if signer is not None
            else (lambda _account, _contact: "")
        )
        try:
            emails = await guarded_read(
                renderer,
                "admin_email_preview",
                lambda: branch_previews(renderer.client, view, account, template, link_for, now=now),
            )
        except (InputError, StoredValueError) as exc:  # the page still previews; say why no e-mail
            email_problem = str(exc)
    return html_answer(
        "admin/preview.html",
        admin_stylesheet="/static/admin.css",
        tenant=tenant,
        campaign=campaign,
        account=account,
        pages=sorted(view.campaign.pages),
        page_id=page_id,
        assigned_arm=assigned.value,
        arm=arm.value,
        arms=[a.value for a in Arm],
        zone_set=zone_set,
        refusal=personal_refusal(arm, zone_set, now),
        explain=explain,
        explain_problem=explain_problem,
        rows=zone_provenance(zones, zone_set, explain),
        page_html=page_html,
        audit=audit.entries,
        audit_unreadable=audit.unreadable,
        audit_scanned=AUDIT_ENTRIES_SCANNED,
        email_template=template is not None,
        emails=emails,
        email_problem=email_problem,
    )


@errors_as_html(lambda request: True)  # the handler reads the route's endpoint: this class
class _PreviewEndpoint(HTTPEndpoint):
    """One path, two documented operations: the page (GET), and it with an e-mail template (POST)."""

    get = staticmethod(preview_account)
    post = staticmethod(preview_account_email)


def admin_routes() -> list[Route]:
    return [
        Route("/admin/", admin_home, methods=["GET"]),
        # Where signing in lands: the same page (no trailing-slash redirects in this app).
        Route("/admin", admin_home, methods=["GET"], include_in_schema=False),
        Route("/admin/audit", audit_log, methods=["GET"]),
        Route("/admin/campaigns/{campaign}", campaign_overview, methods=["GET"]),
        Route("/admin/campaigns/{campaign}/accounts/{account}", account_page, methods=["GET"]),
        Route(GUIDELINES_ROUTE, guidelines_page, methods=["GET"]),
        Route(EXPERIMENTS_ROUTE, experiments_page, methods=["GET"]),
        Route(SIGNOFF_ROUTE, guideline_signoff, methods=["POST"]),
        Route("/admin/explain/{campaign}/{account}", explain_account, methods=["GET"]),
        Route("/admin/preview/{campaign}/{account}", _PreviewEndpoint),
        Route("/admin/review/{campaign}", review_queue, methods=["GET"]),
        Route("/admin/review/{campaign}/{account}/approve", review_approve, methods=["POST"]),
        Route("/admin/review/{campaign}/{account}/reject", review_reject, methods=["POST"]),
        Route("/admin/review/{campaign}/{account}/rollback", review_rollback, methods=["POST"]),
        *sign_in_routes(),
    ]
