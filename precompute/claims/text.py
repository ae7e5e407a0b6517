"""Draft text as the claim checks read it: folded sentences of words, and where each may open.

Why a module of its own: whether a line claims something depends on the sentence it stands
in (a question asks, it does not claim; "if you plan to hire" is not a plan; an opener
opens a sentence, not the middle of one), and on words, not on the punctuation a model or
a marketer happens to use ("You've", "you’ve" and "YOU VE" are the same words). So each
draft is read once, and cached, as a few sentences of folded words:

* folded as `precompute.specifics` folds (case, accents, curly quotes, dashes), then split
  into sentences at `.`, `!`, `?`, `…`, `;`, `:`, a spaced dash or an em dash, and a line end;
* each sentence's words joined by single spaces and padded (`" you ve been reading "`), so a
  pattern matches whole words whatever stood between them; `#` reads as "number" and `%`
  as "percent", which would otherwise vanish with the punctuation ("#1", "300%");
* the account's own name reads as the word `thisaccount`, so a pattern can say "the
  account" ("Dymaxa plans to ...", "the Dymaxa team") without knowing its name.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from precompute.specifics import fold, spaced_words

__all__ = ["ACCOUNT_WORD", "ClaimSentence", "claim_sentences", "opening_positions"]

ACCOUNT_WORD = "thisaccount"  # the account's own name, as patterns see it
_TEXT_CACHE_SIZE = 4_096  # one entry per distinct draft text (per account, for claim sentences)
_GREETING_NAME_WORDS = 3  # words after a greeting that may be a name ("Hi Joram de Vries")

# Where a sentence ends: runs of end punctuation before a space, a closing quote or the end;
# a dash with spaces around it; a line end.
_SENTENCE_END_RE = re.compile(r"""[.!?…;:]+(?=[\s"')\]]|$)|\s-+\s|\n""")
_EM_DASHES = str.maketrans(dict.fromkeys("\u2013\u2014\u2015", " - "))
_SYMBOLS = str.maketrans({"#": " number ", "%": " percent ", "&": " and "})
_NUMBER_ABBREVIATION_RE = re.compile(r"\bno\.\s?(?=\d)")  # "No. 1" is "number 1", not a sentence end
_GREETINGS = frozenset({"hi", "hello", "hey", "dear", "greetings", "hiya", "howdy", "morning", "evening"})
_GREETING_TIMES = frozenset({"morning", "afternoon", "evening", "day"})  # "good morning"


class ClaimSentence(NamedTuple):
    """One sentence of a draft, as the claim patterns read it."""

    words: str  # " w1 w2 ... ": folded words, single spaces, padded
    question: bool  # it ends with a question mark


@lru_cache(maxsize=_TEXT_CACHE_SIZE)
def _raw_sentences(text: str) -> tuple[tuple[str, bool], ...]:
    """(folded sentence, ends with "?") for each non-empty sentence of `text` (claims and openers
    both read them: cached)."""
    folded = fold(text.translate(_EM_DASHES))
    folded = _NUMBER_ABBREVIATION_RE.sub("number ", folded)
    out: list[tuple[str, bool]] = []
    start = 0
    for m in _SENTENCE_END_RE.finditer(folded):
        out.append((folded[start : m.start()], "?" in m.group(0)))
        start = m.end()
    out.append((folded[start:], False))
    return tuple((s, q) for s, q in out if s.strip())


@lru_cache(maxsize=_TEXT_CACHE_SIZE)
def claim_sentences(text: str, account_keys: tuple[str, ...] = ()) -> tuple[ClaimSentence, ...]:
    """The sentences of `text`, each its words; `account_keys` (folded, spaced: "acme robotics")
    read as `thisaccount`, longest first."""
    keys = sorted({k for k in account_keys if k.strip()}, key=len, reverse=True)
    found = []
    for sentence, question in _raw_sentences(text):
        words = spaced_words(sentence.translate(_SYMBOLS))
        for key in keys:
            while f" {key} " in words:
                words = words.replace(f" {key} ", f" {ACCOUNT_WORD} ")
        found.append(ClaimSentence(words, question))
    return tuple(found)


@lru_cache(maxsize=_TEXT_CACHE_SIZE)
def opening_positions(text: str) -> tuple[str, ...]:
    """Every place an opener may stand in `text`, as padded folded words from there to the sentence end.

    The start of each sentence, and, after a greeting ("Hi", "Hello Joram", "Good morning
    team"), each of the next few words: the greeting and a name come before the opener.
    """
    out: list[str] = []
    for sentence, _ in _raw_sentences(text):
        words = spaced_words(sentence).split()
        if not words:
            continue
        out.append(" " + " ".join(words) + " ")
        skip = 0
        if words[0] in _GREETINGS:
            skip = 1
        elif words[0] == "good" and len(words) > 1 and words[1] in _GREETING_TIMES:
            skip = 2
        if skip:
            for k in range(skip, min(len(words), skip + _GREETING_NAME_WORDS + 1)):
                out.append(" " + " ".join(words[k:]) + " ")
    return tuple(out)
