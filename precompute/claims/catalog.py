"""The claim classes the checks refuse, and finding every claim a draft makes.

A model (or a hurried pattern) writes the lines a reader knows at once to be made up:
"Loved your recent post about ramp", "Congrats on your new role", "award-winning", "Great
to work with the Dymaxa team again", "plans to double its sales team", "we saw you on our
pricing page", "amazing work". Each class is a reason code (`welcomemat.reasons.ClaimReason`)
and the tuple of its phrasings (`precompute.claims.about_reader`, `precompute.claims.about_account`);
`precompute.claims.support` decides whether a draft's cited facts back what was found.
Banned openers, the eighth class, are phrases rather than patterns (`welcomemat.campaign.openers`,
checked with the banned phrases).

Why phrasings and not a model: the same line always gets the same answer, a marketer can
read why a line was refused, and every phrasing is tested both ways (tests/precompute/
claim_lines/). When a phrasing is in doubt it errs toward refusing: a zone that fails falls
back to its segment's copy, and a specific but false line is worse than a general one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

from precompute.claims.about_account import ACHIEVEMENTS, FLATTERY, INTENTS, RECENCY
from precompute.claims.about_reader import QUOTES, RELATIONSHIPS, TRACKING
from precompute.claims.patterns import WORD_START as _WORD_START
from precompute.claims.patterns import ClaimHit, ClaimPattern
from precompute.claims.text import claim_sentences
from welcomemat.reasons import ClaimReason

__all__ = ["CLAIM_PATTERNS", "find_claims"]

_TEXT_CACHE_SIZE = 4_096  # one entry per distinct draft text and account

# Every class a pattern detects, in the order the checks report them.
CLAIM_PATTERNS: Mapping[ClaimReason, tuple[ClaimPattern, ...]] = MappingProxyType(
    {
        ClaimReason.INVENTED_QUOTE: QUOTES,
        ClaimReason.UNSUPPORTED_RECENCY: RECENCY,
        ClaimReason.UNSUPPORTED_ACHIEVEMENT: ACHIEVEMENTS,
        ClaimReason.UNSUPPORTED_RELATIONSHIP: RELATIONSHIPS,
        ClaimReason.UNSUPPORTED_INTENT: INTENTS,
        ClaimReason.TRACKING_DISCLOSURE: TRACKING,
        ClaimReason.FLATTERY: FLATTERY,
    }
)


def _combined(patterns: tuple[ClaimPattern, ...]) -> re.Pattern[str]:
    """One search for a whole class: a sentence that matches none of its patterns (most) is read
    once, not once per pattern. One word-start lookbehind before the alternation, not one in each
    branch: it lets the engine skip the positions inside words, ten times faster on a draft."""
    branches = (p.regex.pattern.removeprefix(_WORD_START).removeprefix(r"\b") for p in patterns)
    return re.compile(_WORD_START + "(?:" + "|".join(branches).replace("(?P<action>", "(?:") + ")")


_COMBINED: Mapping[ClaimReason, re.Pattern[str]] = MappingProxyType(
    {reason: _combined(patterns) for reason, patterns in CLAIM_PATTERNS.items()}
)


@lru_cache(maxsize=_TEXT_CACHE_SIZE)
def find_claims(text: str, account_keys: tuple[str, ...] = ()) -> tuple[ClaimHit, ...]:
    """Every claim `text` makes, by class (catalog order), then by place in the text.

    `account_keys`: the account's names as the checks compare them ("dymaxa"): they read as
    `thisaccount`. Pure, so cached: the same text of the same account is read once.
    """
    sentences = claim_sentences(text, account_keys)
    hits: list[ClaimHit] = []
    for reason, combined in _COMBINED.items():
        for sentence in sentences:
            if combined.search(sentence.words) is None:
                continue
            for pattern in CLAIM_PATTERNS[reason]:
                if sentence.question and not pattern.in_questions:
                    continue
                for m in pattern.regex.finditer(sentence.words):
                    before = sentence.words[: m.start()]
                    if pattern.unless_before is not None and pattern.unless_before.search(before):
                        continue
                    action = m.groupdict().get("action") or ""
                    hits.append(ClaimHit(reason, pattern, m.group(0).strip(), action))
    return tuple(hits)
