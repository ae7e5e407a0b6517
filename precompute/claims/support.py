"""Whether a draft's cited facts back the claims it makes, class by class.

`precompute.claims.catalog` finds the claims; this decides, for one class at a time, whether
the facts the draft cites back each of them (the first that none backs fails the class's
check in `precompute.checks`). Only cited facts count: a fact the draft did not cite is not
what the reader is told the line rests on. A fact is read by its statement and structured
fields (`round`, `activity`, `medium`...), folded into words as drafts are; its evidence,
the source's own words (press-release puffery included), backs nothing here.

    invented_quote            a cited fact of a type that backs quotes (`quote`); a medium the
                              line names ("your podcast") must be one that fact names
    unsupported_recency       a cited fact whose date makes the word true on `as_of` and on every
                              day the zone may be served (`precompute.facts.recency`); "new role" only
                              a fact of a type that backs role changes (`leadership`)
    unsupported_achievement   a cited fact whose words match the phrasing's `support`
    unsupported_relationship  a cited fact of a type that backs relationships (`crm_activity`)
                              whose words match the phrasing's `support`
    unsupported_intent        a cited fact that states the plan: an intent word ("plans",
                              "will", "to ...") and the plan's own verb, or a type that states it
                              (a `hiring` fact: "looking to hire")
    tracking_disclosure       nothing: being watched is never welcome news
    flattery                  nothing
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date
from functools import lru_cache

from precompute.claims.about_reader import MEDIA_WORDS
from precompute.claims.catalog import find_claims
from precompute.claims.patterns import NEW_ROLE, ClaimHit
from precompute.companies import company_key
from precompute.context import GovernedContext, TrustedFact
from precompute.facts.recency import true_until
from precompute.specifics import fold, spaced_words
from welcomemat.campaign.fact_types import FACT_TYPES, QUOTE, RELATIONSHIP, ROLE_CHANGE, types_backing
from welcomemat.reasons import ClaimReason

__all__ = ["account_keys", "first_unsupported_claim", "makes_claim", "recency_valid_until"]

_FACT_CACHE_SIZE = 16_384  # one entry per fact: a fact backs every zone of its account
_QUOTE_TYPES = types_backing(QUOTE)
_RELATIONSHIP_TYPES = types_backing(RELATIONSHIP)
_ROLE_CHANGE_TYPES = types_backing(ROLE_CHANGE)
_INTENT_WORD_RE = re.compile(
    r"\b(?:plan|plans|planned|planning|aim|aims|aiming|intend|intends|intending|expect|expects|expected"
    r"|will|ll|set to|looking to|looks to|seek|seeks|seeking|prepare|prepares|preparing|upcoming|about to"
    r"|poised|target|targets|targeting|goal|ambition|to)\b"
)
_SUFFIXES = ("ing", "ed", "es", "s", "e")


def account_keys(context: GovernedContext) -> tuple[str, ...]:
    """The account's names as claim patterns read them (`thisaccount`): its name and short name."""
    return _account_keys(context.account.name, context.short_name)


@lru_cache(maxsize=_FACT_CACHE_SIZE)
def _account_keys(name: str, short: str) -> tuple[str, ...]:
    return tuple(sorted({k for k in (company_key(name), company_key(short)) if k}))


def makes_claim(reason: ClaimReason, text: str, keys: tuple[str, ...]) -> bool:
    """Whether `text` makes any claim of class `reason` (backed or not): most drafts make none."""
    return reason in _classes_in(text, keys)


@lru_cache(maxsize=_FACT_CACHE_SIZE)
def _classes_in(text: str, keys: tuple[str, ...]) -> frozenset[ClaimReason]:
    return frozenset(hit.reason for hit in find_claims(text, keys))


@lru_cache(maxsize=_FACT_CACHE_SIZE)
def _words_of(statement: str, fields: tuple[str, ...]) -> str:
    return " | ".join(spaced_words(fold(t)) for t in (statement, *fields))


def _fact_words(fact: TrustedFact) -> str:
    """A fact's statement and fields as padded folded words (what backs a claim)."""
    return _words_of(fact.statement, tuple(fact.fields.values()))


