"""`GET /openapi.json`: the renderer's routes described from their docstrings (YAML after `---`).

Each route's docstring declares every status it answers, the content type of each (HTML for
pages and their refusals, JSON for `/v1/` and operator APIs) and the headers a client acts on.
What several routes share is declared once here, under `components`:

- `schemas`: ids, the error body every refusal in JSON carries (`{"error": message, ...}`,
  `server.problems`), the zones payload; the request bodies and the operator payloads are
  generated from the pydantic models that read and write them (`BeaconBody`, `ConversionIn`,
  `server.admin.payloads`, `welcomemat.lift.comparison`), so the document cannot drift from the code;
- `responses`: the refusals routes share (an unknown page, the bearer check, a session's CSRF,
  Origin or role refusal, Redis down, the rate limit, a refusal with its status's own
  description) and a form post's 303;
- the form posts of the admin pages' buttons (`application/x-www-form-urlencoded`): their
  schemas are the declarations the handlers read the forms with (`server.admin.form_posts`).

OpenAPI 3.1: its schemas are JSON Schema 2020-12, what pydantic generates. The test suite
fuzzes the running app from this document (tests/server/test_openapi_fuzz.py): a status,
content type, body or header the document does not declare fails it.
"""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import models_json_schema
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.schemas import SchemaGenerator

from server.admin.form_posts import FormPost
from server.admin.guidelines_page import SIGNOFF_FORM, GuidelineSignOffBody
from server.admin.payloads import ExplainPayload, ReviewDecisionBody, ReviewQueueEntry, RollbackBody
from server.admin.review_queue import APPROVE_FORM, REJECT_FORM, ROLLBACK_FORM
from server.admin.sessions import SESSION_COOKIE
from server.engagement.events_api import BeaconBody
from welcomemat import __version__
from welcomemat.ids import ID_PATTERN
from welcomemat.lift.comparison import LiftReport
from welcomemat.lift.results import ResultsReport
from welcomemat.records.conversions import ConversionIn, ConversionType

__all__ = ["COMPONENTS", "FORM_POSTS", "openapi_schema"]

_REF = "#/components/schemas/{model}"
# The admin pages' form posts: each route's `FormPost`, published under its name.
FORM_POSTS: tuple[FormPost, ...] = (APPROVE_FORM, REJECT_FORM, ROLLBACK_FORM, SIGNOFF_FORM)


def _model_schemas() -> dict[str, Any]:
    """The JSON Schemas of the pydantic models request bodies are read with (as they validate)
    and operator answers are dumped from (as they dump)."""
    _, found = models_json_schema(
        [
            *(
                (model, "validation")
                for model in (
                    BeaconBody,
                    ConversionIn,
                    ReviewDecisionBody,
                    RollbackBody,
                    GuidelineSignOffBody,
                )
            ),
            *(
                (model, "serialization")
                for model in (ExplainPayload, ReviewQueueEntry, LiftReport, ResultsReport)
            ),
        ],
        ref_template=_REF,
    )
    schemas: dict[str, Any] = found["$defs"]
    return schemas


def _schema(name: str) -> dict[str, str]:
    return {"$ref": _REF.format(model=name)}


_JSON_PROBLEM = {"application/json": {"schema": _schema("Problem")}}
_HTML = {"text/html": {"schema": {"type": "string"}}}
_RETRY_AFTER = {
    "Retry-After": {"required": True, "schema": {"type": "string", "pattern": "^[0-9]+$"}},
}

