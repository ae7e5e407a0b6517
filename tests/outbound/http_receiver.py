"""A real HTTP receiver on a loopback port, for the webhook and seller-alert tests (transport matters)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (path, headers, body) -> (status, extra response headers)
Handle = Callable[[str, Any, bytes], tuple[int, dict[str, str]]]


@contextmanager
def serve_http(handle: Handle) -> Iterator[str]:
    """Serve POSTs with `handle` on 127.0.0.1 until the block ends; yields `http://127.0.0.1:<port>`."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status, extra = handle(self.path, self.headers, body)
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
