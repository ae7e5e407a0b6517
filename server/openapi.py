"""`GET /openapi.json`: the renderer's routes described from their docstrings (YAML after `---`)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.schemas import SchemaGenerator

from welcomemat import __version__

__all__ = ["openapi_schema"]

_GENERATOR = SchemaGenerator(
    {
        "openapi": "3.0.3",
        "info": {
            "title": "Welcomemat renderer",
            "version": __version__,
            "description": (
                "Account-aware landing pages, QR continuations, the embeddable snippet with its "
                "zones API and engagement beacons, and operations endpoints."
            ),
        },
        # Admin routes declare `security: [{adminBearer: []}]` (WELCOMEMAT_ADMIN_TOKEN).
        # POST /v1/conversions declares `security: [{crmBearer: []}]` (WELCOMEMAT_CRM_TOKEN).
        "components": {
            "securitySchemes": {
                "adminBearer": {"type": "http", "scheme": "bearer"},
                "crmBearer": {"type": "http", "scheme": "bearer"},
            }
        },
    }
)


async def openapi_schema(request: Request) -> JSONResponse:
    """
    summary: This API's OpenAPI description.
    responses:
      200:
        description: The OpenAPI 3 document.
    """
    return JSONResponse(_GENERATOR.get_schema(routes=request.app.routes))
