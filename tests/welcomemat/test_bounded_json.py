"""The one bounded JSON decoder: what it accepts is what `json.loads` gives; what it refuses
is an `InputError` naming the field, decided before the document can cost anything."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from welcomemat.bounded_json import decode_json, iter_lines
from welcomemat.errors import InputError
from welcomemat.limits import NESTING_MAX_DEPTH, NUMBER_MAX_CHARS

LIMIT = 1_000_000


def refusal(raw: bytes | str, max_bytes: int = LIMIT) -> InputError:
    with pytest.raises(InputError) as caught:
        decode_json(raw, max_bytes=max_bytes)
    return caught.value


@pytest.mark.parametrize(
    "value",
    [
        {"account_id": "a1", "tier": 1, "score": -0.25, "ok": True, "none": None, "list": [1, "two", [3]]},
        [],
        "plain",
        12,
        {"emoji": "\U0001f600 from a pair: \ud83d\ude00", "nul": "\x00", "brackets": "[[[[{{{{" * 20},
        {"big": 10**38, "neg": -(10**38), "small": 1e-300, "exp": 1.5e300},
    ],
)
def test_what_it_accepts_is_what_json_loads_gives(value: Any) -> None:
    text = json.dumps(value)
    assert decode_json(text, max_bytes=LIMIT) == json.loads(text)
    assert decode_json(text.encode(), max_bytes=LIMIT) == json.loads(text)


def test_nesting_up_to_the_limit_is_accepted_one_more_is_refused_before_parsing() -> None:
    at_limit = "[" * NESTING_MAX_DEPTH + "]" * NESTING_MAX_DEPTH
    assert decode_json(at_limit, max_bytes=LIMIT) is not None
    for deep in (
        "[" * (NESTING_MAX_DEPTH + 1) + "]" * (NESTING_MAX_DEPTH + 1),
        "[" * 500_000,
        '{"a":' * 100_000,
    ):
        assert f"deeper than {NESTING_MAX_DEPTH} levels" in refusal(deep).message
    # Siblings are not depth: a thousand arrays side by side nest one level.
    assert len(decode_json("[" + ",".join(["[]"] * 1000) + "]", max_bytes=LIMIT)) == 1000


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ('{"n": ' + "1" * 5000 + "}", "n", "5000 digits"),
        ('{"n": -' + "9" * (NUMBER_MAX_CHARS + 1) + "}", "n", f"{NUMBER_MAX_CHARS + 1} digits"),
        ('{"a": [0, 1.' + "5" * 100 + "]}", "a.1", "characters"),
        ('{"a": {"b": 1e999}}', "a.b", "out of range"),
        ('{"a": -1e400}', "a", "out of range"),
        ('{"a": NaN}', "a", "NaN is not a number"),
        ('{"a": [Infinity]}', "a.0", "Infinity is not a number"),
        ('{"a": -Infinity}', "a", "-Infinity is not a number"),
        ('{"a": 1, "b": {"c": 1, "c": 2}}', "b.c", "duplicate key 'c'"),
        ('{"a": "\\ud800"}', "a", "lone surrogate"),
        ('{"\\udfff": 1}', "\\udfff", "lone surrogate"),  # a key shown escaped
        ('{"\\u001b[2J": 1, "\\u001b[2J": 2}', "\\x1b[2J", "duplicate key '\\x1b[2J'"),
        ('["ok", "\\ud83d x"]', "1", "lone surrogate"),
    ],
)
def test_each_refusal_names_the_field(text: str, field: str | None, words: str) -> None:
    error = refusal(text)
    assert error.field == field
    assert words in error.message


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b'{"a": "\xff"}', "not UTF-8 (byte 8"),
        (b'{"a": "x\x01y"}', "not valid JSON (Invalid control character"),
        (b"{not json", "not valid JSON"),
        (b"", "not valid JSON"),
        ("\ufeff{}", "not valid JSON"),
        (b'{"a": 1} trailing', "not valid JSON (Extra data"),
        (b'"' + b"x" * 2000, "longer than 1024 bytes"),
        ("\u00e9" * 600, "longer than 1024 bytes"),  # 600 characters, 1,200 bytes
    ],
)
def test_malformed_and_oversized_documents_are_refused(raw: bytes | str, words: str) -> None:
    assert words in refusal(raw, max_bytes=1024).message


class CountingReader(io.BytesIO):
    """A file that remembers the most bytes one read returned."""

    largest = 0

    def readline(self, size: int | None = -1) -> bytes:
        line = super().readline(size)
        self.largest = max(self.largest, len(line))
        return line


def test_lines_over_the_limit_are_skipped_without_being_read_whole() -> None:
    handle = CountingReader(b"first\n" + b"x" * 5_000_000 + b"\nthird\r\n\nlast")
    assert list(iter_lines(handle, 100)) == [
        (1, b"first"),
        (2, None),
        (3, b"third\r"),
        (4, b""),
        (5, b"last"),
    ]
    assert handle.largest <= 65_536


def test_a_file_that_is_one_endless_line() -> None:
    handle = CountingReader(b"{" * 3_000_000)
    assert list(iter_lines(handle, 1000)) == [(1, None)]
    assert handle.largest <= 65_536
