"""The one JSON decoder for documents from outside, bounded before and while it parses.

Every JSON input goes through `decode_json`: `accounts.jsonl` lines, beacons, conversions
(HTTP and `welcomemat conversions import`), the admin's decision body. The standard
library's decoder alone lets a document decide what it costs: a 5,000-digit integer raises
Python's `ValueError` (int max-str-digits), a thousand nested `[` a `RecursionError`, `NaN`
and `1e999` become floats no field can use, and a repeated key silently keeps the last
value. Here each is an `InputError` naming the field, checked in this order:

1. size (`max_bytes`) before anything else; then strict UTF-8;
2. nesting (`limits.NESTING_MAX_DEPTH`), counted on the text before the parser recurses;
3. while parsing: numbers of at most `limits.NUMBER_MAX_CHARS` characters, finite; no
   `NaN` / `Infinity`; no key repeated in an object;
4. no lone surrogate (`"\\ud800"`): it cannot be written out as UTF-8 (Redis, files).

`iter_lines` reads a JSON Lines file without ever holding more than one bounded line.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from itertools import accumulate
from typing import IO, Any

from welcomemat.errors import InputError
from welcomemat.limits import NESTING_MAX_DEPTH, NUMBER_MAX_CHARS
from welcomemat.validation_errors import dotted

__all__ = ["decode_json", "iter_lines"]

# A JSON string, escapes included (possessive: no backtracking on a long or unterminated one).
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# How much of a too-long line is skipped per read, in bytes.
_SKIP_CHUNK_BYTES = 65_536


class _Refused:
    """What a parse hook returns instead of a value it refuses; found with its path afterwards."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


class _RepeatedKey(dict[str, Any]):
    """An object that repeated `key`."""

    def __init__(self, pairs: list[tuple[str, Any]], key: str) -> None:
        super().__init__(pairs)
        self.key = key


def _shown(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:12]}…{text[-4:]}"


class _Hooks:
    """The parse hooks of one decode: a refused value becomes a `_Refused` placeholder, counted."""

    def __init__(self) -> None:
        self.refused = 0

    def refuse(self, message: str) -> _Refused:
        self.refused += 1
        return _Refused(message)

    def parse_int(self, text: str) -> int | _Refused:
        if len(text) > NUMBER_MAX_CHARS:
            digits = len(text.lstrip("-"))
            return self.refuse(
                f"number {_shown(text)} has {digits} digits; at most {NUMBER_MAX_CHARS} accepted"
            )
        return int(text)

    def parse_float(self, text: str) -> float | _Refused:
        if len(text) > NUMBER_MAX_CHARS:
            return self.refuse(
                f"number {_shown(text)} has {len(text)} characters; at most {NUMBER_MAX_CHARS} accepted"
            )
        value = float(text)
        if not math.isfinite(value):
            return self.refuse(f"number {text} is out of range")
        return value

    def parse_constant(self, name: str) -> _Refused:
        return self.refuse(f"{name} is not a number (JSON has no NaN or Infinity)")

    def object_pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        value = dict(pairs)
        if len(value) == len(pairs):
            return value
        self.refused += 1
        seen: set[str] = set()
        for key, _ in pairs:  # pragma: no branch - a key repeats
            if key in seen:
                return _RepeatedKey(pairs, key)
            seen.add(key)
        return value  # pragma: no cover


def _depth(text: str) -> int:
    """How deep `[` and `{` nest outside strings (an upper bound when the JSON is malformed)."""
    if text.count("[") + text.count("{") <= NESTING_MAX_DEPTH:
        return 0  # cannot be deeper than the limit: no need to look
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _first_refusal(value: Any, path: tuple[int | str, ...]) -> tuple[tuple[int | str, ...], str] | None:
    """The first refused value in document order, with its field path (depth is bounded first)."""
    if isinstance(value, _Refused):
        return path, value.message
    if isinstance(value, str) and _SURROGATE.search(value):
        return path, "a lone surrogate escape (\\ud800-\\udfff) is not a character"
    if isinstance(value, _RepeatedKey):
        return (*path, value.key), f"duplicate key {value.key!r}: an object names each key once"
    if isinstance(value, dict):
        for key, item in value.items():
            if _SURROGATE.search(key):
                return (*path, key), "a lone surrogate escape (\\ud800-\\udfff) is not a character"
            found = _first_refusal(item, (*path, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _first_refusal(item, (*path, i))
            if found is not None:
                return found
    return None


def decode_json(raw: bytes | str, *, max_bytes: int) -> Any:
    """A JSON document within the limits, or `InputError` (its `field` the path of the bad value)."""
    if len(raw) > max_bytes or (
        isinstance(raw, str) and not raw.isascii() and len(raw.encode("utf-8", "surrogatepass")) > max_bytes
    ):
        raise InputError(f"longer than {max_bytes} bytes")
    if isinstance(raw, str):
        text = raw
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 (byte {exc.start + 1}: {exc.reason})") from None
    if _depth(text) > NESTING_MAX_DEPTH:
        raise InputError(f"not accepted: arrays and objects nested deeper than {NESTING_MAX_DEPTH} levels")
    hooks = _Hooks()
    decoder = json.JSONDecoder(
        object_pairs_hook=hooks.object_pairs,
        parse_int=hooks.parse_int,
        parse_float=hooks.parse_float,
        parse_constant=hooks.parse_constant,
    )
    try:
        value = decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    # The walk that finds the bad value's field runs only when there may be one.
    if hooks.refused or _SURROGATE_ESCAPE.search(text):
        found = _first_refusal(value, ())
        if found is not None:
            path, message = found
            raise InputError(message, field=dotted(path))
    return value


def iter_lines(handle: IO[bytes], max_bytes: int) -> Iterator[tuple[int, bytes | None]]:
    """Each line (`\\n` ends it, and is dropped) with its 1-based number; `None` for a line over
    `max_bytes`, whose rest is skipped in small reads: a file with no newline is never held whole."""
    number = 0
    while True:
        line = handle.readline(max_bytes + 1)
        if not line:
            return
        number += 1
        if line.endswith(b"\n"):
            yield number, line[:-1]
            continue
        if len(line) <= max_bytes:  # the last line, without a newline
            yield number, line
            return
        while True:
            rest = handle.readline(_SKIP_CHUNK_BYTES)
            if not rest or rest.endswith(b"\n"):
                break
        yield number, None