SCHEMAS: dict[str, Any] = {
    "Id": {
        "type": "string",
        "pattern": ID_PATTERN,
        "description": "An opaque id: 1-64 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit.",
    },
    "IdOrBlank": {
        # A page's query value that a form may send empty: as if it were not given (a form's "any").
        "anyOf": [{"$ref": _REF.format(model="Id")}, {"type": "string", "maxLength": 0}],
        "description": "An id, or empty: as if not given.",
    },
    "Problem": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {"type": "string", "description": "What was refused and why, safe to show."},
            "current_version": {"type": "integer", "description": "409 of a review decision."},
        },
    },
    "Zones": {
        "type": "object",
        "additionalProperties": False,
        "required": ["campaign", "arm", "view_id", "view", "zones", "links"],
        "properties": {
            "campaign": {"type": "string"},
            "arm": {"type": "string", "enum": ["personal", "holdout", "anonymous"]},
            "view_id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
            "view": {
                "type": ["string", "null"],
                "description": "A signed view token for /v1/events beacons; null without a secret.",
            },
            "zones": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["text", "rung"],
                    "properties": {
                        "text": {"type": "string"},
                        "rung": {"type": "string", "enum": ["personal", "segment", "default"]},
                        "href": {"type": "string", "pattern": "^https://"},
                    },
                },
            },
            "links": {"type": "array", "items": {"type": "string"}},
        },
    },
    "Health": {
        "type": "object",
        "required": ["status"],
        "properties": {
            "status": {"type": "string", "enum": ["ok", "unavailable"]},
            "redis": {"type": "string"},
        },
    },
    "ReviewQueue": {
        "type": "object",
        "additionalProperties": False,
        "required": ["tenant", "campaign", "items"],
        "properties": {
            "tenant": {"type": "string"},
            "campaign": {"type": "string"},
            "items": {"type": "array", "items": _schema("ReviewQueueEntry")},
        },
    },
    "ReviewDecision": {
        "type": "object",
        "additionalProperties": False,
        "required": ["account_id", "changed", "version", "status", "detail"],
        "properties": {
            "account_id": {"type": "string"},
            "changed": {"type": "boolean"},
            "version": {"type": "integer", "minimum": 1},
            "status": {"type": "string"},
            "detail": {"type": "string"},
        },
    },
    "GuidelineSignOff": {
        "type": "object",
        "additionalProperties": False,
        "required": ["tenant", "campaign", "version", "signed_off_by", "signed_off_at", "detail"],
        "properties": {
            "tenant": {"type": "string"},
            "campaign": {"type": "string"},
            "version": {"type": "string"},
            "signed_off_by": {"type": "string"},
            "signed_off_at": {"type": "string", "format": "date-time"},
            "detail": {"type": "string"},
        },
    },
    "Conversion": {
        "type": "object",
        "additionalProperties": False,
        "required": ["status", "conversion_id", "campaign", "account_id", "type", "arm"],
        "properties": {
            "status": {"type": "string", "enum": ["recorded", "already_recorded"]},
            "conversion_id": {"type": "string"},
            "campaign": {"type": "string"},
            "account_id": {"type": "string"},
            "type": {"type": "string", "enum": [t.value for t in ConversionType]},
            "arm": {"type": "string", "enum": ["personal", "holdout"]},
        },
    },
    **_model_schemas(),
    **{form.name: form.schema() for form in FORM_POSTS},
}

