"""The renderer's Starlette app: `create_app(settings)` for code and tests, `app_from_env` for uvicorn.

The security layer (trusted hosts and security headers, on every response, Starlette's
own error pages included) ▸ the hot routes (`hot_routes`: landing, continuation,
`/v1/zones` and `/q/{token}` straight to their endpoints) ▸ Starlette's stack (error middleware, the one
error handler of `server.problems`, routing) for everything else. Page endpoints are wrapped
by `faults.fail_closed`: an unexpected error on a page route is the plain page, 200.

The router's trailing-slash redirect is off: Starlette builds it from the request's `Host`
and scheme (`http://<any allowed host>/c/q4-pipeline` for `/c/q4-pipeline/`), an open
redirect under `WELCOMEMAT_ALLOWED_HOSTS=*` and an http downgrade behind a TLS proxy. A
path that matches no route is 404; the renderer's own redirects are built from configuration
and published data, never from the request: `/q/{token}` to `WELCOMEMAT_PUBLIC_URL`, a CTA's
`/r/{token}` to the campaign's allowlisted CTA URL (`server.engagement.click_redirect`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import redis
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, ExceptionHandler, Lifespan

from server.admin.lift import LIFT_ROUTE, lift_page
from server.admin.results import RESULTS_ROUTE, results_page
from server.admin.routes import admin_routes
from server.engagement.click_redirect import CLICK_ROUTE, ClickRedirect
from server.engagement.collector import tune_collector
from server.engagement.conversions_api import CONVERSIONS_ROUTE, post_conversion
from server.health import healthz, metrics, readyz
from server.hot_routes import HotRoutes
from server.log_redaction import install_access_log_redaction
from server.openapi import openapi_schema
from server.pages import continuation_page, landing_page
from server.problems import PROBLEM_CLASSES, problem_handler
from server.qr import qr_entry
from server.redis_guard import renderer_redis_client
from server.render import TEMPLATES_DIR
from server.renderer_state import RendererState
from server.security import SecurityMiddleware
from server.snippet import snippet_routes
from server.theme.assets import THEME_ROUTE, theme_file
from server.tuning import RendererTuning
from welcomemat.settings import Settings

__all__ = ["RendererApp", "app_from_env", "create_app"]


class RendererApp(Starlette):
    """Starlette with `outer` (the security layer) outermost and the hot routes ahead of its routing."""

    def __init__(
        self,
        *,
        routes: list[BaseRoute],
        outer: Callable[[ASGIApp], ASGIApp],
        hot_routes: bool,
        exception_handlers: Mapping[Any, ExceptionHandler],
        lifespan: Lifespan[Starlette],
    ) -> None:
        self._outer = outer
        self._hot_routes = hot_routes
        super().__init__(routes=routes, exception_handlers=exception_handlers, lifespan=lifespan)
        self.router.redirect_slashes = False  # see the module docstring

    def build_middleware_stack(self) -> ASGIApp:
        stack = super().build_middleware_stack()
        return self._outer(HotRoutes(stack, self.routes) if self._hot_routes else stack)


def create_app(
    settings: Settings,
    *,
    redis_client: redis.Redis | None = None,
    clock: Callable[[], float] = time.time,
    tuning: RendererTuning | None = None,
    templates_dir: Path = TEMPLATES_DIR,
) -> Starlette:
    """The renderer for `settings`.

    `redis_client` (bytes replies) is used as given; without one the app connects to
    `REDIS_URL` (or the embedded Redis) with the renderer's short timeouts and closes the
    client on shutdown. `clock` returns Unix seconds (token expiry, `valid_until`).
    """
    owns_client = redis_client is None
    if redis_client is None:
        from welcomemat.storage.connection import resolve_redis

        redis_client = renderer_redis_client(resolve_redis(settings).url)
    renderer = RendererState(settings, redis_client, clock=clock, tuning=tuning, templates_dir=templates_dir)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        renderer.start()
        try:
            yield
        finally:
            renderer.close()
            if owns_client:
                renderer.client.close()

    routes = [
        Route("/c/{campaign}", landing_page, methods=["GET", "HEAD"]),
        Route("/c/{campaign}/continue", continuation_page, methods=["GET", "HEAD"]),
        Route(THEME_ROUTE, theme_file, methods=["GET", "HEAD"]),
        Route("/q/{token}", qr_entry, methods=["GET"]),
        Route(CLICK_ROUTE, ClickRedirect(renderer).redirect, methods=["GET"]),
        *snippet_routes(renderer, templates_dir),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/openapi.json", openapi_schema, methods=["GET"], include_in_schema=False),
        *admin_routes(),
        Route(LIFT_ROUTE, lift_page, methods=["GET"]),
        Route(RESULTS_ROUTE, results_page, methods=["GET"]),
        Route(CONVERSIONS_ROUTE, post_conversion, methods=["POST"]),
        Mount("/static", StaticFiles(directory=templates_dir / "static"), name="static"),
    ]
    handle_problem = problem_handler(renderer.pages, renderer.metrics)
    app = RendererApp(
        routes=routes,
        outer=functools.partial(
            SecurityMiddleware,
            allowed_hosts=settings.allowed_hosts,
            frame_ancestors=settings.frame_ancestors,
            hsts=settings.public_url.startswith("https://"),
        ),
        hot_routes=renderer.tuning.hot_routes,
        exception_handlers=dict.fromkeys(PROBLEM_CLASSES, handle_problem),
        lifespan=lifespan,
    )
    app.state.renderer = renderer
    return app


def app_from_env() -> Starlette:
    """The app uvicorn's factory mode builds in each worker (`welcomemat serve`), in a process
    whose garbage collector is tuned for serving (`server.engagement.collector`)."""
    # Before the first request: no access line ever carries a token (server.log_redaction).
    install_access_log_redaction()
    app = create_app(Settings.from_env())
    renderer: RendererState = app.state.renderer
    tune_collector(renderer.tuning.gc_gen0_threshold, renderer.tuning.gc_full_interval_s)
    return app
