"""Which of a zone's patterns the offline composer fills, and why it passed over the others.

A zone may have several patterns, for several fact types. The composer tries them in one
documented order and uses the first that fits; `explain` shows which one it was and why each
one tried before it was skipped (`PatternChoice`, kept on the draft and in the explain record).

The order:

1. Fact types: a type not yet used on this page first, then the one whose best fact is
   newest, then `TYPE_PRIORITY` (funding, expansion, hiring, leadership, product_launch).
2. Within a type, its facts best first: hiring, the largest group of one role in one place
   (then the newest); any other type, the newest fact.
3. Within the zone's patterns for that type, starting at the one a stable hash of account
   and zone picks (accounts vary, one account never flickers between runs), in the
   campaign's order, wrapping around. The first pattern that
   - is readable (plain `{name}` slots),
   - has a trusted value for every slot,
   - agrees in number with the facts it would cite (below), and
   - fits the zone's word and character limits
   wins. The date phrase of `{when}` is `precompute.date_phrases`'.

Number agreement. A hiring zone cites a group of facts for one role in one place; its
patterns say how many by their slots:

    pattern                                      number    fills for
    "Hiring {role_count} {role_plural} ..."      plural    two or more facts ("two SDRs")
    "Hiring {role_count} {role_short} ..."       singular  exactly one fact ("one SDR")
    "Hiring a {role} ..." / "an {role}" / "one"  singular  exactly one fact
    "Teams hiring {role_plural} ..."             none      any number: the role in general

So a campaign that writes a singular and a plural variant gets the one that agrees, and
"Hiring one SDRs" or "Hiring a SDR" for four open roles is never published. A pattern with
`{role_count}` and no role slot ("{role_count} open roles") states no number the composer
can check: write the role slot beside the count.
"""

from __future__ import annotations

import string

from pydantic import BaseModel, ConfigDict

__all__ = ["PatternChoice", "SkippedPattern", "number_problem", "pattern_number"]

_FORMATTER = string.Formatter()
_SINGULAR_ROLES = frozenset({"role", "role_short"})
_PLURAL_ROLE = "role_plural"
_COUNT = "role_count"
# Words before a singular role slot that say "exactly one".
_ONE_WORDS = frozenset({"a", "an", "one"})


class SkippedPattern(BaseModel):
    """A pattern tried before the one used, and why it did not fit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fact_type: str
    index: int  # 1-based, in the campaign's list for the zone and type
    reason: str  # "slot {location} missing", "plural ({role_plural}) for one fact" ...


class PatternChoice(BaseModel):
    """The pattern a composed draft filled: its place in the campaign's list, and what it won over."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fact_type: str
    index: int  # 1-based, in the campaign's list for the zone and type
    of: int  # how many patterns that list has
    pattern: str
    skipped: tuple[SkippedPattern, ...] = ()
    when: str | None = None  # the `{when}` phrase and why it was chosen, when the pattern uses it


def pattern_number(pattern: str) -> str | None:
    """ "singular", "plural" or None (no number stated) for a hiring pattern (module docstring)."""
    try:
        parsed = list(_FORMATTER.parse(pattern))
    except ValueError:
        return None
    names = {name for _literal, name, _spec, _conv in parsed if name}
    if _COUNT in names and _PLURAL_ROLE in names:
        return "plural"
    if _COUNT in names and names & _SINGULAR_ROLES:
        return "singular"
    for literal, name, _spec, _conv in parsed:
        words = literal.split()
        if name in _SINGULAR_ROLES and words and words[-1].casefold() in _ONE_WORDS:
            return "singular"
    return None


def number_problem(pattern: str, facts: int) -> str | None:
    """Why `pattern` disagrees in number with a zone citing `facts` facts, or None when it agrees."""
    number = pattern_number(pattern)
    if number == "plural" and facts < 2:
        return "plural ({role_count} {role_plural}) for one fact"
    if number == "singular" and facts > 1:
        return f"singular for {facts} facts"
    return None
