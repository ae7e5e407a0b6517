"""Company names as people write them, reduced to what tells one company from another.

A research table, a CRM and a press release name one company three ways: "Dymaxa B.V.",
"DYMAXA", "Dymaxá BV". The legal form, case, accents, punctuation, a possessive and `&`
(or "and") say nothing about *which* company it is; every other word does ("Apex Cold
Storage Solutions Inc" is not "Apex Cold Storage Ltd"). So a name is compared by its
*key*: the tuple of its remaining folded words, with initials joined ("A.P." and "AP"
are one word).

Everything here is pure and never raises: names come from files nobody on the team wrote.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = [
    "LEGAL_SUFFIXES",
    "NameKey",
    "is_legal_form",
    "name_key",
    "names_match",
    "plain",
    "short_name",
    "word_key",
]

# Legal forms dropped from the end of a company name, as people write them. They are
# compared "squashed" (casefolded, without dots, commas and spaces), so "B.V.", "BV",
# "b. v." and "B.V" are one entry.
LEGAL_SUFFIXES: tuple[str, ...] = (
    "A/S",
    "AB",
    "AG",
    "ApS",
    "BV",
    "BVBA",
    "Co.",
    "Corp.",
    "Corporation",
    "GmbH",
    "Inc.",
    "Incorporated",
    "KG",
    "KGaA",
    "Lda.",
    "Limited",
    "LLC",
    "LLP",
    "Ltd.",
    "NV",
    "Oy",
    "Oyj",
    "plc",
    "Pty",
    "Pty Ltd",
    "S.A.",
    "S.A.S.",
    "S.L.",
    "S.L.U.",
    "S.p.A.",
    "S.r.l.",
    "SARL",
    "SE",
    "sp. z o.o.",
)

NameKey = tuple[str, ...]  # a name's distinctive words, folded: ("frostline", "logistics")


def _squash(text: str) -> str:
    return text.casefold().replace(".", "").replace(",", "").replace(" ", "")


_SUFFIX_KEYS = frozenset(_squash(s) for s in LEGAL_SUFFIXES)
_MAX_SUFFIX_TOKENS = 4  # "Sp. z o. o." is the longest way to write one
_TOKEN_RE = re.compile(r"[^\s,]+")
_TRAILING_JUNK = " \t,&-–"  # left behind by "Foo, Inc." or "Foo GmbH & Co. KG"
# Letters with a stroke or without a dot, which NFKD does not split into base + accent but
# people write without it all the same ("Orsted" for "Ørsted", "Lodz" for "Łódź").
_UNDECOMPOSED = str.maketrans(
    {"ı": "i", "ø": "o", "ł": "l", "đ": "d", "ħ": "h", "ŧ": "t", "æ": "ae", "œ": "oe"}
)
_APOSTROPHES = "'’‘`´"
_POSSESSIVE_RE = re.compile(rf"[{_APOSTROPHES}]s?$|[{_APOSTROPHES}]s(?=\W)")
_INNER_MARKS_RE = re.compile(rf"[.{_APOSTROPHES}]")  # "A.P." -> "AP", "O'Neil" -> "ONeil"
_NON_WORD_RE = re.compile(r"[\W_]+")
_CONNECTORS = frozenset({"and"})  # "&" spelled out: not a distinctive word
_NAME_SPLIT_RE = re.compile(r"[\s,/&+–—-]+")  # what separates the words of a name
_NAME_CACHE_SIZE = 16_384  # subjects and names recur (one per fact, many facts per name)


def is_legal_form(token: str) -> bool:
    """Whether `token` alone is a legal form ("Inc.", "bv", "GmbH")."""
    return _squash(token) in _SUFFIX_KEYS


def short_name(name: str) -> str:
    """The name without trailing legal forms: "Dymaxa B.V." -> "Dymaxa", "Foo GmbH & Co. KG" -> "Foo".

    Never returns an empty string for a non-empty name: a name that is only a legal form
    ("AG") is kept as it is. Never raises.
    """
    current = name.strip()
    while True:
        trimmed = current.rstrip(_TRAILING_JUNK)
        if not trimmed:
            return current
        cut = _suffix_start(trimmed)
        if cut is None:
            return trimmed
        current = trimmed[:cut]


def _suffix_start(name: str) -> int | None:
    """Where a trailing legal form starts in ``name``, if one does and a word stays before it."""
    tokens = list(_TOKEN_RE.finditer(name))
    for count in range(min(_MAX_SUFFIX_TOKENS, len(tokens) - 1), 0, -1):
        start = tokens[-count].start()
        if _squash(name[start:]) in _SUFFIX_KEYS:
            return start
    return None


def plain(text: str) -> str:
    """Casefolded, accents removed ("Dymaxá" -> "dymaxa", "Ørsted" -> "orsted")."""
    folded = text.casefold()
    if folded.isascii():
        return folded
    decomposed = unicodedata.normalize("NFKD", folded).translate(_UNDECOMPOSED)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def word_key(token: str) -> str:
    """One written word as names compare it: folded, possessive, dots and apostrophes gone.

    "Dymaxa's" -> "dymaxa", "A.P." -> "ap", "O'Neil" -> "oneil"; "" for a connector
    ("&", "and") or for punctuation alone.
    """
    folded = plain(_POSSESSIVE_RE.sub("", token.strip()))
    word = _NON_WORD_RE.sub("", _INNER_MARKS_RE.sub("", folded))
    return "" if word in _CONNECTORS else word


def _join_initials(words: list[str]) -> NameKey:
    """Single letters in a row are one word: "a p moller" -> ("ap", "moller")."""
    out: list[str] = []
    run = ""
    for word in words:
        if len(word) == 1 and word.isalpha():
            run += word
            continue
        if run:
            out.append(run)
            run = ""
        out.append(word)
    if run:
        out.append(run)
    return tuple(out)


@lru_cache(maxsize=_NAME_CACHE_SIZE)
def name_key(name: str) -> NameKey:
    """A company name's distinctive words: legal form, case, accents, punctuation, `&` aside.

    "Frostline Logistics B.V." -> ("frostline", "logistics"); "Smith & Sons Ltd" and
    "Smith and Sons" -> ("smith", "sons"); "A.P. Møller - Mærsk" -> ("ap", "moller", "maersk").
    """
    short = short_name(name)
    words = (word_key(part) for part in _NAME_SPLIT_RE.split(short))
    return _join_initials([w for w in words if w])


def names_match(a: str, b: str) -> bool:
    """Whether two company names name the same company, legal form, case, accents and punctuation aside.

    Two names that reduce to nothing never match. Never raises.
    """
    key = name_key(a)
    return bool(key) and key == name_key(b)
