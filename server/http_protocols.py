"""The HTTP protocols `welcomemat serve` runs: uvicorn's own, with a deadline on a request's
headers (`server.header_deadline`) and a response's writes joined (`server.coalesced_writes`).

They are passed to uvicorn by import string (`PROTOCOLS`, by `--http` choice): each worker
process imports them itself.
"""

from __future__ import annotations

from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from server.coalesced_writes import WithCoalescedWrites
from server.header_deadline import WithHeaderDeadline

__all__ = ["PROTOCOLS", "H11Serving", "HttpToolsServing"]

# `--http` choice (uvicorn's parser name) -> the protocol class `uvicorn.Config(http=...)` imports.
PROTOCOLS = {
    "httptools": "server.http_protocols:HttpToolsServing",
    "h11": "server.http_protocols:H11Serving",
}


class HttpToolsServing(WithHeaderDeadline, WithCoalescedWrites, HttpToolsProtocol):
    """uvicorn's httptools protocol (`--http fast`), with the header deadline and joined writes."""


class H11Serving(WithHeaderDeadline, WithCoalescedWrites, H11Protocol):
    """uvicorn's h11 protocol (`--http h11`), with the header deadline and joined writes."""
