"""`/admin/campaigns/{campaign}/guidelines`: the campaign's guideline versions, and the sign-off button.

The page lists every version `welcomemat guidelines` recorded (`welcomemat.campaign.guidelines`):
its state (candidate, active, superseded, rolled back), why, the evidence, the validation per
account set and its verdict (READY / NOT READY), the sign-off and approvers, and the next step
(`server.admin.guideline_steps`). Promotion and rollback rewrite `campaign.yaml` on disk, which
the renderer cannot reach: the page says so and shows the command.

A candidate's sign-off is recorded here by an `admin` (the Sign off button, or JSON
`{"version": ..., "report_sha256": ...}` with a bearer token) through
`welcomemat.campaign.guideline_signoff.sign_off_candidate`, the implementation
`welcomemat guidelines signoff` uses, and it refuses what that refuses and nothing more: a
high-risk candidate needs the sign-off, a standard-risk one may have it (the command records it
too). It is audit-logged as the person's e-mail address (or the token's name). `report_sha256`
names the report the signer read: a candidate proposed again since is refused (409), as is one
already signed off, NOT READY, or proposed against a version no longer active. A high-risk
candidate's signer may not promote it: the command refuses them. A form post is answered with a
303 back to the page, which says what was done.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field, ValidationError
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
from server.admin.form_body import is_form_post, read_form
from server.admin.form_posts import FormField, FormPost
from server.admin.guideline_steps import CAMPAIGN_FILE, version_rows
from server.admin.page_format import check_params, wants_json, wants_page
from server.bodies import declared_length, read_bounded_body
from server.problems import HTTPProblem
from server.qr import see_other
from server.renderer_state import RendererState
from welcomemat.bounded_json import decode_json
from welcomemat.campaign.guideline_signoff import next_step, sign_off_candidate
from welcomemat.campaign.guidelines import GuidelineChange, GuidelineStore
from welcomemat.errors import AuditError, InputError
from welcomemat.limits import ADMIN_BODY_MAX_BYTES
from welcomemat.records.audit import Auditor, Via
from welcomemat.security.people import Role
from welcomemat.validation_errors import dotted, first_problem

__all__ = [
    "GUIDELINES_ROUTE",
    "SIGNOFF_FORM",
    "SIGNOFF_ROUTE",
    "GuidelineSignOffBody",
    "guideline_signoff",
    "guidelines_page",
]

log = logging.getLogger(__name__)

GUIDELINES_ROUTE = "/admin/campaigns/{campaign}/guidelines"
SIGNOFF_ROUTE = "/admin/campaigns/{campaign}/guidelines/signoff"
# The sign-off writes its record, then appends its audit entry (up to `audit.APPEND_ATTEMPTS`
# tries, 1 s socket timeout each): the budget covers them all.
_WRITE_TIMEOUT_S = 6.0
_VERSION_MAX_CHARS = 200  # a version label is a person's short name for it (a date, most often)


class GuidelineSignOffBody(BaseModel):
    """`POST .../guidelines/signoff`: the candidate version, and the report (its SHA-256) the signer read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str = Field(strict=True, min_length=1, max_length=_VERSION_MAX_CHARS)
    report_sha256: str = Field(strict=True, pattern=r"^[0-9a-f]{64}$")


# The Sign off button's fields (`server.admin.form_posts`).
SIGNOFF_FORM = FormPost(
    "GuidelineSignOffForm",
    GuidelineSignOffBody,
    (
        FormField(
            "version",
            {
                "type": "string",
                "maxLength": _VERSION_MAX_CHARS,
                "pattern": r"\S",
                "description": "The candidate's guideline version.",
            },
            required=True,
        ),
        FormField(
            "report_sha256",
            {
                "type": "string",
                "pattern": "^[0-9a-f]{64}$",
                "description": "The SHA-256 of the report the signer read (its record's `report_sha256`).",
            },
            required=True,
        ),
    ),
    "The guidelines page's Sign off button.",
)


def _read_versions(
    renderer: RendererState, tenant: str, campaign: str
) -> tuple[list[GuidelineChange], str | None]:
    store = GuidelineStore(renderer.client)
    return store.history(tenant, campaign), store.active_version(tenant, campaign)


