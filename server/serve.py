"""`welcomemat serve`: the renderer under uvicorn, one app per worker process (factory mode)."""

from __future__ import annotations

from welcomemat.settings import Settings

__all__ = ["run_serve"]


def run_serve(*, host: str, port: int, workers: int) -> int:
    """Serve until interrupted. Settings are read (and refused, exit 2) before anything starts.

    uvicorn's own `X-Forwarded-For` handling is off: the renderer honours that header only
    from `WELCOMEMAT_TRUSTED_PROXIES`, and two layers rewriting the client would disagree.
    """
    import uvicorn

    from welcomemat.connection import resolve_redis

    settings = Settings.from_env()
    # Start the embedded Redis (when REDIS_URL is unset) once here, not racing in each worker.
    target = resolve_redis(settings)
    print(f"welcomemat: renderer on http://{host}:{port} ({workers} worker(s)); {target.describe()}")
    print(f"welcomemat: public URL {settings.public_url}; allowed hosts {', '.join(settings.allowed_hosts)}")
    uvicorn.run(
        "server.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        proxy_headers=False,
        server_header=False,
        log_level=settings.log_level.lower(),
    )
    return 0
