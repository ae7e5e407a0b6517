"""Which companies a draft names: the run's other accounts, and any name with a legal form.

Why a module of its own: naming another account ("Globex") on Dymaxa's page leaks one
customer's research onto another's and is false about both, so `precompute.checks` fails it
(`other_company`). Telling a mention of another company from the account's own name, from
the campaign's own words ("Ramp", "Acme") and from an ordinary capitalised word is most of
that check; the check itself only turns the first name found into a failure.

A company is compared by its key (`company_key`): short name without legal form, folded
words. The run's names are indexed once per name set, by word count, so a draft is tested
with a few set lookups whatever the size of the run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple

from precompute.company_names import short_name
from precompute.specifics import UPPERCASE_CLASS, ApprovedVocabulary, analyse, fold, spaced_words

__all__ = ["company_key", "find_other_company"]

_COMPANY_KEY_CACHE_SIZE = 16_384  # one entry per company name: the account's own and the run's others


@lru_cache(maxsize=_COMPANY_KEY_CACHE_SIZE)
def company_key(name: str) -> str:
    """A company name as the checks compare it: short name (no legal form), folded words.

    "Dymaxa B.V." -> "dymaxa", "Globex GmbH & Co. KG" -> "globex".
    """
    return spaced_words(fold(short_name(name))).strip()


# Legal forms after one to four capitalised words ("Globex GmbH", "Initech, Inc."). Longer
# spellings first so that "S.A.S." is not read as "S.A." followed by junk.
_LEGAL_SUFFIX = r"""(GmbH|KGaA|KG|AG|BVBA|B\.[ ]?V\.?|BV|N\.[ ]?V\.?|NV|Inc\.?|Incorporated|L\.?L\.?C\.?
    |LLP|Ltd\.?|Limited|PLC|plc|S\.A\.S\.?|SAS|S\.A\.?|SA|SARL|S\.L\.U?\.?|S\.r\.l\.?|Srl|S\.p\.A\.?|SpA|Oyj|Oy|AB|ASA|A/S
    |ApS|Pty|Corp\.?|Corporation|Co\.|SE|Lda\.?)(?![\w/])"""
_LEGAL_NAME_RE = re.compile(
    rf"((?:[{UPPERCASE_CLASS}0-9][\w&'’.-]*[ \t]+){{0,3}}"
    rf"[{UPPERCASE_CLASS}0-9][\w&'’.-]*),?[ \t]+{_LEGAL_SUFFIX}",
    re.VERBOSE,
)
# The suffix alone, case-sensitive literals: a fast test before the name pattern.
_LEGAL_SUFFIX_RE = re.compile(_LEGAL_SUFFIX, re.VERBOSE)


class _CompanyIndex(NamedTuple):
    """The run's company names, normalised, by word count: keys to test, and keys -> names."""

    keys: Mapping[int, frozenset[str]]
    names: Mapping[str, str]


# id(name set) -> (the set, its index). Keyed by identity, not equality: comparing two
# frozensets of a run's names costs O(n) (no identity shortcut), paid on every lookup.
# Holding the set keeps its id from being reused while it is cached.
_COMPANY_INDEXES: dict[int, tuple[frozenset[str], _CompanyIndex]] = {}
_COMPANY_INDEXES_MAX = 8  # name sets alive at once: one per run, a few in tests


def _company_index(names: frozenset[str]) -> _CompanyIndex:
    """Built once per name set; looked up by identity after that."""
    cached = _COMPANY_INDEXES.get(id(names))
    if cached is not None and cached[0] is names:
        return cached[1]
    by_count: dict[int, set[str]] = {}
    shown: dict[str, str] = {}
    for name in sorted(names):  # sorted: the same name is shown for a key on every run
        key = company_key(name)
        if key:
            by_count.setdefault(key.count(" ") + 1, set()).add(key)
            shown.setdefault(key, name)
    index = _CompanyIndex(
        MappingProxyType({n: frozenset(by_count[n]) for n in sorted(by_count)}), MappingProxyType(shown)
    )
    if len(_COMPANY_INDEXES) >= _COMPANY_INDEXES_MAX:
        _COMPANY_INDEXES.clear()
    _COMPANY_INDEXES[id(names)] = (names, index)
    return index


def find_other_company(
    visible: str, own_names: tuple[str, ...], other_names: frozenset[str], vocabulary: ApprovedVocabulary
) -> str | None:
    """Another company `visible` names: one of `other_names` (as given), or a name with a legal form.

    `own_names`: the account's name and short name; never another company, and an account
    whose name contains them ("Acme Robotics" for "Acme") is not a mention of them.
    """
    spaced = analyse(visible).spaced
    own = {company_key(name) for name in own_names} - {""}
    for key in own:  # "Acme Robotics" must not count as a mention of another account "Acme"
        if f" {key} " in spaced:
            spaced = spaced.replace(f" {key} ", " | ")
    words = spaced.split()
    index = _company_index(other_names)
    for n, keys in index.keys.items():
        grams = words if n == 1 else [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]
        hits = keys.intersection(grams)  # iterates the draft's few words, not the run's names
        # A name made only of the campaign's own words ("Ramp", "Acme") cannot be told
        # apart from those words; the campaign's copy would fail everywhere.
        for gram in sorted(hits - own, key=grams.index):
            if not all(w in vocabulary.words for w in gram.split()):
                return index.names[gram]
    for m in _LEGAL_NAME_RE.finditer(visible) if _LEGAL_SUFFIX_RE.search(visible) else ():
        name_words = spaced_words(fold(m.group(1))).split()
        allowed = own | vocabulary.terms
        if not any(name_words[-(k.count(" ") + 1) :] == k.split() for k in allowed):
            return m.group(0)
    return None
