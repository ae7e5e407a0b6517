"""Random URL-safe strings for per-request values: CSP nonces and view ids.

Both come from the kernel's CSPRNG (`os.urandom`), like `secrets.token_urlsafe`, but drawn
for 256 values at a time: a page needs two per request, and each `os.urandom` call is a
system call that also releases the GIL (which the event writer's thread can then hold for
a while). The values are encoded in one go and handed out by `list.pop`, which is atomic,
so threads never get the same one, and each is handed out once. A forked child (uvicorn
workers) starts with empty pools, so two processes never share values.
"""

from __future__ import annotations

import binascii
import os

__all__ = ["BATCH", "url_token"]

BATCH = 256
_URLSAFE = bytes.maketrans(b"+/", b"-_")
_pools: dict[int, list[str]] = {}


def _reset() -> None:
    _pools.clear()


os.register_at_fork(after_in_child=_reset)


def url_token(nbytes: int) -> str:
    """`nbytes` random bytes (a multiple of 3, so no padding) as `4 * nbytes / 3` base64url characters."""
    pool = _pools.get(nbytes)
    if pool:
        try:
            return pool.pop()
        except IndexError:  # another thread took the last one
            pass
    return _refill(nbytes)


def _refill(nbytes: int) -> str:
    if nbytes <= 0 or nbytes % 3:
        raise ValueError(f"nbytes must be a positive multiple of 3, not {nbytes}")
    size = nbytes * 4 // 3
    text = binascii.b2a_base64(os.urandom(nbytes * BATCH), newline=False).translate(_URLSAFE).decode("ascii")
    tokens = [text[i : i + size] for i in range(0, len(text), size)]
    token = tokens.pop()
    _pools.setdefault(nbytes, []).extend(tokens)
    return token
