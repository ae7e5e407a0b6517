"""`/admin/...`: the operator's views of a campaign — explain, preview-as-account, the review queue.

Every route calls `admin_auth.require_credential` before anything else (404 when no admin
token is configured, as if the routes did not exist; 401 without a token), then checks every
id with `is_valid_id` before it reaches a Redis key, and reaches the campaign only through
`admin_auth.campaign_for`: a token scoped to a tenant gets any other tenant's campaign as an
unknown one (404), and nothing of it is read or written. Every answer is
`Cache-Control: no-store`: it holds internal fields no cache may keep.

Decisions (approve, reject, rollback) are audit-logged (`welcomemat.audit`) as the name of
the token that made them (`NAME@TENANT` for a scoped one), through `http`; a rejection or a
rollback without a `reason` is 400 before anything is done. A decision whose audit entry
could not be written stands, and the answer says so: 503 with `"applied": true, "audited": false`.

These are operator tools, not visitor pages: when Redis cannot answer they say so with
503 (JSON, `Retry-After`) rather than a fallback, because a fallback would be a wrong
answer to "what does this account see". Reads go through the renderer's Redis guard
(breaker, counted faults) with a budget longer than a page's. The review queue uses
`welcomemat.review` (it needs nothing but Redis and the shared core), so the CLI and
these routes approve and reject through one implementation.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import jinja2
from pydantic import BaseModel, ValidationError
from starlette.endpoints import HTTPEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from server.admin_auth import campaign_for, require_credential
from server.admin_payloads import (
    ExplainPayload,
    ReviewDecisionBody,
    RollbackBody,
    parse_explain_record,
    review_entry,
)
from server.admin_preview import personal_refusal, read_page_zones, zone_provenance
from server.bodies import declared_length, read_bounded_body
from server.campaigns import CampaignState
from server.problems import HTTPProblem, errors_as_html
from server.render import TEMPLATES_DIR, template_environment
from server.renderer_state import RendererState
from welcomemat import keys
from welcomemat.arms import Arm, assign_arm
from welcomemat.audit import AuditAction, Auditor, Via, check_reason, read_entries
from welcomemat.bounded_json import decode_json
from welcomemat.email_preview import BranchPreview, branch_previews
from welcomemat.email_template import MAX_TEMPLATE_BYTES, EmailTemplate, TemplateError, parse_template
from welcomemat.errors import AuditError, InputError, StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.limits import ADMIN_BODY_MAX_BYTES
from welcomemat.links import contact_links
from welcomemat.review import ReviewOutcome, approve_held, decide, list_queue, roll_back
from welcomemat.store import ZoneSetStore
from welcomemat.validation_errors import dotted, first_problem
from welcomemat.zoneset import ZoneSet

__all__ = [
    "ADMIN_CSP",
    "admin_routes",
    "explain_account",
    "preview_account",
    "preview_account_email",
    "review_approve",
    "review_queue",
    "review_reject",
    "review_rollback",
]

log = logging.getLogger(__name__)


_T = TypeVar("_T")
_B = TypeVar("_B", bound=BaseModel)

# An operator waits a little longer than a visitor's page would (it is one request, not a
# page view), but never on a hung Redis.
ADMIN_REDIS_TIMEOUT_S = 2.0
# A decision writes, then appends its audit entry with up to `audit.APPEND_ATTEMPTS` tries on
# the renderer's client (1 s socket timeout each): the budget covers them all.
ADMIN_WRITE_TIMEOUT_S = 6.0
MAX_BODY_BYTES = ADMIN_BODY_MAX_BYTES  # bytes (welcomemat.limits): {"version": N, "reason": ...}
# The preview lists the account's latest audit entries, looking back this far in the tenant's
# log (a run logs one entry per account it publishes): older ones are `welcomemat audit`'s.
AUDIT_ENTRIES_SHOWN = 50
AUDIT_ENTRIES_SCANNED = 10_000
_NO_STORE = {"cache-control": "no-store"}
# Admin pages run no script at all (default-src 'none' covers script-src); the preview's page
# is shown in a sandboxed srcdoc frame, which may load only our stylesheets, images and fonts
# (a campaign's theme files included).
ADMIN_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; font-src 'self'; frame-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HTML_HEADERS = {**_NO_STORE, "content-security-policy": ADMIN_CSP}


AdminEndpoint = Callable[[Request, RendererState], Awaitable[Response]]


@functools.cache
def _templates() -> jinja2.Environment:
    return template_environment(TEMPLATES_DIR)


def _json(payload: Any) -> JSONResponse:
    return JSONResponse(payload, headers=_NO_STORE)


def _html(template: str, **context: Any) -> HTMLResponse:
    return HTMLResponse(_templates().get_template(template).render(**context), headers=_HTML_HEADERS)


def _admin(*, html: bool = False) -> Callable[[AdminEndpoint], Callable[[Request], Awaitable[Response]]]:
    """Wrap an admin endpoint: the bearer check first. Its refusals (`HTTPProblem`, Redis
    faults) are rendered by `server.problems`: as an HTML page when `html`, else JSON."""

    def decorate(endpoint: AdminEndpoint) -> Callable[[Request], Awaitable[Response]]:
        @functools.wraps(endpoint)  # keeps the docstring OpenAPI reads
        async def guarded(request: Request) -> Response:
            renderer: RendererState = request.app.state.renderer
            # raises 404 / 401; the credential is who the audit log says acted, and its scope
            request.state.credential = require_credential(request, renderer.settings.admin_credentials())
            return await endpoint(request, renderer)

        return errors_as_html(lambda request: html)(guarded)

    return decorate


def _path_id(request: Request, name: str) -> str:
    value = request.path_params[name]
    if not is_valid_id(value):
        raise HTTPProblem(404, f"{name} {value!r} is not a valid id")
    return value


async def _campaign(request: Request, renderer: RendererState) -> CampaignState:
    return await campaign_for(request.state.credential, renderer.campaigns, _path_id(request, "campaign"))


async def _read(renderer: RendererState, op: str, fn: Callable[[], _T]) -> _T:
    return await renderer.guard.call(op, fn, timeout_s=max(ADMIN_REDIS_TIMEOUT_S, renderer.guard.timeout_s))


def _explain_and_zone_set(
    renderer: RendererState, tenant: str, campaign: str, account: str
) -> tuple[bytes | None, ZoneSet | None]:
    raw = renderer.client.get(keys.explain_key(tenant, campaign, account))
    return raw, ZoneSetStore(renderer.client).get(tenant, campaign, account)  # type: ignore[return-value]


# -- explain ---------------------------------------------------------------------------------


@_admin()
async def explain_account(request: Request, renderer: RendererState) -> Response:
    """
    summary: Why an account sees what it sees (admin).
    description: >
      The explain record precompute stored with the account's zone set: identity, every
      fact's trust decision, every zone's rung, text, cited facts and failed checks. Status
      and version are the live zone set's. Bearer admin token (`adminBearer`).
    security: [{adminBearer: []}]
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
    state = await _campaign(request, renderer)
    account = _path_id(request, "account")
    tenant, campaign = state.tenant, state.campaign_id
    raw, current = await _read(
        renderer, "admin_explain", lambda: _explain_and_zone_set(renderer, tenant, campaign, account)
    )
    if raw is None:
        raise HTTPProblem(404, f"no explain record for account {account!r} in {tenant}/{campaign}")
    payload = parse_explain_record(raw, keys.explain_key(tenant, campaign, account), current)
    return _json(payload.model_dump(mode="json"))


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
      413: {description: "The template is over 65536 bytes.", content: {text/html: {schema: {type: string}}}}
