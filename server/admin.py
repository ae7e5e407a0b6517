"""`/admin/...`: the operator's views of a campaign — explain, preview-as-account, the review queue.

Every route calls `admin_auth.require_admin` before anything else (404 when
`WELCOMEMAT_ADMIN_TOKEN` is unset, as if the routes did not exist; 401 without the
token), then checks every id with `is_valid_id` before it reaches a Redis key. Every
answer is `Cache-Control: no-store`: it holds internal fields no cache may keep.

These are operator tools, not visitor pages: when Redis cannot answer they say so with
503 (JSON, `Retry-After`) rather than a fallback, because a fallback would be a wrong
answer to "what does this account see". Reads go through the renderer's Redis guard
(breaker, counted faults) with a budget longer than a page's. The review queue uses
`welcomemat.review` (it needs nothing but Redis and the shared core), so the CLI and
these routes approve and reject through one implementation.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import jinja2
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from server.admin_auth import require_admin
from server.admin_payloads import (
    ExplainPayload,
    ReviewDecisionBody,
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
from welcomemat.bounded_json import decode_json
from welcomemat.errors import InputError, StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.limits import ADMIN_BODY_MAX_BYTES
from welcomemat.review import ReviewOutcome, decide, list_queue
from welcomemat.store import ZoneSetStore
from welcomemat.validation_errors import dotted, first_problem
from welcomemat.zoneset import ZoneSet

__all__ = [
    "ADMIN_CSP",
    "admin_routes",
    "explain_account",
    "preview_account",
    "review_approve",
    "review_queue",
    "review_reject",
]


_T = TypeVar("_T")

# An operator waits a little longer than a visitor's page would (it is one request, not a
# page view), but never on a hung Redis.
ADMIN_REDIS_TIMEOUT_S = 2.0
MAX_BODY_BYTES = ADMIN_BODY_MAX_BYTES  # bytes (welcomemat.limits): {"version": N}
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
            require_admin(request, renderer.settings.admin_token)  # raises 404 / 401
            return await endpoint(request, renderer)

        return errors_as_html(lambda request: html)(guarded)

    return decorate


def _path_id(request: Request, name: str) -> str:
    value = request.path_params[name]
    if not is_valid_id(value):
        raise HTTPProblem(404, f"{name} {value!r} is not a valid id")
    return value


async def _campaign(request: Request, renderer: RendererState) -> CampaignState:
    campaign_id = _path_id(request, "campaign")
    state = await renderer.campaigns.resolve(campaign_id)
    if state is None:
        raise HTTPProblem(404, f"no published campaign {campaign_id!r}")
    return state


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
      and version are the live zone set's. Bearer `WELCOMEMAT_ADMIN_TOKEN`.
    security: [{adminBearer: []}]
    parameters:
      - {name: campaign, in: path, required: true, schema: {type: string}}
      - {name: account, in: path, required: true, schema: {type: string}}
    responses:
      200: {description: "The explain record (JSON)."}
      401: {description: "No or wrong bearer token."}
      404: {description: "Admin routes off, or no such campaign or explain record."}
      503: {description: "Redis is unavailable."}
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


@_admin(html=True)
async def preview_account(request: Request, renderer: RendererState) -> Response:
    """
    summary: A page as an account would see it, each zone's provenance beside it (admin).
    description: >
      The page rendered for the account's arm and zone set exactly as a visitor's request
      renders it (no engagement event is logged), with each zone's rung, cited facts (source
      link, publish date), checks, and the zone set's version, status and validity.
      `arm=personal` previews the personal copy of a holdout account. Bearer `WELCOMEMAT_ADMIN_TOKEN`.
    security: [{adminBearer: []}]
    parameters:
      - {name: campaign, in: path, required: true, schema: {type: string}}
      - {name: account, in: path, required: true, schema: {type: string}}
      - {name: page, in: query, required: false, schema: {type: string, default: landing}}
      - {name: arm, in: query, required: false, schema: {type: string, enum: [personal, holdout, anonymous]}}
    responses:
      200: {description: "The preview (HTML)."}
      400: {description: "Unknown arm."}
      401: {description: "No or wrong bearer token."}
      404: {description: "Admin routes off, or no such campaign or page."}
      503: {description: "Redis is unavailable."}
    """
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
      `text/html`. Bearer `WELCOMEMAT_ADMIN_TOKEN`.
    security: [{adminBearer: []}]
    parameters:
      - {name: campaign, in: path, required: true, schema: {type: string}}
    responses:
      200: {description: "The queue: account, queue, queued_at, version, status, mode, segment."}
      401: {description: "No or wrong bearer token."}
      404: {description: "Admin routes off, or no such campaign."}
      503: {description: "Redis is unavailable."}
    """
    state = await _campaign(request, renderer)
    tenant, campaign = state.tenant, state.campaign_id
    items = await _read(renderer, "admin_review", lambda: list_queue(renderer.client, tenant, campaign))
    entries = [review_entry(i.account_id, i.queue, i.queued_at, i.zone_set) for i in items]
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


