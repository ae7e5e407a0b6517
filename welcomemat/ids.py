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
    "OpaqueId",
    "is_valid_id",
]

# Letters, digits and `_ . -`, starting with a letter or digit, at most 64 characters.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_ID_RE = re.compile(ID_PATTERN)

OpaqueId = Annotated[str, StringConstraints(pattern=ID_PATTERN)]


def is_valid_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _ID_RE.fullmatch(value) is not None
