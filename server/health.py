"""Operations endpoints: liveness, readiness, Prometheus metrics.

Liveness says only that the process answers (restarting it would not fix Redis).
Readiness says whether this renderer can serve personal pages: Redis answers PING within
the readiness budget; 503 otherwise, so a load balancer prefers healthy peers. Pages
keep answering 200 with fallback copy either way.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from server.metrics import METRICS_CONTENT_TYPE
from server.redis_guard import RedisUnavailable
from server.renderer_state import RendererState

__all__ = ["healthz", "metrics", "readyz"]

_NO_CACHE = {"cache-control": "no-store"}


async def healthz(request: Request) -> Response:
    """
    summary: Liveness.
    responses:
      200:
        description: "The process is up."
        content: {application/json: {schema: {$ref: "#/components/schemas/Health"}}}
    """
    return JSONResponse({"status": "ok"}, headers=_NO_CACHE)


async def readyz(request: Request) -> Response:
    """
    summary: Readiness (Redis answers PING in time).
    responses:
      200:
        description: "Ready."
        content: {application/json: {schema: {$ref: "#/components/schemas/Health"}}}
      503:
        description: "Redis is unavailable; pages serve fallback copy."
        content: {application/json: {schema: {$ref: "#/components/schemas/Health"}}}
    """
    renderer: RendererState = request.app.state.renderer
    try:
        await renderer.guard.call("ping", renderer.client.ping, timeout_s=renderer.tuning.readiness_timeout_s)
    except RedisUnavailable as exc:
        return JSONResponse({"status": "unavailable", "redis": exc.kind}, status_code=503, headers=_NO_CACHE)
    return JSONResponse({"status": "ok", "redis": "ok"}, headers=_NO_CACHE)


async def metrics(request: Request) -> Response:
    """
    summary: Prometheus metrics (text exposition format).
    responses:
      200:
        description: "Every series of this process's renderer."
        content: {text/plain: {schema: {type: string}}}
    """
    renderer: RendererState = request.app.state.renderer
    renderer.metrics.events_queued.set(renderer.events.queued)
    renderer.metrics.breaker_open.set(1 if renderer.breaker.state == "open" else 0)
    return Response(renderer.metrics.exposition(), media_type=METRICS_CONTENT_TYPE, headers=_NO_CACHE)
