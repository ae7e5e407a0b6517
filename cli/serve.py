"""`welcomemat serve`: the renderer under uvicorn, one app per worker process (factory mode)."""

from __future__ import annotations

import sys

from welcomemat.settings import Settings

__all__ = ["STACKS", "run_serve"]


# uvicorn's (http, loop) settings per `--http` choice.
STACKS = {"fast": ("httptools", "uvloop"), "h11": ("h11", "asyncio")}


def run_serve(
    *,
    host: str,
    port: int,
    workers: int,
    http: str = "fast",
    access_log: bool = True,
    reuse_port: bool = False,
) -> int:
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
    `reuse_port` (with 2+ workers, on Linux): each worker listens on a socket of its own and the
    kernel spreads connections across them (`cli.worker_sockets`; exit 1 when the address cannot
    be bound); else they share uvicorn's one.
    """
    from cli.exit_codes import EXIT_FAILED
    from cli.worker_sockets import CannotListen, run_uvicorn, spreads_connections
    from server.http_protocols import PROTOCOLS
    from welcomemat.storage.connection import resolve_redis

    settings = Settings.from_env()
    # Start the embedded Redis (when REDIS_URL is unset) once here, not racing in each worker.
    target = resolve_redis(settings)
    parser, loop = STACKS[http]
    own_sockets = workers > 1 and reuse_port and spreads_connections()
    sockets = "" if workers == 1 else ", a socket each" if own_sockets else ", one shared socket"
    print(
        f"welcomemat: renderer on http://{host}:{port} ({workers} worker(s){sockets}, {parser} + {loop}); "
        f"{target.describe()}"
    )
    print(f"welcomemat: public URL {settings.public_url}; allowed hosts {', '.join(settings.allowed_hosts)}")
    print(f"welcomemat: request headers must arrive within {settings.header_timeout_s:g} s")
    try:
        run_uvicorn(
            "server.app:app_from_env",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            reuse_port=reuse_port,
            http=PROTOCOLS[parser],
            loop=loop,
            proxy_headers=False,
            server_header=False,
            access_log=access_log,
            log_level=settings.log_level.lower(),
        )
    except CannotListen as error:  # one socket per worker: the address is bound before they start
        print(f"welcomemat: {error}", file=sys.stderr)
        return EXIT_FAILED
    return 0
