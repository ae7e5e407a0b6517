"""`POST /v1/conversions`: the CRM reports an outcome (positive reply, meeting booked, ..., unsubscribe,
spam complaint) per account.

Authenticated with a CRM bearer token, checked by `admin_auth.require_credential` (the one
constant-time bearer check): the operator's `WELCOMEMAT_CRM_TOKEN`, or a tenant's
`WELCOMEMAT_CRM_TOKENS` entry; none set, the route is off (404); a missing or wrong token is
401. The campaign is reached through `admin_auth.campaign_for`: with a tenant's token, a
campaign that tenant does not own is 404 as an unknown one, and nothing is written.
The body is one JSON object (`welcomemat.records.conversions.ConversionIn`, at most
`CONVERSION_BODY_MAX_BYTES`; read by `server.bodies`, decoded by
`welcomemat.bounded_json`). The conversion is stored once per `conversion_id` with the
arm `assign_arm` gives the account: 202 when recorded, 200 when the same conversion was
already recorded (a CRM retry), 409 when the id was used for a different outcome.

Bad input is 400 (413 when too large, 415 when not JSON) with a message naming the field.
Redis down or slow is 503 with `Retry-After`, counted like every renderer Redis fault;
never a 500: a CRM retries a 503. Refusals are `HTTPProblem`s, rendered as JSON by
`server.problems`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from server.admin.auth import campaign_for, require_credential
from server.bodies import read_bounded_body
from server.faults import NO_STORE
from server.problems import RETRY_AFTER_S, HTTPProblem
from server.renderer_state import RendererState
from welcomemat.errors import InputError, StoredValueError
from welcomemat.records.conversions import (
    CONVERSION_BODY_MAX_BYTES,
    ConversionConflict,
    RecordResult,
    parse_conversion,
    record_conversion,
)

__all__ = ["CONVERSIONS_ROUTE", "conversion_payload", "post_conversion"]

CONVERSIONS_ROUTE = "/v1/conversions"
# Writing one conversion is one Lua call; this budget is for a loaded Redis, not a slow one.
_WRITE_TIMEOUT_S = 2.0
# Every 503 of this route says when to retry, as a Redis fault's does (`server.problems`).
_RETRY_LATER = {"retry-after": str(RETRY_AFTER_S)}


def conversion_payload(result: RecordResult) -> dict[str, object]:
    """The public answer: what was recorded, under which arm (no internal fields)."""
    stored = result.stored
    return {
        "status": "recorded" if result.created else "already_recorded",
        "conversion_id": stored.conversion_id,
        "campaign": stored.campaign,
        "account_id": stored.account_id,
        "type": stored.type.value,
        "arm": stored.arm.value,
    }


async def post_conversion(request: Request) -> Response:
    """
    summary: Record a CRM outcome (a goal or a negative outcome) for an account.
    description: >
      Bearer CRM token (`crmBearer`; none configured: 404). Idempotent by `conversion_id`. The
      account's experiment arm (personal or holdout) is stored with the conversion for the
      lift report. Goals (`positive_reply`, `meeting_booked`, `opportunity`, `closed_won`) are
      conversions; negative outcomes (`unsubscribe`, `spam_complaint`) are reported per arm on
      their own.
    security: [{crmBearer: []}]
    requestBody:
      required: true
      content:
        application/json: {schema: {$ref: "#/components/schemas/ConversionIn"}}
    responses:
      202:
        description: "Recorded, with the account's arm."
        content: {application/json: {schema: {$ref: "#/components/schemas/Conversion"}}}
      200:
        description: "This conversion id was recorded before with the same content."
        content: {application/json: {schema: {$ref: "#/components/schemas/Conversion"}}}
      400: {$ref: "#/components/responses/Problem", description: "Bad input; the message names the field."}
      401: {$ref: "#/components/responses/BearerRefused"}
      404:
        $ref: "#/components/responses/Problem"
        description: >-
          The route is off (no CRM token configured), or no such campaign (to a tenant's token,
          also any its tenant does not own).
      409:
        $ref: "#/components/responses/Problem"
        description: "The conversion id was recorded before with different content."
      408: {$ref: "#/components/responses/Problem", description: "The body did not arrive in time."}
      413: {$ref: "#/components/responses/Problem", description: "The body is too large."}
      415: {$ref: "#/components/responses/Problem", description: "The body is not application/json."}
      503:
        $ref: "#/components/responses/RedisUnavailable"
        description: "Redis is unavailable; retry later."
    """
    renderer: RendererState = request.app.state.renderer
    credential = require_credential(request, renderer.settings.crm_credentials())
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise HTTPProblem(415, "send the conversion as application/json")
    body = await read_bounded_body(request, CONVERSION_BODY_MAX_BYTES, renderer.tuning.body_read_timeout_s)
    try:
        conversion = parse_conversion(body)
    except InputError as exc:  # names the field of the client's body
        raise HTTPProblem(400, str(exc)) from None
    try:
        state = await campaign_for(credential, renderer.campaigns, conversion.campaign)
    except StoredValueError:
        renderer.metrics.stored_value_errors.inc()
        raise HTTPProblem(
            503, "the campaign's stored configuration cannot be read; retry later", headers=_RETRY_LATER
        ) from None
    tenant, fraction = state.tenant, state.view.campaign.holdout_fraction
    now = renderer.now()
    try:
        result = await renderer.guard.call(
            "conversion",
            lambda: record_conversion(renderer.client, tenant, fraction, conversion, now=now),
            timeout_s=max(_WRITE_TIMEOUT_S, renderer.guard.timeout_s),
        )
    except ConversionConflict as exc:  # names the conversion id the client sent
        raise HTTPProblem(409, str(exc)) from None
    except StoredValueError:
        renderer.metrics.stored_value_errors.inc()
        raise HTTPProblem(
            503, "the stored conversion under this id cannot be read", headers=_RETRY_LATER
        ) from None
    return JSONResponse(
        conversion_payload(result), status_code=202 if result.created else 200, headers=NO_STORE
    )
