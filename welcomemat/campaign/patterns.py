"""The campaign's human-written patterns: which `{slots}` a pattern uses, and whether it may.

A pattern is a Python format string restricted to plain `{name}` slots. Positional slots
(`{0}`, `{}`), attribute or index access (`{a.b}`, `{a[0]}`), conversions (`{a!r}`) and
format specs (`{a:>70}`) are refused: they could reach into Python objects or reshape a
researched value into something nobody wrote. A literal brace is written `{{` or `}}`.

One parser for the campaign loader (which refuses a bad pattern at load) and the offline
composer (which fills it), so what `welcomemat validate` accepts is exactly what gets filled.
"""

from __future__ import annotations

import difflib
import string
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from welcomemat.campaign.fact_types import FACT_TYPES, FactType, slots_for

__all__ = [
    "PatternShape",
    "parse_pattern",
    "pattern_problems",
    "unknown_fact_type_problem",
]

_FORMATTER = string.Formatter()


@dataclass(frozen=True)
class PatternShape:
    """The slots a pattern uses, and the slot it opens with (None when it opens with text)."""

    slots: frozenset[str]
    opening_slot: str | None


def _slot_problem(name: str, spec: str, conversion: str | None) -> str | None:
    shown = "{" + name + (f"!{conversion}" if conversion is not None else "") + (f":{spec}" if spec else "")
    shown += "}"
    if name == "" or name.isdigit():
        return f"positional slot {shown}: name the slot, e.g. {{account}}"
    if not name.isidentifier():
        if any(c in name for c in ".["):
            return f"slot {shown} reaches into a value: use a plain {{name}}"
        return f"slot {shown} is not a name (letters, digits and _, no spaces)"
    if conversion is not None:
        return f"slot {shown} has a conversion (!{conversion}): use a plain {{{name}}}"
    if spec:
        return f"slot {shown} has a format spec (:{spec}): use a plain {{{name}}}"
    return None


@lru_cache(maxsize=4096)
def parse_pattern(pattern: str) -> PatternShape:
    """The slots `pattern` uses. ValueError, saying what is wrong, for anything but plain `{name}` slots."""
    try:
        parsed = list(_FORMATTER.parse(pattern))
    except ValueError as exc:
        raise ValueError(f"not a pattern: {exc} (write a literal brace as {{{{ or }}}})") from None
    slots: set[str] = set()
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        problem = _slot_problem(name, spec or "", conversion)
        if problem is not None:
            raise ValueError(problem)
        slots.add(name)
    first = parsed[0] if parsed else ("", None, None, None)
    opening = first[1] if first[0] == "" else None
    return PatternShape(slots=frozenset(slots), opening_slot=opening)


def unknown_fact_type_problem(fact_type: str, registry: Mapping[str, FactType] = FACT_TYPES) -> str | None:
    """Why a pattern's fact type is refused, or None when the registry (the campaign's: built-in
    types and its own `fact_types`) knows it."""
    if fact_type in registry:
        return None
    close = difflib.get_close_matches(fact_type, sorted(registry), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return (
        f"no fact type {fact_type!r}: {hint}patterns are written for {', '.join(sorted(registry))}, "
        "or a type the campaign declares under fact_types"
    )


def pattern_problems(
    fact_type: str, pattern: str, registry: Mapping[str, FactType] = FACT_TYPES
) -> list[str]:
    """Every reason the pattern cannot be filled for a fact of `fact_type` (empty: it can)."""
    try:
        shape = parse_pattern(pattern)
    except ValueError as exc:
        return [str(exc)]
    known = slots_for(fact_type, registry)
    if known is None:
        return []  # the fact type itself is refused, once, by the caller
    problems = []
    for slot in sorted(shape.slots - known):
        close = difflib.get_close_matches(slot, sorted(known), n=1)
        if close:
            problems.append(f"no {fact_type} fact fills slot {{{slot}}}: did you mean {{{close[0]}}}?")
        else:
            listed = ", ".join("{" + s + "}" for s in sorted(known))
            problems.append(f"no {fact_type} fact fills slot {{{slot}}}; its slots: {listed}")
    return problems