"""


def _preview_doc(intro: str, responses: str) -> str:
    return (
        intro
        + """    security: [{adminBearer: []}]
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


@_admin(html=True)
async def preview_account(request: Request, renderer: RendererState) -> Response:
    return await _preview_page(request, renderer, None)


@_admin(html=True)
async def preview_account_email(request: Request, renderer: RendererState) -> Response:
    body = await read_bounded_body(request, MAX_TEMPLATE_BYTES)
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
    state = await _campaign(request, renderer)
    account = _path_id(request, "account")
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

    raw, zone_set = await _read(
        renderer, "admin_preview", lambda: _explain_and_zone_set(renderer, tenant, campaign, account)
    )
    unreadable: list[StoredValueError] = []
    audit = await _read(
        renderer,
        "admin_preview_audit",
        lambda: read_entries(
            renderer.client,
            tenant,
            account=account,
            newest_first=True,
            limit=AUDIT_ENTRIES_SHOWN,
            scan_max=AUDIT_ENTRIES_SCANNED,
            problems=unreadable,
        ),
    )
    if unreadable:
        renderer.metrics.stored_value_errors.inc(len(unreadable))
    explain: ExplainPayload | None = None
    explain_problem = None
    if raw is not None:
        try:
            explain = parse_explain_record(raw, keys.explain_key(tenant, campaign, account), zone_set)
        except StoredValueError as exc:  # the page and zone set still preview; say what is missing
            renderer.metrics.stored_value_errors.inc()
            explain_problem = str(exc)
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
            emails = await _read(
                renderer,
                "admin_email_preview",
                lambda: branch_previews(renderer.client, view, account, template, link_for, now=now),
            )
        except (InputError, StoredValueError) as exc:  # the page still previews; say why no e-mail
            email_problem = str(exc)
    return _html(
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
        audit=audit,
        audit_unreadable=len(unreadable),
        audit_scanned=AUDIT_ENTRIES_SCANNED,
        email_template=template is not None,
        emails=emails,
        email_problem=email_problem,
    )


