"""Whether a zone's text says something specific of a fact it cites: personal means specific.

A line citing a fact is personal copy only when the reader could tell it was written about
that fact: it uses one of the fact's *specifics*. "Congrats on the Series A, Dymaxa" is
personal; "New funding usually means new sellers" cited with the same fact, a library proof
point, or a CTA label is segment copy whatever it cites (`precompute.assemble` publishes
it on the segment rung, reason `not_specific`). Checks decide whether a line is true; this
decides only whether it is specific, and it leans to "not specific": a miss costs a
personal label, never a false line.

A fact's specifics, each compared folded (case, accents, punctuation: `specifics.fold`):

* a value of its structured fields (round, role, role_plural, location, person,
  product ...), as a whole-word phrase ("Series A", "SDRs", "Amsterdam"; a value's plural
  with a trailing "s" too: "SDR" -> "SDRs"); a value made only of the account's name words
  (a `company` field) is not one;
* a number in its statement or its field values, compared by value ("four" = "4");
* a date: a weekday, month, quarter or ISO date its statement names or its publish date
  falls on ("on Thursday", "in November", "in Q4"), and "today" / "yesterday" / "tonight"
  when `as_of` is the publish date (or the day after, for "yesterday"); a bare year, "this
  month" and "recently" are not (they fit every fact of a season);
* a name its statement writes (a run of capitalised words, `specifics.find_specifics`),
  as the whole name ("Northzone", "Anna"), or a funding round as its phrase ("Series A",
  never the word "Series" alone), other than the account's own names and aliases.

Not specifics: the account's name (a line naming only the reader's company is the same
line for every account), the fact type's keyword ("funding", "hiring": "Congrats on the
funding" fits every funded account; the round is what makes it this one), the count of
cited facts ("four" from `{role_count}`: the role beside it is the specific), and anything
a line takes from the campaign's own copy.

Known limits, all towards "specific": a number or name of approved copy that happens to be
one of the fact's ("45" in "90 to 45 days" citing a fact about 45 hires) counts, and a field
value that is a common word counts (a `medium: post` field and "post").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date
from typing import NamedTuple

from precompute.context import TrustedFact
from precompute.specifics import Specific, analyse, find_specifics, fold, spaced_words

__all__ = ["SpecificUse", "specific_used"]

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = tuple(
    "january february march april may june july august september october november december".split()
)
# A relative day word and how many days before `as_of` the fact must be published for it.
_RELATIVE_DAYS = {"today": 0, "tonight": 0, "yesterday": 1}
# A round's first word: found as a name on its own ("Series" of "Series A"), never a specific alone.
_ROUND_WORD = ("series",)


class SpecificUse(NamedTuple):
    """The first specific of a cited fact a text uses: which fact, what kind, the value as the fact has it."""

    fact_id: str
    kind: str  # "field" | "number" | "date" | "name"
    value: str  # "round: Series A", "4", "thursday", "Northzone"


def specific_used(
    text: str,
    facts: Sequence[TrustedFact],
    *,
    account_names: Iterable[str] = (),
    as_of: date | None = None,
) -> SpecificUse | None:
    """The first specific of one of `facts` that `text` uses, or None: the line is not personal.

    `account_names`: the account's name, short name and aliases, never a specific.
    `as_of`: the day the text is written for, which "today" and "yesterday" are relative to
    (without it they are never specifics). Pure: the same arguments give the same answer.
    """
    if not facts:
        return None
    spaced = analyse(text).spaced
    found = find_specifics(text, personal=True)
    own = frozenset(w for name in account_names for w in spaced_words(fold(name)).split())
    for fact in facts:
        use = (
            _field_used(fact, spaced, own)
            or _number_used(fact, found)
            or _date_used(fact, found, as_of)
            or _name_used(fact, spaced, own)
        )
        if use is not None:
            return use
    return None


def _phrase(value: str) -> str:
    return spaced_words(fold(value)).strip()


def _field_used(fact: TrustedFact, spaced: str, own: frozenset[str]) -> SpecificUse | None:
    for key, value in fact.fields.items():
        phrase = _phrase(value)
        if not phrase or own.issuperset(phrase.split()):
            continue
        if f" {phrase} " in spaced or f" {phrase}s " in spaced:
            return SpecificUse(fact.id, "field", f"{key}: {value}")
    return None


def _fact_specifics(fact: TrustedFact) -> tuple[Specific, ...]:
    """The numbers, dates and names of the statement, then of each field value."""
    out = find_specifics(fact.statement, personal=True)
    for value in fact.fields.values():
        out += find_specifics(value, personal=True)
    return out


def _number_used(fact: TrustedFact, found: Sequence[Specific]) -> SpecificUse | None:
    numbers = [s for s in found if s.kind == "number" and not s.token]  # "B2B" is a word, not a number
    if not numbers:
        return None
    keys: set[str] = set()
    for spec in _fact_specifics(fact):
        if spec.kind == "number" and not spec.token:
            keys.update((spec.key, spec.currency + spec.key))
    for spec in numbers:
        if spec.currency + spec.key in keys:
            return SpecificUse(fact.id, "number", spec.key)
    return None


def _date_keys(fact: TrustedFact) -> set[str]:
    day = fact.published_at
    keys = {day.isoformat(), _WEEKDAYS[day.weekday()], _MONTHS[day.month - 1], f"q{(day.month - 1) // 3 + 1}"}
    keys.update(s.key for s in _fact_specifics(fact) if s.kind == "date" and s.key not in _RELATIVE_DAYS)
    return keys


def _date_used(fact: TrustedFact, found: Sequence[Specific], as_of: date | None) -> SpecificUse | None:
    dates = [s for s in found if s.kind == "date"]
    if not dates:
        return None
    keys = _date_keys(fact)
    for spec in dates:
        if spec.key in _RELATIVE_DAYS:
            if as_of is not None and (as_of - fact.published_at).days == _RELATIVE_DAYS[spec.key]:
                return SpecificUse(fact.id, "date", spec.key)
        elif spec.key in keys:
            return SpecificUse(fact.id, "date", spec.key)
    return None


def _name_used(fact: TrustedFact, spaced: str, own: frozenset[str]) -> SpecificUse | None:
    for spec in find_specifics(fact.statement, personal=True):
        if spec.kind != "name":
            continue
        if not spec.words:  # a funding round: its phrase
            phrase = spec.key
        elif spec.words == _ROUND_WORD or own.issuperset(spec.words):
            continue
        else:
            phrase = " ".join(spec.words)
        if f" {phrase} " in spaced:
            return SpecificUse(fact.id, "name", spec.text)
    return None