# Refusals several routes share. A route refers to one with `$ref` and may give its own
# `description` beside it (OpenAPI 3.1).
RESPONSES: dict[str, Any] = {
    "NotFoundPage": {"description": "No such page.", "content": _HTML},
    "Problem": {"description": "Refused; the message says why.", "content": _JSON_PROBLEM},
    "BearerRefused": {
        # The bearer check's refusal is rendered by path, like an unknown route (server.problems).
        "description": "No or wrong bearer token, or a person's session that has ended.",
        "headers": {"WWW-Authenticate": {"required": True, "schema": {"type": "string", "const": "Bearer"}}},
        "content": {**_HTML, **_JSON_PROBLEM},
    },
    "AdminNotFound": {
        # HTML when the admin routes are off (as an unknown route); JSON for an unknown campaign,
        # account or record (HTML on the routes that answer HTML). A tenant-scoped token gets
        # another tenant's campaign as an unknown one: the same answer (`admin_auth.campaign_for`).
        "description": "Admin routes off, or no such campaign or account.",
        "content": {**_HTML, **_JSON_PROBLEM},
    },
    "RedisUnavailable": {
        "description": "Redis is unavailable; retry after the seconds `Retry-After` says.",
        "headers": _RETRY_AFTER,
        "content": _JSON_PROBLEM,
    },
    "RedisUnavailablePage": {
        # On a route whose refusals are pages (preview, lift report as HTML).
        "description": "Redis is unavailable; retry after the seconds `Retry-After` says.",
        "headers": _RETRY_AFTER,
        "content": {**_HTML, **_JSON_PROBLEM},
    },
    "Refused": {
        # A route that takes a JSON body or a page's form: its refusals follow the body.
        "description": "Refused; the message says why: JSON to a JSON body, an HTML page to a form's post.",
        "content": {**_HTML, **_JSON_PROBLEM},
    },
    "SessionRefused": {
        # `server.admin.csrf` and the role check (`server.admin.endpoint`): logged and counted.
        "description": (
            "A person's session refused: the CSRF token (form field `csrf` or header `X-CSRF-Token`) "
            "missing or wrong, an `Origin` (or `Referer`) not WELCOMEMAT_PUBLIC_URL's, or a role that "
            "may not do this. A bearer token is never refused so."
        ),
        "content": {**_HTML, **_JSON_PROBLEM},
    },
    "FormPostDone": {
        "description": "A form's post, done: back to the page the button was on.",
        "headers": {
            "Location": {
                "required": True,
                "description": "`WELCOMEMAT_PUBLIC_URL` + the page's path and what it says was done.",
                "schema": {"type": "string", "format": "uri"},
            }
        },
    },
    "RateLimited": {
        "description": "Too many requests from this client; retry after `Retry-After` seconds.",
        "headers": _RETRY_AFTER,
        "content": _JSON_PROBLEM,
    },
}

COMPONENTS: dict[str, Any] = {
    # Admin routes declare `security: [{adminBearer: []}, {adminSession: []}]`, POST
    # /v1/conversions `crmBearer`.
    "securitySchemes": {
        "adminBearer": {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "WELCOMEMAT_ADMIN_TOKEN or a WELCOMEMAT_ADMIN_TOKENS entry. `NAME:TOKEN` (and the shared "
                "token) reach every tenant's campaigns; `NAME@TENANT:TOKEN` only TENANT's: any other "
                "campaign answers 404, exactly as an unknown one."
            ),
        },
        "adminSession": {
            "type": "apiKey",
            "in": "cookie",
            "name": SESSION_COOKIE,
            "description": (
                "A person's session, started from a `welcomemat admin invite` link (HttpOnly, "
                "SameSite=Strict). Its role in its one tenant decides what it may do (viewer, reviewer, "
                "admin); a state-changing request also needs the session's CSRF token and an `Origin` of "
                "WELCOMEMAT_PUBLIC_URL (403 otherwise)."
            ),
        },
        "crmBearer": {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "WELCOMEMAT_CRM_TOKEN (every tenant's campaigns) or a WELCOMEMAT_CRM_TOKENS entry "
                "`TENANT:TOKEN` (only TENANT's: a conversion for any other campaign answers 404, "
                "exactly as an unknown one, and writes nothing)."
            ),
        },
    },
    "schemas": SCHEMAS,
    "responses": RESPONSES,
}

_GENERATOR = SchemaGenerator(
    {
        "openapi": "3.1.0",
        "info": {
            "title": "Welcomemat renderer",
            "version": __version__,
            "description": (
                "Account-aware landing pages, QR continuations, the embeddable snippet with its "
                "zones API and engagement beacons, and operations endpoints."
            ),
        },
        "components": COMPONENTS,
    }
)


async def openapi_schema(request: Request) -> JSONResponse:
    """
    summary: This API's OpenAPI description.
    responses:
      200:
        description: The OpenAPI 3.1 document.
        content: {application/json: {schema: {type: object}}}
    """
    return JSONResponse(_GENERATOR.get_schema(routes=request.app.routes))
