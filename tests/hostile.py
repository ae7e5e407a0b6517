"""Hypothesis strategies for hostile documents: what an attacker or a broken export sends.

JSON (text or bytes) and YAML, whole or as one value in an otherwise valid document: deep
nesting, numbers past any limit, NaN and Infinity, repeated keys, invalid UTF-8, raw control
characters, lone surrogates, giant strings, alias bombs and cycles, odd tags, and the strings
of the external corpora (XSS, open-redirect, WPT URL inputs) as values and keys.
"""

from __future__ import annotations

import json
from functools import cache

from hypothesis import strategies as st

from tests.corpora import corpus_lines, corpus_path

__all__ = [
    "corpus_strings",
    "hostile_bytes",
    "hostile_json",
    "hostile_json_value",
    "hostile_yaml_value",
    "json_with_hostile_field",
    "yaml_with_hostile_value",
]

# Sizes that matter: small, around the limits (1 KB, 4 KB, 1 MB), past them.
_SIZES = st.sampled_from([1, 3, 33, 41, 500, 1000, 1025, 4097, 5000, 70_000])
_DEPTHS = st.sampled_from([2, 31, 32, 33, 100, 999, 1000, 5000, 50_000])


@cache
def _corpus() -> tuple[str, ...]:
    lines = [
        *corpus_lines("xss/XSS_Polyglots.txt"),
        *corpus_lines("xss/RSNAKE_XSS.txt"),
        *corpus_lines("xss/IntrudersXSS.txt"),
        *corpus_lines("open-redirect/Open-Redirect-payloads.txt"),
    ]
    # WPT's URL inputs hold lone surrogates, NULs and every kind of whitespace.
    data = json.loads(corpus_path("wpt-url/urltestdata.json").read_text(encoding="utf-8"))
    lines += [entry["input"] for entry in data if isinstance(entry, dict)]
    return tuple(lines)


def corpus_strings() -> st.SearchStrategy[str]:
    return st.sampled_from(_corpus())


def _number_text() -> st.SearchStrategy[str]:
    digits = _SIZES.map(lambda n: "9" * n)
    return st.one_of(
        digits,
        digits.map(lambda d: "-" + d),
        digits.map(lambda d: "1." + d),
        digits.map(lambda d: "1" + d[:3] + "e" + d[:4]),
        st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e400", "1.7976931348623159e308"]),
        st.sampled_from(["0", "-0", "1.0", "1e-400", "4300", "10000000000000000000000"]),
        st.integers().map(str),
        st.floats(allow_nan=False, allow_infinity=False).map(repr),
    )


def _string_text() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=40).map(json.dumps),
        corpus_strings().map(json.dumps),
        corpus_strings().map(lambda s: json.dumps(s, ensure_ascii=False)),
        _SIZES.map(lambda n: json.dumps("x" * n)),
        st.sampled_from(['"\\ud800"', '"\\udfff x"', '"\\ud83d\\ude00"', '"\\u0000"', '"\\u001b[2J"']),
        st.integers(0, 31).map(lambda c: f'"a{chr(c)}b"'),  # a raw control character
    )


def _atom() -> st.SearchStrategy[str]:
    return st.one_of(_number_text(), _string_text(), st.sampled_from(["true", "false", "null", "[]", "{}"]))


_KEYS = st.one_of(st.sampled_from(['"a"', '"b"', '"version"', '"type"']), _string_text())