# -- review queue ----------------------------------------------------------------------------


def _wants_html(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "text/html" in accept and "application/json" not in accept.split("text/html")[0]


@_admin()
async def review_queue(request: Request, renderer: RendererState) -> Response:
    """
    summary: The campaign's review queue (admin).
    description: >
      Accounts waiting for a person (`approval`: served the fallback until approved) and the
      sample of live accounts to read (`sample`). JSON, or HTML when the request accepts
      `text/html`. Bearer admin token (`adminBearer`).
    security: [{adminBearer: []}]
    parameters:
      - {name: campaign, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
    responses:
      200:
        description: "The queue: account, queue, queued_at, version, status, mode, segment."
        content:
          application/json: {schema: {$ref: "#/components/schemas/ReviewQueue"}}
          text/html: {schema: {type: string}}
      401: {$ref: "#/components/responses/BearerRefused"}
      404:
        $ref: "#/components/responses/AdminNotFound"
        description: >-
          Admin routes off, or no such campaign (to a tenant-scoped token, also any its tenant
          does not own).
      503: {$ref: "#/components/responses/RedisUnavailable"}
    """
    state = await _campaign(request, renderer)
    tenant, campaign = state.tenant, state.campaign_id
    items = await _read(renderer, "admin_review", lambda: list_queue(renderer.client, tenant, campaign))
    entries = [review_entry(i.account_id, i.queue, i.queued_at, i.zone_set, i.held) for i in items]
    if _wants_html(request):
        return _html(
            "admin/review.html",
            admin_stylesheet="/static/admin.css",
            tenant=tenant,
            campaign=campaign,
            entries=entries,
        )
    return _json(
        {"tenant": tenant, "campaign": campaign, "items": [e.model_dump(mode="json") for e in entries]}
    )


def _auditor(request: Request, renderer: RendererState) -> Auditor:
    clock = renderer.clock
    return Auditor(request.state.credential.actor, Via.HTTP, lambda: datetime.fromtimestamp(clock(), UTC))


async def _body(request: Request, model: type[_B], shape: str) -> _B:
    """The body as `model`, read by the one bounded reader (413 past `MAX_BODY_BYTES`, declared
    or not) and decoded within `welcomemat.bounded_json`'s limits; 400 naming the field."""
    body = await read_bounded_body(request, MAX_BODY_BYTES)
    try:
        return model.model_validate(decode_json(body or b"{}", max_bytes=MAX_BODY_BYTES))
    except InputError as exc:
        raise HTTPProblem(400, f"body must be JSON {shape}: {exc.field or 'body'}: {exc.message}") from None
    except ValidationError as exc:
        loc, message = first_problem(exc)
        raise HTTPProblem(400, f"body must be JSON {shape}: {dotted(loc) or 'body'}: {message}") from None


def _reason(text: str | None, action: AuditAction) -> str | None:
    try:
        return check_reason(text, action, source="reason")
    except InputError as exc:
        raise HTTPProblem(400, f"reason: {exc.message}") from None


def _not_audited(what: str, exc: AuditError) -> HTTPProblem:
    log.error("%s", exc)
    return HTTPProblem(
        503,
        f"{what}; the decision stands, but its audit entry could not be written (see the renderer's log)",
        fields={"applied": True, "audited": False},
    )


async def _decide(request: Request, renderer: RendererState, *, approve: bool) -> Response:
    declared_length(request.headers.get("content-length"), MAX_BODY_BYTES)  # 413 before anything
    state = await _campaign(request, renderer)
    account = _path_id(request, "account")
    tenant, campaign = state.tenant, state.campaign_id
    decision = await _body(
        request, ReviewDecisionBody, '{"version": N, "reason": "why"}, the version you reviewed'
    )
    reason = _reason(decision.reason, AuditAction.APPROVE if approve else AuditAction.REJECT)
    if decision.held is not None and not approve:
        raise HTTPProblem(400, "`held` names a held draft to approve; a rejection leaves it held")
    auditor = _auditor(request, renderer)

    def act() -> tuple[ZoneSet | None, ReviewOutcome | AuditError | None]:
        current = ZoneSetStore(renderer.client).get(tenant, campaign, account)
        if current is None:
            return None, None
        try:
            if decision.held is not None:
                return current, approve_held(
                    renderer.client,
                    tenant,
                    campaign,
                    account,
                    decision.held,
                    auditor=auditor,
                    reason=reason,
                    expected_version=decision.version,
                )
            return current, decide(
                renderer.client,
                tenant,
                campaign,
                account,
                approve=approve,
                auditor=auditor,
                reason=reason,
                expected_version=decision.version,
            )
        except AuditError as exc:  # done, not logged: said below, not a Redis fault to count
            return current, exc

    current, outcome = await renderer.guard.call("admin_review_decide", act, timeout_s=ADMIN_WRITE_TIMEOUT_S)
    if current is None or outcome is None:
        raise HTTPProblem(404, f"no zone set is published for account {account!r} in {tenant}/{campaign}")
    if isinstance(outcome, AuditError):
        raise _not_audited(
            f"{'approved' if approve else 'rejected'} v{decision.version} of {account}", outcome
        )
    if not outcome.applied or outcome.result is None:
        raise HTTPProblem(409, outcome.detail, fields={"current_version": current.version})
    result = outcome.result
    return _json(
        {
            "account_id": account,
            "changed": result.changed,
            "version": result.version,
            "status": result.zone_set.status.value,
            "detail": outcome.detail,
        }
    )


def _account_write_doc(*, body: str, ok: str, bad_body: str, not_found: str, conflict: str, kept: str) -> str:
    """The OpenAPI text of a review write on one account (approve, reject, rollback): the same
    parameters and refusals, with what differs passed in."""
    conflict_doc = (
        f"""
      409:
        $ref: "#/components/responses/Problem"
        description: >-
          {conflict}"""
        if conflict
        else ""
    )
    return f"""
    security: [{{adminBearer: []}}]
    parameters:
      - {{name: campaign, in: path, required: true, schema: {{$ref: "#/components/schemas/Id"}}}}
      - {{name: account, in: path, required: true, schema: {{$ref: "#/components/schemas/Id"}}}}
    requestBody:
      required: true
      content:
        application/json: {{schema: {{$ref: "#/components/schemas/{body}"}}}}
    responses:
      200:
        description: "{ok}"
        content: {{application/json: {{schema: {{$ref: "#/components/schemas/ReviewDecision"}}}}}}
      400:
        $ref: "#/components/responses/Problem"
        description: "{bad_body}"
      401: {{$ref: "#/components/responses/BearerRefused"}}
      404:
        $ref: "#/components/responses/AdminNotFound"
        description: >-
          Admin routes off, or no such campaign (to a tenant-scoped token, also any its tenant
          does not own){not_found}.{conflict_doc}
      413: {{$ref: "#/components/responses/Problem", description: "The body is over 1024 bytes."}}
      503:
        $ref: "#/components/responses/RedisUnavailable"
        description: "Redis is unavailable, or the {kept} stands but was not audit-logged."
"""


_DECIDE_DOC = _account_write_doc(
    body="ReviewDecisionBody",
    ok="Applied (or already so): the current version and status.",
    bad_body='Not {\\"version\\": N, \\"reason\\": ...}; a rejection without a reason.',
    not_found=" or zone set",
    conflict="The version is no longer current (`current_version`): review the current version; or "
    "the `held` draft cannot be approved (it fails a deterministic check, its facts expired, or "
    "the zone holds no draft).",
    kept="decision",
)


@_admin()
async def review_approve(request: Request, renderer: RendererState) -> Response:
    return await _decide(request, renderer, approve=True)


@_admin()
async def review_reject(request: Request, renderer: RendererState) -> Response:
    return await _decide(request, renderer, approve=False)


review_approve.__doc__ = (
    "\n    summary: Approve the version you reviewed; it is served as personal (admin).\n" + _DECIDE_DOC
)


@_admin()
async def review_rollback(request: Request, renderer: RendererState) -> Response:
    """
    summary: Serve the account's previous zone set again, under a new version (admin).
    description: >
      What `welcomemat review rollback` does: the previous version becomes current under the
      next version number (a second rollback in a row has nothing to go back to). The reason
      is required and audit-logged. Bearer admin token (`adminBearer`).
    """
    declared_length(request.headers.get("content-length"), MAX_BODY_BYTES)  # 413 before anything
    state = await _campaign(request, renderer)
    account = _path_id(request, "account")
    tenant, campaign = state.tenant, state.campaign_id
    body = await _body(request, RollbackBody, '{"reason": "why"}')
    reason = _reason(body.reason, AuditAction.ROLLBACK)
    auditor = _auditor(request, renderer)

    def act() -> ZoneSet | AuditError | None:
        try:
            return roll_back(renderer.client, tenant, campaign, account, auditor=auditor, reason=reason)
        except AuditError as exc:
            return exc

    restored = await renderer.guard.call("admin_review_rollback", act, timeout_s=ADMIN_WRITE_TIMEOUT_S)
    if restored is None:
        raise HTTPProblem(
            404, f"account {account!r} in {tenant}/{campaign} has no previous version to go back to"
        )
    if isinstance(restored, AuditError):
        raise _not_audited(f"rolled back {account}", restored)
    return _json(
        {
            "account_id": account,
            "changed": True,
            "version": restored.version,
            "status": restored.status.value,
            "detail": f"v{restored.version} serves what was published before",
        }
    )


review_rollback.__doc__ = (review_rollback.__doc__ or "").rstrip() + _account_write_doc(
    body="RollbackBody",
    ok="Rolled back: the new version and its status.",
    bad_body='The body is not {\\"reason\\": ...}, or the reason is blank.',
    not_found=", or no previous version to go back to",
    conflict="",
    kept="rollback",
)
review_reject.__doc__ = (
    "\n    summary: Reject the version you reviewed; the account keeps the fallback (admin).\n" + _DECIDE_DOC
)


@errors_as_html(lambda request: True)  # the handler reads the route's endpoint: this class
class _PreviewEndpoint(HTTPEndpoint):
    """One path, two documented operations: the page (GET), and it with an e-mail template (POST)."""

    get = staticmethod(preview_account)
    post = staticmethod(preview_account_email)


def admin_routes() -> list[Route]:
    return [
        Route("/admin/explain/{campaign}/{account}", explain_account, methods=["GET"]),
        Route("/admin/preview/{campaign}/{account}", _PreviewEndpoint),
        Route("/admin/review/{campaign}", review_queue, methods=["GET"]),
        Route("/admin/review/{campaign}/{account}/approve", review_approve, methods=["POST"]),
        Route("/admin/review/{campaign}/{account}/reject", review_reject, methods=["POST"]),
        Route("/admin/review/{campaign}/{account}/rollback", review_rollback, methods=["POST"]),
    ]