@admin_endpoint(html=wants_page)
async def guidelines_page(request: Request, renderer: RendererState) -> Response:
    state = await path_campaign(request, renderer)
    tenant, campaign = state.tenant, state.campaign_id
    check_params(request, frozenset({"signed_off"}))
    history, active = await guarded_read(
        renderer, "admin_guidelines", lambda: _read_versions(renderer, tenant, campaign)
    )
    rows = version_rows(history, active)
    published = state.view.campaign.guideline_version
    if wants_json(request):
        return json_answer(
            {
                "tenant": tenant,
                "campaign": campaign,
                "active": active,
                "published": published,
                "versions": [row.to_json() for row in rows],
            }
        )
    actor = request.state.actor
    asked = request.query_params.get("signed_off")
    done = next((r.record for r in rows if r.record.version == asked and r.record.signed_off_by), None)
    return html_answer(
        "admin/guidelines.html",
        admin_stylesheet="/static/admin.css",
        tenant=tenant,
        campaign=campaign,
        rows=rows,
        active=active,
        published=published,
        risk_tier=state.view.campaign.risk_tier,
        campaign_file=CAMPAIGN_FILE,
        # the button: a person's session whose role manages guidelines (a token has no form to post)
        csrf=actor.csrf if actor.is_person and actor.role.allows(Role.ADMIN) else None,
        done=done,
    )


guidelines_page.__doc__ = (
    """
    summary: The campaign's guideline versions and candidates, and what comes next for each (admin).
    description: >
      Every version `welcomemat guidelines` recorded, newest first: state (candidate, active,
      superseded, rolled back), why, evidence, validation per account set with its verdict
      (READY / NOT READY), sign-off and approvers, and the next step (a sign-off, or the
      `welcomemat guidelines` command that promotes or rolls back: those rewrite campaign.yaml,
      which the renderer cannot reach). HTML, or JSON when `Accept` names `application/json`
      first. Bearer admin token (`adminBearer`).
    security: [{adminBearer: []}, {adminSession: []}]
    parameters:
      - {name: campaign, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
      - {name: signed_off, in: query, required: false, schema: {type: string}}
    responses:
      200:
        description: "The versions."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {type: object}}
      400:
        description: "A query parameter the page does not take, or one given twice."
        content:
          text/html: {schema: {type: string}}
          application/json: {schema: {$ref: "#/components/schemas/Problem"}}
      401: {$ref: "#/components/responses/BearerRefused"}"""
    + campaign_not_found_doc()
    + """
      503: {$ref: "#/components/responses/RedisUnavailablePage"}
"""
)


async def _sign_off_body(request: Request, renderer: RendererState) -> GuidelineSignOffBody:
    """The body as the model reads it: the button's form (its CSRF field dropped) or JSON; 400
    naming the field."""
    if is_form_post(request):
        fields = SIGNOFF_FORM.read(await read_form(request, renderer))
        try:
            return GuidelineSignOffBody.model_validate(fields)
        except ValidationError as exc:
            loc, message = first_problem(exc)
            raise HTTPProblem(400, f"the form's {dotted(loc) or 'fields'}: {message}") from None
    body = await read_bounded_body(request, ADMIN_BODY_MAX_BYTES, renderer.tuning.body_read_timeout_s)
    shape = '{"version": "...", "report_sha256": "..."}'
    try:
        return GuidelineSignOffBody.model_validate(decode_json(body or b"{}", max_bytes=ADMIN_BODY_MAX_BYTES))
    except InputError as exc:
        raise HTTPProblem(400, f"body must be JSON {shape}: {exc.field or 'body'}: {exc.message}") from None
    except ValidationError as exc:
        loc, message = first_problem(exc)
        raise HTTPProblem(400, f"body must be JSON {shape}: {dotted(loc) or 'body'}: {message}") from None