def _stem(word: str) -> str:
    """A rough stem that lets "hiring", "hired" and "hire" meet: a suffix off, at most five letters."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:5]


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _serving_until(cited: tuple[TrustedFact, ...], valid_until: date | None) -> date | None:
    """The first day the zone is no longer served: the draft's own end, else its facts' earliest."""
    if valid_until is not None:
        return valid_until
    return min((f.expires_at for f in cited), default=None)


def _backs_recency(hit: ClaimHit, fact: TrustedFact, as_of: date, serving_until: date | None) -> bool:
    if hit.pattern.kind == NEW_ROLE and fact.type not in _ROLE_CHANGE_TYPES:
        return False
    until = true_until(hit.pattern.kind, fact.published_at, as_of)
    return until is not None and serving_until is not None and serving_until <= until


def _backs_intent(action: str, fact: TrustedFact) -> bool:
    stem = _stem(action)
    known = FACT_TYPES.get(fact.type)
    if known is not None and stem in {_stem(i) for i in known.intents}:
        return True
    words = _fact_words(fact)
    return _INTENT_WORD_RE.search(words) is not None and any(_stem(w) == stem for w in words.split())


def _why_unsupported(
    hit: ClaimHit, cited: tuple[TrustedFact, ...], as_of: date, serving_until: date | None
) -> str | None:
    """Why no cited fact backs `hit`, or None when one does."""
    reason, support = hit.reason, hit.pattern.support
    if reason is ClaimReason.INVENTED_QUOTE:
        quotes = [f for f in cited if f.type in _QUOTE_TYPES]
        if not quotes:
            return "no cited quote fact"
        for medium in (_singular(w) for w in hit.phrase.split() if w in MEDIA_WORDS):
            if not any(f" {medium}" in _fact_words(f) for f in quotes):
                return f"no cited quote fact names a {medium}"
        return None
    if reason is ClaimReason.UNSUPPORTED_RECENCY:
        if any(_backs_recency(hit, f, as_of, serving_until) for f in cited):
            return None
        if hit.pattern.kind == NEW_ROLE and not any(f.type in _ROLE_CHANGE_TYPES for f in cited):
            return "no cited role change fact"
        return "no cited fact is that recent on every day it may be served"
    if reason is ClaimReason.UNSUPPORTED_ACHIEVEMENT:
        if support is not None and any(support.search(_fact_words(f)) for f in cited):
            return None
        return "no cited fact states it"
    if reason is ClaimReason.UNSUPPORTED_RELATIONSHIP:
        crm = [f for f in cited if f.type in _RELATIONSHIP_TYPES]
        if any(support is None or support.search(_fact_words(f)) for f in crm):
            return None
        return "no cited CRM fact states it"
    if reason is ClaimReason.UNSUPPORTED_INTENT:
        if hit.action and any(_backs_intent(hit.action, f) for f in cited):
            return None
        return "no cited fact states this plan"
    return "never allowed"  # tracking disclosure, flattery


def first_unsupported_claim(
    reason: ClaimReason,
    text: str,
    *,
    keys: tuple[str, ...],
    cited: tuple[TrustedFact, ...],
    as_of: date,
    valid_until: date | None,
) -> str | None:
    """The first claim of class `reason` in `text` that no cited fact backs, as "phrase (why)"; None if none.

    `keys`: `account_keys` of the account; `valid_until`: the draft's own end, if it has one.
    """
    serving_until = _serving_until(cited, valid_until)
    for hit in find_claims(text, keys):
        if hit.reason is not reason:
            continue
        why = _why_unsupported(hit, cited, as_of, serving_until)
        if why is not None:
            return f"{hit.phrase} ({why})"
    return None


def recency_valid_until(
    text: str, keys: tuple[str, ...], cited: Iterable[TrustedFact], as_of: date
) -> date | None:
    """The first day `text`'s time-relative words stop being true of its cited facts, or None.

    What a provider caps a draft's `valid_until` with, so that "this week" is served until
    Sunday and no longer. None when the text has no such word, or one no cited fact makes
    true today (the check then refuses the draft anyway).
    """
    facts = tuple(cited)
    end: date | None = None
    for hit in find_claims(text, keys):
        if hit.reason is not ClaimReason.UNSUPPORTED_RECENCY:
            continue
        untils = [
            until
            for f in facts
            if not (hit.pattern.kind == NEW_ROLE and f.type not in _ROLE_CHANGE_TYPES)
            and (until := true_until(hit.pattern.kind, f.published_at, as_of)) is not None
        ]
        if not untils:
            return None
        best = max(untils)
        end = best if end is None or best < end else end
    return end
