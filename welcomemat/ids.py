"""Identifier rules shared by every boundary: input files, tokens, Redis keys, URLs.

Ids are opaque and short so they are safe inside Redis keys, URLs and tokens without
escaping. A value that fails here never reaches a key builder.
"""

from __future__ import annotations

import re
from typing import Annotated, TypeGuard

from pydantic import StringConstraints

__all__ = [
    "ID_PATTERN",
    "VIEW_ID_PATTERN",
    "OpaqueId",
    "is_valid_id",
    "is_view_id",
]

# Letters, digits and `_ . -`, starting with a letter or digit, at most 64 characters.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_ID_RE = re.compile(ID_PATTERN)

OpaqueId = Annotated[str, StringConstraints(pattern=ID_PATTERN)]

# A view id (`server.pages.new_view_id`, carried in view tokens): 1-64 URL-safe characters. It
# may start with `-` or `_` (random base64url), so it is not an opaque id, yet holds nothing a
# Redis key or glob could misread either.
VIEW_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
_VIEW_ID_RE = re.compile(VIEW_ID_PATTERN)


def is_valid_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _ID_RE.fullmatch(value) is not None


def is_view_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _VIEW_ID_RE.fullmatch(value) is not None
