"""The token format's reference implementation, run from docs/reference/tokens.md itself: the
page's one Python block, written apart from the signer with the standard library's plainest
calls. Tests forge and read tokens with it, so the page stays exact and the signer is held to it."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, cast

from tests.corpora import REPO_ROOT

DOC = REPO_ROOT / "docs" / "reference" / "tokens.md"


def _page_code() -> dict[str, Any]:
    blocks = re.findall(r"^```python\n(.*?)^```$", DOC.read_text(encoding="utf-8"), flags=re.M | re.S)
    assert len(blocks) == 1, f"{DOC} should hold exactly one python block, not {len(blocks)}"
    namespace: dict[str, Any] = {"__name__": "tokens_md"}
    exec(compile(blocks[0], str(DOC), "exec"), namespace)
    return namespace


_CODE = _page_code()
sign_token = cast(Callable[[Any, str, str, bool], str], _CODE["sign_token"])
read_token = cast(Callable[[str, str, Sequence[str]], Any], _CODE["read_token"])
derive_key = cast(Callable[[str, str], bytes], _CODE["derive_key"])
signature = cast(Callable[[str, str, str], str], _CODE["signature"])


def salt(kind: str) -> str:
    """The salt of a token kind (`link`, `qr`, `cookie`, `view`, `click`; a TokenKind works)."""
    return f"welcomemat.{kind}"


def forge(payload: Any, *, kind: str = "link", key: str, compress: bool = True) -> str:
    """A correctly signed token around any JSON value, as if `key` had signed it: compressed
    when that pays unless `compress` is False (the earliest tokens were written so)."""
    return sign_token(payload, salt(kind), key, compress)


def seal(payload_part: str, *, kind: str = "link", key: str) -> str:
    """Any payload part, encoded or not, with the signature `key` gives it."""
    return f"{payload_part}.{signature(payload_part, salt(kind), key)}"


def read(token: str, *, kind: str = "link", keys: Sequence[str]) -> Any:
    """The payload of a token one of `keys` signed (ValueError if none did), unchecked."""
    return read_token(token, salt(kind), list(keys))
