"""A real uvicorn server in a thread, on a free port (the httpx test suite's pattern)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette

from server.http_protocols import PROTOCOLS


@contextmanager
def serve_in_thread(app: Starlette, *, port: int = 0, **options: Any) -> Iterator[str]:
    """Yields the base URL (`http://127.0.0.1:<port>`, `https://` when `options` give a
    certificate); stops the server on exit. `port`: 0 for any free one, or one chosen before
    the app was built (an app whose public URL must name it). `options`: more of uvicorn's `Config`;
    by default the HTTP protocol `welcomemat serve` runs (`server.http_protocols`)."""
    options.setdefault("http", PROTOCOLS["httptools"])
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", proxy_headers=False, lifespan="on", **options
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"{'https' if options.get('ssl_certfile') else 'http'}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
