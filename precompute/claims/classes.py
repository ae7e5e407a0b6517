"""The catalog of prohibited claim classes a campaign may name.

A campaign forbids *kinds* of claim ("customer_status": never imply the account already
buys from us) rather than writing regexes, so every campaign gets the same tested
detection and a marketer never has to write a pattern. A class that is not in this
catalog cannot be detected, so a campaign that names one must be refused at load
(`KNOWN_CLAIM_CLASSES`) instead of running with a rule that silently checks nothing.

The patterns run on *folded* text (see `precompute.specifics`): casefolded, accents
stripped, curly quotes straightened, every dash a "-", whitespace collapsed to one space.
They are compiled at import: the checks run on every zone draft of every account.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["CLAIM_CLASSES", "KNOWN_CLAIM_CLASSES", "could_claim", "find_claim"]


def _patterns(*sources: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(s) for s in sources)


# Nouns that follow "your ... account" in ordinary sales language about the *reader's*
# team (an Account Executive, account-based marketing), which are not customer claims.
_NOT_CUSTOMER_ACCOUNT = (
    r"(?![- ](?:executives?|managers?|based|teams?|lists?|research|planning|plans?|mapping)\b)"
)

CLAIM_CLASSES: Mapping[str, tuple[re.Pattern[str], ...]] = MappingProxyType(
    {
        # Implying the account already buys from us: false for a prospect, and the fastest
        # way to lose their trust.
        "customer_status": _patterns(
            r"\bas (?:a |an |one of )?(?:our )?(?:valued|loyal|existing|current|trusted) "
            r"(?:customer|client|user|member)s?\b",
            r"\bas (?:our|a|an) (?:customer|client)s?\b",
            rf"\byour (?:[\w'-]+ ){{0,3}}?"
            rf"(?:account{_NOT_CUSTOMER_ACCOUNT}|subscription|renewal|licen[cs]e|invoice|billing)s?\b",
            r"\bthanks? (?:you )?for (?:choosing|being (?:a|an|our)\b|your (?:continued )?"
            r"(?:business|loyalty|purchase|order|subscription|support)\b)",
            r"\bsince you (?:already |first |started (?:to |using )?)?(?:use|used|using|bought|joined)\b",
            r"\byou(?:'re| are) (?:already )?(?:an? |our )(?:valued |existing |current |loyal )?"
            r"(?:customer|client|user)\b",
            r"\bwelcome back\b",
            r"\b(?:customers|clients) like you\b",
        ),
        # Implying a partnership that does not exist.
        "partnership": _patterns(
            r"\bour (?:(?:trusted|valued|official|strategic|close|preferred|long-time) )?"
            r"partner(?:s|ships?)?\b",
            r"\bin partnership with\b",
            r"\bproud(?:ly)? (?:to )?partner",
            r"\bpartnered with\b",
            r"\b(?:official|preferred|certified|exclusive) partners?\b",
        ),
        # Promising an outcome nobody can promise.
        "guaranteed_outcome": _patterns(
            r"\bguarantee(?:s|d|ing)?\b",
            r"\bpromis(?:e|es|ed|ing)\b",
            r"\b100 ?(?:%|percent|per cent) (?:success|results?|guaranteed|satisfaction|roi)\b",
            r"\brisk[- ]?free\b",
            r"\bno risk\b",
            r"\bmoney[- ]back\b",
        ),
    }
)

KNOWN_CLAIM_CLASSES: frozenset[str] = frozenset(CLAIM_CLASSES)

# Every pattern of a class needs one of these substrings to match, so a draft without any
# of them skips the class's regex (most drafts: the checks run on every zone of every
# account). Keep in step with the patterns; tests match an example of each pattern.
_TRIGGERS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "customer_status": (
            "custom", "client", "user", "member", "account", "subscri", "renewal", "licen",
            "invoice", "billing", "thank", "since", "welcome",
        ),
        "partnership": ("partner",),
        "guaranteed_outcome": ("guarant", "promis", "100", "risk", "money"),
    }
)  # fmt: skip

# One alternation per class: a check searches each class once instead of once per pattern.
_COMBINED: Mapping[str, re.Pattern[str]] = MappingProxyType(
    {name: re.compile("|".join(f"(?:{p.pattern})" for p in pats)) for name, pats in CLAIM_CLASSES.items()}
)
_TRIGGER_RES: Mapping[str, re.Pattern[str]] = MappingProxyType(
    {name: re.compile("|".join(map(re.escape, triggers))) for name, triggers in _TRIGGERS.items()}
)
_ANY_TRIGGER_RE = re.compile("|".join(re.escape(t) for triggers in _TRIGGERS.values() for t in triggers))


def could_claim(folded_text: str) -> bool:
    """False when no class of the catalog can match `folded_text`: one search instead of one per class."""
    return _ANY_TRIGGER_RE.search(folded_text) is not None


def find_claim(folded_text: str, claim_class: str) -> str | None:
    """The first phrase of `folded_text` that makes a claim of `claim_class`, or None.

    Raises KeyError for a class not in the catalog: an unknown class must never pass as
    "nothing found".
    """
    pattern = _COMBINED[claim_class]
    if _TRIGGER_RES[claim_class].search(folded_text) is None:
        return None
    match = pattern.search(folded_text)
    return match.group(0) if match is not None else None
