"""A response whose body is encoded and whose headers are listed by the route: the hot routes'.

Starlette's `Response` encodes the content, builds the header list from a mapping (a loop,
lower-casing and encoding each name and value), and after sending checks for a background
task, on every request. The landing page, `/v1/zones` and the QR redirect know their body
bytes and their exact headers already; this is a `Response` that takes them as they are and
sends the two ASGI messages. Everything else about a response (the security layer's headers,
`Set-Cookie` appended to `raw_headers`) works as on any Starlette response.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

__all__ = ["PreparedResponse"]


class PreparedResponse(Response):
    """`body` sent with exactly `raw_headers` (the caller's list, kept: routes append to it)."""

    def __init__(self, body: bytes, raw_headers: list[tuple[bytes, bytes]], status_code: int = 200) -> None:
        self.status_code = status_code
        self.background = None
        self.body = body
        self.raw_headers = raw_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": self.body})
