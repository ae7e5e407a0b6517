"""`welcomemat serve`: the renderer (`cli.serve`)."""

from __future__ import annotations

import argparse

from cli.arg_types import fixed_port, positive_int

HTTP_STACKS = ("fast", "h11")

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser(
        "serve",
        help="the renderer: landing pages, QR continuations, /metrics",
        description="The renderer under uvicorn, one app per worker process: landing and continuation "
        "pages, QR redirects, the snippet API, conversions from the CRM, the admin routes, /healthz, "
        "/readyz and /metrics. Settings are read (and refused, exit 2) before anything starts; it serves "
        "until interrupted. A client is named by X-Forwarded-For only from WELCOMEMAT_TRUSTED_PROXIES; a "
        "request's line and headers must arrive within WELCOMEMAT_HEADER_TIMEOUT_S.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=fixed_port, default=8000, help="port, 1 to 65535 (default: 8000)")
    serve.add_argument("--workers", type=positive_int, default=1, help="worker processes (default: 1)")
    serve.add_argument(
        "--http",
        choices=HTTP_STACKS,
        default="fast",
        help="fast: httptools and uvloop (installed with the package, the default); h11: uvicorn's "
        "pure-Python HTTP parser and asyncio's event loop (slower; for platforms without the others)",
    )
    serve.add_argument(
        "--access-log",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="uvicorn's access line per request at the INFO log level (default: on); "
        "--no-access-log leaves it out (page views are logged as events anyway)",
    )
    serve.add_argument(
        "--reuse-port",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="with 2+ workers on Linux, each worker listens on a socket of its own (SO_REUSEPORT) and the "
        "kernel spreads connections across them by their addresses' hash; by default they share one "
        "socket (uvicorn's way), whose connections go to whichever worker accepts first",
    )
    serve.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.serve import run_serve

    return run_serve(
        host=args.host,
        port=args.port,
        workers=args.workers,
        http=args.http,
        access_log=args.access_log,
        reuse_port=args.reuse_port,
    )
