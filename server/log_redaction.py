"""What a log line may say of a request's target: the path, with no query string and no token.

A visitor's `?wm=` link token, a QR token (`/q/…`), a click token (`/r/…`) and an admin invite
(`/admin/sign-in/…`) are credentials: whoever reads the log could replay them. uvicorn's access
log prints the full target by default, so a filter on its logger rewrites every line through
`redacted_target`, and the renderer's own log lines use the same function. One function, so the
list of secret-bearing routes lives in one place.
"""

from __future__ import annotations

import logging
from typing import Final
from urllib.parse import unquote

from welcomemat.security.people import INVITE_PATH

__all__ = ["REDACTED", "RedactTargets", "install_access_log_redaction", "redacted_target"]

REDACTED: Final = "[redacted]"
# Paths whose next segment is a token (the route tables in server/app.py and server/admin).
_TOKEN_PREFIXES: Final = ("/q/", "/r/", INVITE_PATH)
# uvicorn.access records carry (client, method, target, http version, status) as their args.
_ACCESS_TARGET_ARG = 2


def redacted_target(target: str) -> str:
    """`target` (a path, maybe with `?query`) with any query string and path token replaced."""
    path, question, _ = target.partition("?")
    # Matched as the router reads it: `/%71/TOKEN` is `/q/TOKEN` to Starlette, so it is to us.
    path = unquote(path)
    for prefix in _TOKEN_PREFIXES:
        if path.startswith(prefix) and len(path) > len(prefix):
            _, slash, rest = path[len(prefix) :].partition("/")
            path = prefix + REDACTED + (slash + rest if slash else "")
            break
    return path + ("?" + REDACTED if question else "")


class RedactTargets(logging.Filter):
    """Rewrites the target argument of uvicorn's access records; lets every record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        args, at = record.args, _ACCESS_TARGET_ARG
        if isinstance(args, tuple) and len(args) > at:
            target = args[at]
            if isinstance(target, str):
                record.args = (*args[:at], redacted_target(target), *args[at + 1 :])
        return True


def install_access_log_redaction() -> None:
    """Put the filter on uvicorn's access logger, once per process (each worker builds its app)."""
    logger = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactTargets) for f in logger.filters):
        logger.addFilter(RedactTargets())
