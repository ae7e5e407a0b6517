"""`/admin/review/...`: the campaign's review queue, and the decisions on one account.

Approve, reject and rollback are `welcomemat.zones.review`'s, the same implementation as
`welcomemat review`, audit-logged (`welcomemat.records.audit`) as whoever made them, through
`http`: the signed-in person's e-mail address, or the name of the token (`NAME@TENANT` for a
scoped one). Deciding needs the `reviewer` role (`server.admin.endpoint.admin_endpoint`); the
queue is anyone's who may read the campaign. A rejection or a rollback without a `reason` is
400 before anything is done. A decision whose audit entry could not be written stands, and the
answer says so: 503 with `"applied": true, "audited": false`.

A decision's body is JSON, or the HTML form of the queue page's buttons
(`application/x-www-form-urlencoded`: `version`, `held`, `reason`, and the session's `csrf`),
read by the same bounded reader. A form post is answered with a 303 back to the queue page,
which says what was done (`?done=approve&account=...&version=N`); its refusals are HTML pages.
JSON stays JSON.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TypeVar
from urllib.parse import urlencode

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from server.admin.endpoint import (
    admin_endpoint,
    campaign_not_found_doc,
    guarded_read,
    html_answer,
    json_answer,
    path_campaign,
    path_id,
)
from server.admin.form_body import is_form_post, read_form
from server.admin.form_posts import FormField, FormPost
from server.admin.payloads import ReviewDecisionBody, RollbackBody, review_entry
from server.bodies import declared_length, read_bounded_body
from server.problems import HTTPProblem
from server.qr import see_other
from server.renderer_state import RendererState
from welcomemat.bounded_json import decode_json
from welcomemat.errors import AuditError, InputError
from welcomemat.ids import is_valid_id
from welcomemat.limits import ADMIN_BODY_MAX_BYTES
from welcomemat.records.audit import REASON_MAX_CHARS, AuditAction, Auditor, Via, check_reason
from welcomemat.security.people import Role
from welcomemat.validation_errors import dotted, first_problem
from welcomemat.zones.review import ReviewOutcome, approve_held, decide, list_queue, roll_back
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import ZoneSet

__all__ = [
    "ADMIN_WRITE_TIMEOUT_S",
    "APPROVE_FORM",
    "MAX_BODY_BYTES",
    "REJECT_FORM",
    "ROLLBACK_FORM",
    "review_approve",
    "review_queue",
    "review_reject",
    "review_rollback",
]

log = logging.getLogger(__name__)

_B = TypeVar("_B", bound=BaseModel)
# A decision writes, then appends its audit entry with up to `audit.APPEND_ATTEMPTS` tries on
# the renderer's client (1 s socket timeout each): the budget covers them all.
ADMIN_WRITE_TIMEOUT_S = 6.0
MAX_BODY_BYTES = ADMIN_BODY_MAX_BYTES  # bytes (welcomemat.limits): {"version": N, "reason": ...}
# What the queue page says after a form's decision (`?done=`), by action.
_DONE = {"approve": "Approved", "reject": "Rejected", "rollback": "Rolled back"}
_MAX_VERSION_DIGITS = 9


# The queue page's buttons: the fields each form posts (`server.admin.form_posts`).
_VERSION_FIELD = FormField(
    "version",
    {
        "type": "integer",
        "minimum": 1,
        "maximum": 10**_MAX_VERSION_DIGITS - 1,
        "description": "The zone-set version you reviewed (the queue shows it).",
    },
    required=True,
)


def _reason_field(*, required: bool) -> FormField:
    why = "required: say why, for the audit log" if required else "optional, for the audit log"
    return FormField(
        "reason",
        {
            "type": "string",
            "maxLength": REASON_MAX_CHARS,
            **({"pattern": r"\S"} if required else {}),
            "description": f"Why ({why}); at most {REASON_MAX_CHARS} characters as sent, each run of "
            "whitespace recorded as one space.",
        },
        required=required,
    )


APPROVE_FORM = FormPost(
    "ReviewApproveForm",
    ReviewDecisionBody,
    (
        _VERSION_FIELD,
        _reason_field(required=False),
        FormField(
            "held",
            {
                "type": "string",
                "maxLength": 64,
                "description": "A zone id: approve that zone's held draft (the Approve draft button).",
            },
        ),
    ),
    "The review queue's Approve and Approve draft buttons.",
)
REJECT_FORM = FormPost(
    "ReviewRejectForm",
    ReviewDecisionBody,
    (_VERSION_FIELD, _reason_field(required=True)),
    "The review queue's Reject button (a held draft is never rejected: it stays held).",
)
ROLLBACK_FORM = FormPost(
    "ReviewRollbackForm",
    RollbackBody,
    (_reason_field(required=True),),
    "The review queue's Roll back button.",
)


# -- review queue ----------------------------------------------------------------------------


def _wants_html(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "text/html" in accept and "application/json" not in accept.split("text/html")[0]


@admin_endpoint()
async def review_queue(request: Request, renderer: RendererState) -> Response:
    """
    summary: The campaign's review queue (admin).
    description: >
      Accounts waiting for a person (`approval`: served the fallback until approved) and the
      sample of live accounts to read (`sample`). JSON, or HTML when the request accepts
      `text/html`. Bearer admin token (`adminBearer`).
    security: [{adminBearer: []}, {adminSession: []}]
    parameters:
      - {name: campaign, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
    responses:
      200:
        description: "The queue: account, queue, queued_at, version, status, mode, segment."
        content:
          application/json: {schema: {$ref: "#/components/schemas/ReviewQueue"}}
          text/html: {schema: {type: string}}
      401: {$ref: "#/components/responses/BearerRefused"}
    """
    state = await path_campaign(request, renderer)
    tenant, campaign = state.tenant, state.campaign_id
    client = renderer.client
    items = await guarded_read(renderer, "admin_review", lambda: list_queue(client, tenant, campaign))
    entries = [review_entry(i.account_id, i.queue, i.queued_at, i.zone_set, i.held) for i in items]
    if _wants_html(request):
        actor = request.state.actor
        return html_answer(
            "admin/review.html",
            admin_stylesheet="/static/admin.css",
            tenant=tenant,
            campaign=campaign,
            entries=entries,
            # the buttons: a person's session who may decide (a token has no form to post)
            csrf=actor.csrf if actor.is_person and actor.role.allows(Role.REVIEWER) else None,
            done=_done_message(request),
        )
    return json_answer(
        {"tenant": tenant, "campaign": campaign, "items": [e.model_dump(mode="json") for e in entries]}
    )


review_queue.__doc__ = (
    (review_queue.__doc__ or "").rstrip()
    + campaign_not_found_doc()
    + """
      503: {$ref: "#/components/responses/RedisUnavailable"}
"""
)


def _done_message(request: Request) -> str | None:
    """What the queue page confirms after a form's decision (`?done=...`), or None."""
    query = request.query_params
    action, account, version = query.get("done"), query.get("account", ""), query.get("version", "")
    if action not in _DONE or not is_valid_id(account):
        return None
    if version.isascii() and version.isdigit() and len(version) <= _MAX_VERSION_DIGITS:
        return f"{_DONE[action]} {account}: now at v{version}."
    return f"{_DONE[action]} {account}."


def _answer(request: Request, renderer: RendererState, action: str, payload: dict[str, object]) -> Response:
    """JSON for a JSON body; for a form's post, 303 back to the queue page, which says what was done."""
    if not is_form_post(request):
        return json_answer(payload)
    query = urlencode({"done": action, "account": payload["account_id"], "version": payload["version"]})
    campaign = request.path_params["campaign"]
    return see_other(f"{renderer.settings.public_url}/admin/review/{campaign}?{query}")


def _auditor(request: Request, renderer: RendererState) -> Auditor:
    clock = renderer.clock
    return Auditor(request.state.credential.actor, Via.HTTP, lambda: datetime.fromtimestamp(clock(), UTC))


async def _body(request: Request, renderer: RendererState, model: type[_B], form: FormPost, shape: str) -> _B:
    """The body as `model`, read by the one bounded reader (413 past `MAX_BODY_BYTES`, declared
    or not; 408 when it stops arriving) and decoded within `welcomemat.bounded_json`'s limits, or
    a form's fields as `form` declares them; 400 naming the field."""
    if is_form_post(request):
        fields = form.read(await read_form(request, renderer))
        try:
            return model.model_validate(fields)
        except ValidationError as exc:
            loc, message = first_problem(exc)
            raise HTTPProblem(400, f"the form's {dotted(loc) or 'fields'}: {message}") from None
    body = await read_bounded_body(request, MAX_BODY_BYTES, renderer.tuning.body_read_timeout_s)
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
    state = await path_campaign(request, renderer)
    account = path_id(request, "account")
    tenant, campaign = state.tenant, state.campaign_id
    decision = await _body(
        request,
        renderer,
        ReviewDecisionBody,
        APPROVE_FORM if approve else REJECT_FORM,
        '{"version": N, "reason": "why"}, the version you reviewed',
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
    return _answer(
        request,
        renderer,
        "approve" if approve else "reject",
        {
            "account_id": account,
            "changed": result.changed,
            "version": result.version,
            "status": result.zone_set.status.value,
            "detail": outcome.detail,
        },
    )


def _account_write_doc(
    *, body: str, forms: str, ok: str, bad_body: str, not_found: str, conflict: str, kept: str
) -> str:
    """The OpenAPI text of a review write on one account (approve, reject, rollback): the same
    parameters and refusals, with what differs passed in (`body`: the JSON body's schema name,
    `forms`: the form's, `server.admin.form_posts`)."""
    conflict_doc = (
        f"""
      409:
        $ref: "#/components/responses/Refused"
        description: >-
          {conflict}"""
        if conflict
        else ""
    )
    return f"""
    security: [{{adminBearer: []}}, {{adminSession: []}}]
    parameters:
      - {{name: campaign, in: path, required: true, schema: {{$ref: "#/components/schemas/Id"}}}}
      - {{name: account, in: path, required: true, schema: {{$ref: "#/components/schemas/Id"}}}}
    requestBody:
      required: true
      content:
        application/json: {{schema: {{$ref: "#/components/schemas/{body}"}}}}
        application/x-www-form-urlencoded: {{schema: {{$ref: "#/components/schemas/{forms}"}}}}
    responses:
      200:
        description: "{ok}"
        content: {{application/json: {{schema: {{$ref: "#/components/schemas/ReviewDecision"}}}}}}
      303:
        $ref: "#/components/responses/FormPostDone"
        description: "A form's post, done: back to the queue page, which says what was done."
      400:
        $ref: "#/components/responses/Refused"
        description: "{bad_body}"
      401: {{$ref: "#/components/responses/BearerRefused"}}
      403: {{$ref: "#/components/responses/SessionRefused"}}{campaign_not_found_doc(not_found)}{conflict_doc}
      408: {{$ref: "#/components/responses/Refused", description: "The body did not arrive in time."}}
      413: {{$ref: "#/components/responses/Refused", description: "The body is over 1024 bytes."}}
      503:
        $ref: "#/components/responses/RedisUnavailablePage"
        description: "Redis is unavailable, or the {kept} stands but was not audit-logged."
"""


def _decide_doc(form: FormPost) -> str:
    return _account_write_doc(
        body="ReviewDecisionBody",
        forms=form.name,
        ok="Applied (or already so): the current version and status.",
        bad_body='Not {\\"version\\": N, \\"reason\\": ...} or its form; a rejection without a reason.',
        not_found=" or zone set",
        conflict="The version is no longer current (`current_version`): review the current version; or "
        "the `held` draft cannot be approved (it fails a deterministic check, its facts expired, or "
        "the zone holds no draft).",
        kept="decision",
    )


@admin_endpoint(needs=Role.REVIEWER, html=is_form_post)
async def review_approve(request: Request, renderer: RendererState) -> Response:
    return await _decide(request, renderer, approve=True)


@admin_endpoint(needs=Role.REVIEWER, html=is_form_post)
async def review_reject(request: Request, renderer: RendererState) -> Response:
    return await _decide(request, renderer, approve=False)


review_approve.__doc__ = (
    "\n    summary: Approve the version you reviewed; it is served as personal (admin).\n"
    + _decide_doc(APPROVE_FORM)
)


@admin_endpoint(needs=Role.REVIEWER, html=is_form_post)
async def review_rollback(request: Request, renderer: RendererState) -> Response:
    """
    summary: Serve the account's previous zone set again, under a new version (admin).
    description: >
      What `welcomemat review rollback` does: the previous version becomes current under the
      next version number (a second rollback in a row has nothing to go back to). The reason
      is required and audit-logged. Bearer admin token (`adminBearer`).
    """
    declared_length(request.headers.get("content-length"), MAX_BODY_BYTES)  # 413 before anything
    state = await path_campaign(request, renderer)
    account = path_id(request, "account")
    tenant, campaign = state.tenant, state.campaign_id
    body = await _body(request, renderer, RollbackBody, ROLLBACK_FORM, '{"reason": "why"}')
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
    return _answer(
        request,
        renderer,
        "rollback",
        {
            "account_id": account,
            "changed": True,
            "version": restored.version,
            "status": restored.status.value,
            "detail": f"v{restored.version} serves what was published before",
        },
    )


review_rollback.__doc__ = (review_rollback.__doc__ or "").rstrip() + _account_write_doc(
    body="RollbackBody",
    forms=ROLLBACK_FORM.name,
    ok="Rolled back: the new version and its status.",
    bad_body='The body is not {\\"reason\\": ...} or its form, or the reason is blank.',
    not_found=", or no previous version to go back to",
    conflict="",
    kept="rollback",
)
review_reject.__doc__ = (
    "\n    summary: Reject the version you reviewed; the account keeps the fallback (admin).\n"
    + _decide_doc(REJECT_FORM)
)