def _compound(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    pairs = st.lists(st.tuples(_KEYS, children), max_size=5)
    return st.one_of(
        st.lists(children, max_size=5).map(lambda xs: "[" + ",".join(xs) + "]"),
        pairs.map(lambda ps: "{" + ",".join(f"{k}:{v}" for k, v in ps) + "}"),
        st.tuples(_DEPTHS, children).map(lambda d: "[" * d[0] + d[1] + "]" * d[0]),
        st.tuples(_DEPTHS, children).map(lambda d: '{"a":' * d[0] + d[1] + "}" * d[0]),
    )


def hostile_json_value() -> st.SearchStrategy[str]:
    """One JSON value as text, valid or not, hostile in any of the ways above."""
    return st.recursive(_atom(), _compound, max_leaves=8)


def hostile_json() -> st.SearchStrategy[str]:
    """A whole document: a hostile value, unbalanced or truncated at times."""
    value = hostile_json_value()
    return st.one_of(
        value,
        _DEPTHS.map(lambda n: "[" * n),
        st.tuples(value, st.integers(0, 50)).map(lambda v: v[0][: v[1]]),
        st.text(max_size=60),
    )


def hostile_bytes(text: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    """`text` as UTF-8 (surrogates passed through), or with invalid bytes, a BOM, or random bytes."""
    encoded = text.map(lambda t: t.encode("utf-8", "surrogatepass"))
    return st.one_of(
        encoded,
        st.tuples(
            encoded, st.integers(0, 40), st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"])
        ).map(lambda t: t[0][: t[1]] + t[2] + t[0][t[1] :]),
        encoded.map(lambda b: b"\xef\xbb\xbf" + b),
        st.binary(max_size=200),
    )


def json_with_hostile_field(document: dict[str, object]) -> st.SearchStrategy[str]:
    """`document` as JSON with one field's value (or a repeated or new key) replaced by a hostile value."""
    keys = sorted(document)
    replaced = st.tuples(st.sampled_from(keys), hostile_json_value()).map(
        lambda kv: json.dumps({**document, kv[0]: "\0MARK\0"}).replace('"\\u0000MARK\\u0000"', kv[1])
    )
    repeated = st.tuples(st.sampled_from(keys), hostile_json_value()).map(
        lambda kv: json.dumps(document)[:-1] + f', "{kv[0]}": {kv[1]}}}'
    )
    added = st.tuples(_string_text(), hostile_json_value()).map(
        lambda kv: json.dumps(document)[:-1] + f", {kv[0]}: {kv[1]}}}"
    )
    return st.one_of(replaced, repeated, added)


def _alias_bomb(levels: int) -> str:
    parts = ["&l0 [x, x, x, x, x, x, x, x, x, x]"]
    parts += [f"&l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


def hostile_yaml_value() -> st.SearchStrategy[str]:
    """One YAML value as flow-style text, to follow `key: ` on a line of its own."""
    digits = _SIZES.map(lambda n: "9" * n)
    return st.one_of(
        digits.map(lambda d: "1" + d),
        digits.map(lambda d: "-0x" + d),
        digits.map(lambda d: "0b1" + "0" * len(d)),
        digits.map(lambda d: "1:" + d),
        digits.map(lambda d: "1." + d),
        digits.map(lambda d: "1.0e+" + d),
        st.sampled_from([".nan", ".NaN", ".inf", "-.Inf", "1.0e+999", "0.1", "-1", "1_000"]),
        st.sampled_from(["2024-13-45", "2024-02-30 10:00:00", "0000-01-01", "9999-12-31T23:59:60Z"]),
        _DEPTHS.map(lambda n: "[" * n + "]" * n),
        _DEPTHS.map(lambda n: "{a: " * n + "1" + "}" * n),
        _DEPTHS.map(lambda n: "[" * n),
        st.integers(2, 7).map(_alias_bomb),
        st.sampled_from(["&a [*a]", "&a {b: *a}", "*nowhere", "{<<: 1}", "{<<: [*nowhere]}", "{a: 1, a: 2}"]),
        st.sampled_from(
            [
                "!!python/object/apply:os.system ['true']",
                "!!binary '###'",
                "!!int 'abc'",
                "!!float 'x'",
                "!!timestamp 'never'",
                "!!set {a, b}",
                "!!omap [a: 1, a: 2]",
                "!custom x",
                "? [a]",
            ]
        ),
        st.sampled_from(['"\\ud800"', '"\\udfff x"', '"\\e[2J"', '"\\0"', '"\\x1b]0;title\\x07"']),
        corpus_strings().map(json.dumps),
        _SIZES.map(lambda n: "'" + "x" * n + "'"),
        st.integers(0, 31).map(lambda c: f"a{chr(c)}b"),
        st.text(max_size=30),
    )


def yaml_with_hostile_value(text: str) -> st.SearchStrategy[bytes]:
    """A YAML file (`text`) with one `key: value` line's value replaced, or a line added at the
    top, or broken bytes put in it."""
    lines = text.splitlines()
    candidates = [i for i, line in enumerate(lines) if ": " in line and not line.lstrip().startswith("#")]

    def replace(choice: tuple[int, str]) -> str:
        i, value = choice
        key = lines[i].split(": ", 1)[0]
        return "\n".join([*lines[:i], f"{key}: {value}", *lines[i + 1 :]]) + "\n"

    top_keys = sorted({line.split(":", 1)[0] for line in lines if line[:1].isalpha() and ":" in line})
    edit: st.SearchStrategy[str] = st.one_of(
        st.tuples(st.sampled_from(candidates), hostile_yaml_value()).map(replace),
        st.tuples(st.sampled_from(top_keys), hostile_yaml_value()).map(
            lambda kv: f"{kv[0]}: {kv[1]}\n" + text
        ),
    )

    def corrupt(t: tuple[str, int, bytes]) -> bytes:
        raw = t[0].encode("utf-8", "surrogatepass")
        return raw[: t[1]] + t[2] + raw[t[1] :]

    return st.one_of(
        edit.map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.tuples(edit, st.integers(0, len(text)), st.sampled_from([b"\xff", b"\x00", b"\t", b"\r"])).map(
            corrupt
        ),
    )
