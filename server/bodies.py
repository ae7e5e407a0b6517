"""Request bodies, read in one place: bounded before and while they are read.

Every route that takes a body reads it with `read_bounded_body(request, limit)`, never with
`request.body()`, `.json()`, `.form()` or its own loop over `.stream()` (a test greps for
them). A body is refused:

- by its declared `Content-Length`, before a byte of it is read: over `limit` is 413 at once
  (a client announcing 10 GB and sending nothing gets its answer, not a held connection); a
  value that is not a number is 400;
- as it is read (chunked, or lying about its length): 413 as soon as it passes `limit`; what
  was read so far is dropped and the rest is never read;
- when the client goes away before the body is complete: 400;
- when the body stops arriving (a client that announces it and then stalls: slowloris): 408
  once `timeout_s` has passed since reading began (`RendererTuning.body_read_timeout_s`).

Each refusal is a `BodyRefused` (an `HTTPProblem`, answered by `server.problems`) that
carries `Connection: close`: the server closes the connection after the answer instead of
reading the rest of a body it refused.
"""

from __future__ import annotations

import asyncio

from starlette.requests import ClientDisconnect, Request

from server.problems import HTTPProblem

__all__ = ["BodyRefused", "declared_length", "read_bounded_body"]

_CLOSE = {"connection": "close"}
# A Content-Length longer than this many digits is over any limit (and past what `int` should
# be asked to parse: a header may hold thousands of digits).
_LENGTH_MAX_DIGITS = 18


class BodyRefused(HTTPProblem):
    """A request body refused (413 too large, 400 unreadable); the connection is closed after it."""

    def __init__(self, status: int, public_message: str) -> None:
        super().__init__(status, public_message, headers=_CLOSE)


def _too_large(limit: int) -> BodyRefused:
    return BodyRefused(413, f"the body must be at most {limit} bytes")


def declared_length(header: str | None, limit: int) -> int | None:
    """The declared `Content-Length` (None when there is none); `BodyRefused` when it is not a
    number (400) or is over `limit` (413)."""
    if header is None:
        return None
    value = header.strip()
    if not value.isascii() or not value.isdigit():
        raise BodyRefused(400, "Content-Length is not a number")
    if len(value) > _LENGTH_MAX_DIGITS or int(value) > limit:
        raise _too_large(limit)
    return int(value)


async def read_bounded_body(request: Request, limit: int, timeout_s: float) -> bytes:
    """The request body, at most `limit` bytes, whole within `timeout_s`; `BodyRefused` before
    reading when the declared length is over `limit`, as soon as what is read passes it, and
    when the body is not complete in time."""
    declared_length(request.headers.get("content-length"), limit)
    body = bytearray()
    try:
        # One deadline for the whole body, not per chunk: a byte a second would renew a
        # per-read timeout forever.
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                if len(body) + len(chunk) > limit:  # stop reading: the rest is never buffered
                    raise _too_large(limit)
                body += chunk
    except ClientDisconnect:
        raise BodyRefused(400, "the client went away before the body was complete") from None
    except TimeoutError:
        raise BodyRefused(408, f"the body did not arrive within {timeout_s:g} seconds") from None
    return bytes(body)