@admin_endpoint(needs=Role.ADMIN, html=is_form_post)
async def guideline_signoff(request: Request, renderer: RendererState) -> Response:
    declared_length(request.headers.get("content-length"), ADMIN_BODY_MAX_BYTES)  # 413 before anything
    state = await path_campaign(request, renderer)
    tenant, campaign = state.tenant, state.campaign_id
    body = await _sign_off_body(request, renderer)
    clock = renderer.clock
    auditor = Auditor(request.state.actor.actor, Via.HTTP, lambda: datetime.fromtimestamp(clock(), UTC))

    def act() -> GuidelineChange | InputError | AuditError | None:
        if GuidelineStore(renderer.client).get(tenant, campaign, body.version) is None:
            return None
        try:
            return sign_off_candidate(
                renderer.client,
                tenant,
                campaign,
                body.version,
                auditor=auditor,
                now=auditor.clock(),
                report_sha256=body.report_sha256,
            )
        except (InputError, AuditError) as exc:  # said below, not a Redis fault to count
            return exc

    outcome = await renderer.guard.call("admin_guideline_signoff", act, timeout_s=_WRITE_TIMEOUT_S)
    if outcome is None:
        raise HTTPProblem(404, f"no guideline version {body.version!r} in {tenant}/{campaign}")
    if isinstance(outcome, AuditError):
        log.error("%s", outcome)
        raise HTTPProblem(
            503,
            f"signed off {body.version}; the sign-off stands, but its audit entry could not be written "
            "(see the renderer's log)",
            fields={"applied": True, "audited": False},
        )
    if isinstance(outcome, InputError):
        raise HTTPProblem(409, outcome.message)
    if is_form_post(request):
        query = urlencode({"signed_off": outcome.version})
        return see_other(f"{renderer.settings.public_url}/admin/campaigns/{campaign}/guidelines?{query}")
    return json_answer(
        {
            "tenant": tenant,
            "campaign": campaign,
            "version": outcome.version,
            "signed_off_by": outcome.signed_off_by,
            "signed_off_at": outcome.signed_off_at.isoformat() if outcome.signed_off_at else None,
            "detail": f"signed off; {next_step(outcome)}",
        }
    )


guideline_signoff.__doc__ = (
    """
    summary: Sign off a guideline candidate's report (a high-risk one's first of two steps) (admin).
    description: >
      What `welcomemat guidelines signoff` records, by the same implementation, refusing what
      it refuses: who checked the READY report's diagnosis, and when. `report_sha256` is the
      report read (the change record's `report_sha256`): a candidate proposed again since is
      refused. Audit-logged (`guidelines_signoff`) as the token's name or the person's e-mail
      address. A high-risk candidate's promotion must then be by someone else (`welcomemat
      guidelines promote`); a standard-risk one's by anyone. Needs the `admin` role.
      Bearer admin token (`adminBearer`).
    security: [{adminBearer: []}, {adminSession: []}]
    parameters:
      - {name: campaign, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
    requestBody:
      required: true
      content:
        application/json: {schema: {$ref: "#/components/schemas/GuidelineSignOffBody"}}
        application/x-www-form-urlencoded: {schema: {$ref: "#/components/schemas/GuidelineSignOffForm"}}
    responses:
      200:
        description: "Signed off: who, and when."
        content: {application/json: {schema: {$ref: "#/components/schemas/GuidelineSignOff"}}}
      303:
        $ref: "#/components/responses/FormPostDone"
        description: "A form's post, done: back to the guidelines page, which says what was done."
      400:
        $ref: "#/components/responses/Refused"
        description: "The body is not {\\"version\\": ..., \\"report_sha256\\": ...} or its form."
      401: {$ref: "#/components/responses/BearerRefused"}
      403: {$ref: "#/components/responses/SessionRefused"}"""
    + campaign_not_found_doc(", or no such guideline version")
    + """
      408: {$ref: "#/components/responses/Refused", description: "The body did not arrive in time."}
      409:
        $ref: "#/components/responses/Refused"
        description: >-
          Not a READY candidate that waits for a sign-off: signed off already, proposed again
          since that report, proposed against a version no longer active, NOT READY, or no
          candidate.
      413: {$ref: "#/components/responses/Refused", description: "The body is over 1024 bytes."}
      503:
        $ref: "#/components/responses/RedisUnavailablePage"
        description: "Redis is unavailable, or the sign-off stands but was not audit-logged."
"""
)