def _bad_decision(field: str | None, message: str) -> HTTPProblem:
    return HTTPProblem(
        400, f'body must be JSON {{"version": N}}, the version you reviewed: {field or "body"}: {message}'
    )


async def _decide(request: Request, renderer: RendererState, *, approve: bool) -> Response:
    declared_length(request.headers.get("content-length"), MAX_BODY_BYTES)  # 413 before anything
    state = await _campaign(request, renderer)
    account = _path_id(request, "account")
    tenant, campaign = state.tenant, state.campaign_id
    body = await read_bounded_body(request, MAX_BODY_BYTES)
    try:
        decision = ReviewDecisionBody.model_validate(decode_json(body or b"{}", max_bytes=MAX_BODY_BYTES))
    except InputError as exc:
        raise _bad_decision(exc.field, exc.message) from None
    except ValidationError as exc:
        loc, message = first_problem(exc)
        raise _bad_decision(dotted(loc), message) from None

    def act() -> tuple[ZoneSet | None, ReviewOutcome | None]:
        current = ZoneSetStore(renderer.client).get(tenant, campaign, account)
        if current is None:
            return None, None
        return current, decide(
            renderer.client, tenant, campaign, account, approve=approve, expected_version=decision.version
        )

    current, outcome = await _read(renderer, "admin_review_decide", act)
    if current is None or outcome is None:
        raise HTTPProblem(404, f"no zone set is published for account {account!r} in {tenant}/{campaign}")
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


_DECIDE_DOC = """
    security: [{adminBearer: []}]
    parameters:
      - {name: campaign, in: path, required: true, schema: {type: string}}
      - {name: account, in: path, required: true, schema: {type: string}}
    requestBody:
      required: true
      content:
        application/json:
          schema: {type: object, required: [version], properties: {version: {type: integer, minimum: 1}}}
    responses:
      200: {description: "Applied (or already so): the current version and status."}
      400: {description: "The body is not {\\"version\\": N}."}
      401: {description: "No or wrong bearer token."}
      404: {description: "Admin routes off, or no such campaign or zone set."}
      409: {description: "The version is no longer current: review the current version."}
      503: {description: "Redis is unavailable."}
"""


@_admin()
async def review_approve(request: Request, renderer: RendererState) -> Response:
    return await _decide(request, renderer, approve=True)


@_admin()
async def review_reject(request: Request, renderer: RendererState) -> Response:
    return await _decide(request, renderer, approve=False)


review_approve.__doc__ = (
    "\n    summary: Approve the version you reviewed; it is served as personal (admin).\n" + _DECIDE_DOC
)
review_reject.__doc__ = (
    "\n    summary: Reject the version you reviewed; the account keeps the fallback (admin).\n" + _DECIDE_DOC
)


def admin_routes() -> list[Route]:
    return [
        Route("/admin/explain/{campaign}/{account}", explain_account, methods=["GET"]),
        Route("/admin/preview/{campaign}/{account}", preview_account, methods=["GET"]),
        Route("/admin/review/{campaign}", review_queue, methods=["GET"]),
        Route("/admin/review/{campaign}/{account}/approve", review_approve, methods=["POST"]),
        Route("/admin/review/{campaign}/{account}/reject", review_reject, methods=["POST"]),
    ]
