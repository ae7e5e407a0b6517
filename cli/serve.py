"""`welcomemat serve`: the renderer under uvicorn, one app per worker process (factory mode)."""

from __future__ import annotations

from welcomemat.settings import Settings

__all__ = ["STACKS", "run_serve"]


# uvicorn's (http, loop) settings per `--http` choice.
STACKS = {"fast": ("httptools", "uvloop"), "h11": ("h11", "asyncio")}


def run_serve(*, host: str, port: int, workers: int, http: str = "fast", access_log: bool = True) -> int:
    """Serve until interrupted. Settings are read (and refused, exit 2) before anything starts.

    uvicorn's own `X-Forwarded-For` handling is off: the renderer honours that header only
    from `WELCOMEMAT_TRUSTED_PROXIES`, and two layers rewriting the client would disagree.
    `http` is "fast" (httptools + uvloop, named explicitly: uvicorn's "auto" would quietly
    fall back to the slow stack if they were missing) or "h11", each uvicorn's protocol with
    a deadline on reading a request's headers (`server.header_deadline`,
    `WELCOMEMAT_HEADER_TIMEOUT_S`) and a response's head and body written at once
    (`server.coalesced_writes`; both in `server.http_protocols`). `access_log` False: no
    uvicorn access line per request (each page view is already a `view` event in Redis; at
    the INFO level the line costs the request path the formatting of every request).
    """
    import uvicorn

    from server.http_protocols import PROTOCOLS
    from welcomemat.storage.connection import resolve_redis

    settings = Settings.from_env()
    # Start the embedded Redis (when REDIS_URL is unset) once here, not racing in each worker.
    target = resolve_redis(settings)
    parser, loop = STACKS[http]
    print(
        f"welcomemat: renderer on http://{host}:{port} ({workers} worker(s), {parser} + {loop}); "
        f"{target.describe()}"
    )
    print(f"welcomemat: public URL {settings.public_url}; allowed hosts {', '.join(settings.allowed_hosts)}")
    print(f"welcomemat: request headers must arrive within {settings.header_timeout_s:g} s")
    uvicorn.run(
        "server.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        http=PROTOCOLS[parser],
        loop=loop,
        proxy_headers=False,
        server_header=False,
        access_log=access_log,
        log_level=settings.log_level.lower(),
    )
    return 0
