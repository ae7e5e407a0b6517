"""Claim patterns: the type every claim class's phrasings share, and the words they share.

A claim class (`welcomemat.reasons.ClaimReason`) is a tuple of `ClaimPattern`s: one
phrasing each, with what a cited fact's statement must say to back it. The phrasings live
by what they are about (`precompute.claims.about_reader`: the reader's words, a prior relationship,
being watched; `precompute.claims.about_account`: recency, achievements, plans, flattery) and are
searched together (`precompute.claims.catalog`).

Patterns read the words of one sentence (`precompute.claims.text`): folded, single spaces,
padded, `thisaccount` for the account's own name, `number` for "#", `percent` for "%". So
"You've" is `you ve`, "#1" is `number 1` and "Dymaxa's team" is `thisaccount s team`.
A pattern may say that a question makes no claim (`in_questions=False`: "Planning to double
the team?" asks), or that words earlier in its sentence make its match no claim
(`unless_before`: "if you plan to", "book a call today", "teams that recently raised").
Every pattern is compiled at import and starts at a word (`(?<= )`): the checks run on every
zone draft of every account.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from welcomemat.reasons import ClaimReason

__all__ = [
    "ACCOUNT_IS",
    "ACCOUNT_POSSESSIVE",
    "CALL_OR_FUTURE",
    "CONDITIONAL",
    "DAY",
    "EVENT_NOUNS",
    "GENERIC_RELATIVE_END",
    "GENERIC_SUBJECT_END",
    "JUST",
    "LAST_WEEK",
    "NEW_ROLE",
    "READER",
    "RECENT",
    "THIS_MONTH",
    "THIS_WEEK",
    "WORD",
    "WORD_START",
    "YESTERDAY",
    "ClaimHit",
    "ClaimPattern",
    "phrasings",
]

# Recency kinds (`ClaimPattern.kind` of UNSUPPORTED_RECENCY): the window each stands for is
# `precompute.facts.recency`'s.
DAY, YESTERDAY, THIS_WEEK, LAST_WEEK, THIS_MONTH, JUST, RECENT, NEW_ROLE = (
    "day", "yesterday", "this_week", "last_week", "this_month", "just", "recent", "new_role",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ClaimPattern:
    """One phrasing of a claim class, and what a cited fact's statement must say to back it."""

    kind: str  # what it claims: "meeting", "award", "day" ... (recency: the window it needs)
    regex: re.Pattern[str]
    support: re.Pattern[str] | None = None  # searched in a cited fact's words; None: the class decides
    unless_before: re.Pattern[str] | None = None  # earlier in the sentence: then the match is no claim
    in_questions: bool = True  # False: a question with it asks, it does not claim


class ClaimHit(NamedTuple):
    """One claim found in a draft."""

    reason: ClaimReason
    pattern: ClaimPattern
    phrase: str  # the words matched, as folded
    action: str = ""  # intent: the verb or noun of the plan ("double", "expansion")


def phrasings(
    kind: str,
    *regexes: str,
    support: str | None = None,
    unless_before: str | None = None,
    in_questions: bool = True,
) -> tuple[ClaimPattern, ...]:
    """One `ClaimPattern` per regex, all of `kind`, sharing what backs them and when they claim nothing."""
    sup = re.compile(support) if support is not None else None
    unless = re.compile(unless_before) if unless_before is not None else None
    return tuple(ClaimPattern(kind, re.compile(WORD_START + r), sup, unless, in_questions) for r in regexes)


WORD_START = "(?<= )"  # every pattern starts at a word of the padded sentence
WORD = r"[^\W_]+"  # one word
# The reader, or the account (`thisaccount`), as the one who speaks, plans or is watched.
READER = (
    r"(?:you|your (?:team|company|ceo|founders?|cro|cmo|cto|vp|leadership|people|colleagues|folks"
    r"|sales team|marketing team|head of \w+)|thisaccount(?: s (?:team|ceo|founders?|cro|cmo|cto"
    r"|leadership|people|head of \w+))?|the thisaccount team)"
)
ACCOUNT_POSSESSIVE = r"(?:your|thisaccount s|its|their)"
ACCOUNT_IS = r"(?:you re|you are|thisaccount is|thisaccount s|they re|they are|your team is|your team s)"
EVENT_NOUNS = (
    r"(?:news|announcement|round|raise|funding|launch|release|opening|hire|hires|appointment|deal"
    r"|acquisition|ipo|milestone|event|series|press release|post|promotion|move|expansion)"
)
# Earlier in a sentence, these make "today" or "this week" a call to action or a plan, not news.
CALL_OR_FUTURE = (
    r"\b(?:will|ll|can|could|would|should|might|may|let s|lets|start|starting|book|booking|get|try"
    r"|talk|join|call|schedule|request|download|sign|begin|grab|claim|see|ramp|reach|register|pick"
    r"|choose|need|needs|by|until|before|from|as of|still|only|even)\b"
)
CONDITIONAL = r"\b(?:if|whether|unless|when|whenever|once|in case|what|whatever|everything|anything|how)\b"
# Generic subjects just before a verb: "teams that plan to", "that's about to change", "we plan to".
# Just before a verb, a relative clause about people in general: "teams that recently raised".
GENERIC_RELATIVE_END = (
    r"\b(?:teams|companies|startups|firms|sellers|reps|sdrs|aes|hires|people|leaders|founders|managers"
    r"|employees|businesses|organi[sz]ations|customers|anyone|everyone|those|orgs|someone) (?:that|who|which)"
    r"(?: have| has| ve)? $"
)
GENERIC_SUBJECT_END = (
    r"\b(?:that|this|it|things|everything|what|which|who|anyone|everyone|teams|companies|startups"
    r"|reps|sellers|hires|people|leaders|founders|onboarding|ramp|we|i|our team) $"
)
