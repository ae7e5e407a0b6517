"""Redis replies as text. Every client here is made with `decode_responses=False`, so a
reply is bytes; a few come back as str (Lua, pipelines of mixed commands, tests).

`reply_text` is for values we wrote and decode as data: anything else is a bug, raised.
`reply_text_lossy` is for what is only shown or matched (log lines, ids read from key
names, exports to people): it never raises.
"""

from __future__ import annotations

__all__ = ["reply_text", "reply_text_lossy"]


def reply_text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return value
    raise TypeError(f"unexpected Redis reply type {type(value).__name__}")


def reply_text_lossy(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
