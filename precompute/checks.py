"""Deterministic checks on every zone draft, whoever wrote it (offline composer or a model).

Why: the model only writes. Whether what it wrote may be published is decided here, by
pure functions that need no network and give the same answer every time, and a zone
that fails any of them takes the fallback (DESIGN.md, invariant 4). A specific but false
line is worse than a general one, so every heuristic below errs toward failing.

One function per check name a zone contract may list (`welcomemat.zone_contract.KNOWN_CHECKS`),
each `(CheckInput) -> CheckFailure | None`; `run_checks` runs a contract's checks plus
the hard ones no contract can switch off (`ALWAYS_RUN`: empty, no_markup_or_links,
cited_facts_trusted, prohibited_claims; and cta_allowed in link zones). Reason codes:

    empty                  empty
    length                 too_many_words, too_many_chars
    banned_phrases         banned_phrase, banned_opener
    one_question           multiple_questions
    no_markup_or_links     url_in_text, html_in_text (tags, entities, attributes, script,
                           backslashes), markdown_in_text
    unsupported_specifics  unsupported_number, unsupported_date, unsupported_name,
                           uncited_fact (the specific is in a trusted fact the draft did not cite)
    cited_facts_trusted    untrusted_fact, personal_without_fact
    other_company          other_company
    cta_allowed            cta_missing, cta_not_allowed
    confidence             low_confidence
    prohibited_claims      prohibited_claim (catalog: `precompute.claims`)
    (any check)            check_error: the check itself raised; fail closed

Unsupported specifics, the heuristic:

* Numbers: digits anywhere (1,000 / 4.5 / 30% / €2M / $10m / 3rd, inside words too) and
  number words (one..ninety, dozen, hundred, thousand, million, billion), compared by
  value (and currency when the draft names one). Dates: ISO dates, quarters (Q3),
  weekday and month names, today/yesterday/tonight/tomorrow. Names: runs of capitalised
  words, except a sentence's first word (unless ALL-CAPS-like: "SDRs") and a stoplist
  (I, Hi, Congrats, Your...); a name is supported word by word.
* A specific is supported by the cited facts (statement, fields, evidence, publish date:
  its year, day, month, weekday and quarter), the account (name, short name, city,
  country) or, for numbers only, the count of cited facts of one type ("four SDRs" citing
  four hiring facts).
* The campaign's approved vocabulary supports names always; numbers only when an
  explicit vocabulary term or next to the same word as in approved copy ("from 90 to 45
  days" is approved copy, "hiring 45 SDRs" is not); dates only when an explicit term, or
  in non-personal copy.
* Personal drafts must take a funding round ("Series B") from a cited fact: the
  vocabulary lists every round, so it cannot tell a true one from a false one.
* Today/yesterday need a cited fact of that day and a draft `valid_until` by tomorrow.

Another company: any of the run's other accounts named as whole words (unless the name is
made only of the campaign's own words, e.g. an account called "Ramp"), or capitalised
words before a legal form ("Globex GmbH") that are not the account or a vocabulary term.

Cost (CPython 3.11, a slow 2-vCPU VM): 10 µs for a CTA, 25-40 µs for a 10-20-word draft
whose text was seen before (composer output repeats), 60-100 µs for a new one. Regexes
are compiled at import, the vocabulary is built once, and each text, fact and account is
analysed once and cached; most of the rest is finding names and numbers.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple

from precompute.claims import KNOWN_CLAIM_CLASSES, could_claim, find_claim
from precompute.context import EffectivePolicy, GovernedContext, TrustedFact
from precompute.providers.base import ZoneDraft
from precompute.trust import short_name
from welcomemat.campaign import Campaign
from welcomemat.zone_contract import KNOWN_CHECKS, ZoneContract

__all__ = [
    "ALWAYS_RUN",
    "CHECKS",
    "ApprovedVocabulary",
    "CheckFailure",
    "CheckInput",
    "build_vocabulary",
    "check_banned_phrases",
    "check_cited_facts_trusted",
    "check_confidence",
    "check_cta_allowed",
    "check_empty",
    "check_length",
    "check_no_markup_or_links",
    "check_one_question",
    "check_other_company",
    "check_prohibited_claims",
    "check_unsupported_specifics",
    "checks_for",
    "company_key",
    "run_checks",
]

_DETAIL_CHARS = 80  # a failure's detail quotes at most this much of the draft (it is shown in explain)
_TEXT_CACHE_SIZE = 4_096  # one entry per distinct draft text; every check of a draft reuses it
_SUPPORT_CACHE_SIZE = 16_384  # one entry per fact / account: a fact supports all zones of its account
_MAX_NUMBER_DIGITS = 30  # longer digit runs are compared as written, not as values
_NEIGHBOUR_WINDOW = 40  # characters searched on either side of a number for its neighbouring word


# -- public types --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckFailure:
    """One failed check: the check's name, a reason code and the offending token or phrase."""

    check: str
    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class ApprovedVocabulary:
    """What the campaign itself says, normalised once per campaign (`build_vocabulary`).

    Everything is folded (casefolded, accents stripped) and split into words the way draft
    text is, so a check only does set lookups.
    """

    words: frozenset[str]  # every word of approved copy and terms: supports names
    term_words: frozenset[str]  # words of the explicit `vocabulary` list only
    terms: frozenset[str]  # explicit terms as word sequences ("acme revenue"): our own names
    numbers: frozenset[str]  # number keys of explicit terms: supported anywhere
    number_contexts: frozenset[tuple[str, str]]  # (number key, neighbouring word) in approved copy


@dataclass(frozen=True, slots=True)
class CheckInput:
    """Everything a check may look at for one zone draft."""

    draft: ZoneDraft
    contract: ZoneContract
    context: GovernedContext
    campaign: Campaign
    policy: EffectivePolicy
    vocabulary: ApprovedVocabulary
    # Names of the run's accounts; the account's own name may be among them (ignored), so
    # callers can pass one set for the whole run. Normalised here (`company_key`), once per set.
    other_companies: frozenset[str] = frozenset()
    # True for the personal rung; segment and default copy is checked with False.
    personal: bool = True


# -- text normalisation --------------------------------------------------------------------

# Typographic variants a model (or a paste) produces, mapped so that "game—changer" and
# "you’re" match what the lists spell with ASCII.
_PUNCT_MAP = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\uff07", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\uff02", '"'),
    }
)
_WORDS_RE = re.compile(r"[^\W_]+")
# Invisible format characters (Unicode category Cf) a writer might put inside words.
_FORMAT_CHAR_RE = re.compile(
    "[" + "".join(re.escape(chr(c)) for c in range(0x10000) if unicodedata.category(chr(c)) == "Cf") + "]"
)
_SLOT_RE = re.compile(r"\{[^{}]*\}")


def _fold(text: str) -> str:
    """Casefolded, accents and invisible format characters (soft hyphen, ZWSP) removed."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(c for c in decomposed if not unicodedata.combining(c) and unicodedata.category(c) != "Cf")
    return kept.casefold().translate(_PUNCT_MAP)


def _spaced(folded: str) -> str:
    """Words separated by single spaces, padded: `" w1 w2 "`, so `" phrase " in` is a whole-word match."""
    return " " + " ".join(_WORDS_RE.findall(folded)) + " "


class _Text(NamedTuple):
    """One draft text, normalised once and shared by every check (pure, so cached)."""

    folded: str  # folded, whitespace collapsed, punctuation kept (claims patterns)
    spaced: str  # folded words only (banned phrases, company names)
    words: tuple[str, ...]


@lru_cache(maxsize=_TEXT_CACHE_SIZE)
def _analyse(text: str) -> _Text:
    folded = " ".join(_fold(text).split())
    words = tuple(_WORDS_RE.findall(folded))
    return _Text(folded=folded, spaced=" " + " ".join(words) + " ", words=words)


# Exactly `<tag>` or `</tag>`: the only shape the cleaner keeps (welcomemat.markup).
_INLINE_TAG_RE = re.compile(r"</?([A-Za-z]+)>")


def _visible(d: CheckInput) -> str:
    """The draft text with the contract's allowed inline tags removed (what a reader sees)."""
    text = d.draft.text
    allowed = d.contract.markup
    if not allowed or "<" not in text:
        return text
    return _INLINE_TAG_RE.sub(lambda m: " " if m.group(1).lower() in allowed else m.group(0), text)


@lru_cache(maxsize=_SUPPORT_CACHE_SIZE)
def company_key(name: str) -> str:
    """A company name as the checks compare it: short name (no legal form), folded words.

    "Dymaxa B.V." -> "dymaxa", "Globex GmbH & Co. KG" -> "globex".
    """
    return _spaced(_fold(short_name(name))).strip()


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 1] + "…"


# -- specifics: numbers, dates, names ------------------------------------------------------

_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_SMALL_VALUES: Mapping[str, int] = {
    **{w: i for i, w in enumerate(_UNITS)},
    **{w: 20 + 10 * i for i, w in enumerate(_TENS)},
}
_SCALES: Mapping[str, int] = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_MULTIPLIERS: Mapping[str, int] = {"hundred": 100, "dozen": 12}
# Plurals only for the vague ones ("hundreds of reps"); "ones" is a pronoun.
_NUMBER_WORDS = frozenset(
    (*_SMALL_VALUES, *_SCALES, *_MULTIPLIERS, *(w + "s" for w in (*_SCALES, *_MULTIPLIERS)))
)
_MAGNITUDE_SUFFIX: Mapping[str, int] = {"k": 10**3, "m": 10**6, "mn": 10**6, "b": 10**9, "bn": 10**9}
_CURRENCY_SYMBOL: Mapping[str, str] = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy"}

# Numbers written with digits, and ISO dates (first, so their digits are not numbers too).
# Only run on text with a digit in it (`_DIGIT_RE`): most headlines have none.
_DIGITS_RE = re.compile(
    r"""
    (?P<iso>\d{4}-\d{1,2}-\d{1,2}(?!\d))
    | (?P<digits>\d+(?:[.,]\d+)*)
      (?:(?i:st|nd|rd|th)(?![^\W\d_])|(?P<mag>(?i:mn|bn|k|m|b))(?![^\W\d_]))?
      (?:[\s-]?(?P<magw>(?i:thousand|million|billion|trillion|mn|bn))(?i:s)?\b)?
      (?P<pct>\s?%|\s?(?i:percent|per\s?cent)\b)?
    """,
    re.VERBOSE,  # case-insensitive only where letters are: a case-insensitive scan is slower
)
_DIGIT_RE = re.compile(r"\d")
_CURRENCY_CODES = frozenset({"usd", "eur", "gbp", "chf", "sek", "nok", "dkk", "jpy"})
_PERCENT_AFTER_RE = re.compile(r"\s?(?:%|percent\b|per\s?cent\b)", re.I)

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = ("january february march april may june july august september october november december").split()
# Abbreviations count only when capitalised ("Wed", "Sat"): lowercase they are words.
_DATE_ABBREVIATIONS: Mapping[str, str] = {
    **{d[:3]: d for d in _WEEKDAYS},
    "tues": "tuesday",
    "thur": "thursday",
    "thurs": "thursday",
    **{m[:3]: m for m in _MONTHS if m != "may"},
    "sept": "september",
}
_RELATIVE_DAYS: Mapping[str, int] = {"today": 0, "tonight": 0, "yesterday": 1, "tomorrow": -1}
_QUARTERS = frozenset({"q1", "q2", "q3", "q4"})

# Capitalised words that are not names wherever they stand (greetings, pronouns, articles).
_STOPWORDS = frozenset(
    """i a an the congrats congratulations thanks thank hi hello hey dear welcome your yours you
    we our ours us my it its this that these those here there what when where why how who which
    and or but so if ok okay yes no""".split()
)
_SENTENCE_END = frozenset(".!?…\n\r")
_OPENING_PUNCTUATION = " \t\r\n\"'“‘«‹([{¿¡*_-–—"
# Every number and date word, folded: a draft's words are checked against this set first.
_SPECIAL_WORDS = frozenset(
    {*_NUMBER_WORDS, *_WEEKDAYS, *_MONTHS, *_DATE_ABBREVIATIONS, *_RELATIVE_DAYS, *_QUARTERS}
)


def _uppercase_class() -> str:
    """A regex character class body of every upper- and titlecase letter in the BMP.

    Python's `re` has no `\\p{Lu}`; outside the BMP capitals (Deseret, Adlam) are too rare
    in page copy to be worth the import time.
    """
    ranges: list[tuple[int, int]] = []
    for cp in range(0x10000):
        c = chr(cp)
        if c.isupper() or c.istitle():
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    return "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in ranges)


_UPPERCASE = _uppercase_class()
# A capitalised word: an upper- or titlecase letter not inside another word, then letters
# or digits, apostrophe and hyphen parts ("Dymaxa's", "O'Brien", "Seed-stage", "B2B").
_CAPITALISED_WORD = rf"[{_UPPERCASE}][^\W_]*(?:['’][^\W\d_]+)*(?:-[^\W_]+)*"
# Capitalised words written together, joined by spaces or "&" ("Acme Revenue", "AT & T").
_CAPITALISED_RUN_RE = re.compile(
    rf"(?<!\w)(?<!\w['’-]){_CAPITALISED_WORD}(?:(?:[ \t]+|[ \t]*&[ \t]*){_CAPITALISED_WORD})*"
)
_ROUND_RE = re.compile(r"\bseries\s+[a-h]\b", re.IGNORECASE)
_NEXT_WORD_RE = re.compile(r"[\W_]*([^\W_]+)")


class _Specific(NamedTuple):  # a NamedTuple: built for every specific of every draft, 5x cheaper
    kind: str  # "number" | "date" | "name"
    text: str  # as written, for the failure's detail
    key: str  # numbers: value key; dates: iso / weekday / month / quarter / relative word
    currency: str = ""  # numbers: "usd", "eur"... when the draft names one
    token: str = ""  # numbers inside a word ("b2b"): the folded word
    words: tuple[str, ...] = ()  # names: folded words
    source: str = ""  # numbers: the text they stand in and where, for their neighbours
    start: int = 0
    end: int = 0


def _decimal(digits: str) -> Decimal | None:
    """The value of a digit string with "," / "." as thousands or decimal separators, or None."""
    if "," in digits and "." in digits:
        if digits.rfind(",") > digits.rfind("."):
            digits = digits.replace(".", "").replace(",", ".")
        else:
            digits = digits.replace(",", "")
    elif "," in digits:
        parts = digits.split(",")
        if all(len(p) == 3 for p in parts[1:]):
            digits = "".join(parts)
        elif len(parts) == 2:
            digits = digits.replace(",", ".")
        else:
            return None
    elif digits.count(".") > 1:
        parts = digits.split(".")
        if not all(len(p) == 3 for p in parts[1:]):
            return None
        digits = "".join(parts)
    try:
        return Decimal(digits)
    except InvalidOperation:
        return None


def _words_value(words: Iterable[str]) -> int:
    """ "twenty-five" -> 25, "two dozen" -> 24, "three million" -> 3000000 (folded number words)."""
    total = current = 0
    for word in words:
        if word not in _SMALL_VALUES and word.endswith("s"):
            word = word[:-1]  # "hundreds", "millions": vague, but at least that much
        if word in _SMALL_VALUES:
            current += _SMALL_VALUES[word]
        elif word in _MULTIPLIERS:
            current = (current or 1) * _MULTIPLIERS[word]
        else:
            total += (current or 1) * _SCALES[word]
            current = 0
    return total + current


@lru_cache(maxsize=_TEXT_CACHE_SIZE)
def _neighbours(text: str, start: int, end: int) -> tuple[str, str]:
    """The folded words just before and after text[start:end] ("" at either end of the text)."""
    number = text[start:end]
    if number.isascii() and number.isdigit():
        words = _analyse(text).words  # usually cached already: a plain number is one word of it
        if words.count(number) == 1:
            i = words.index(number)
            return (words[i - 1] if i else "", words[i + 1] if i + 1 < len(words) else "")
    # The word before is the first word of the reversed text before `start`: a forward
    # match, where a search anchored at the end would retry from every position.
    before = _NEXT_WORD_RE.match(text[max(0, start - _NEIGHBOUR_WINDOW) : start][::-1])
    after = _NEXT_WORD_RE.match(text, end, end + _NEIGHBOUR_WINDOW)
    return (_fold(before.group(1)[::-1]) if before else "", _fold(after.group(1)) if after else "")


def _currency_before(text: str, start: int) -> tuple[str, int]:
    """The currency written just before `start` ("usd" for "$", "eur" for "EUR ") and where it starts."""
    i = start - 1
    if i >= 0 and text[i] == " ":
        i -= 1
    if i < 0:
        return "", start
    if text[i] in _CURRENCY_SYMBOL:
        return _CURRENCY_SYMBOL[text[i]], i
    code = text[max(0, i - 2) : i + 1].lower()
    if code in _CURRENCY_CODES and (i < 3 or not text[i - 3].isalpha()):
        return code, i - 2
    return "", start


def _enclosing_word(text: str, start: int, end: int) -> str:
    """The alphanumeric word around a number ("B2B", "3M"), folded; "" when it is only digits."""
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    while end < len(text) and text[end].isalnum():
        end += 1
    word = text[start:end]
    return _fold(word) if any(c.isalpha() for c in word) else ""


def _number(text: str, start: int, end: int, key: str, token: str = "") -> _Specific:
    """A number found at text[start:end]: its currency, percent sign and neighbouring words."""
    currency, start = _currency_before(text, start)
    return _Specific(
        "number", text[start:end].strip(), key, currency, token, source=text, start=start, end=end
    )


def _digit_matches(text: str) -> list[re.Match[str]]:
    """`_DIGITS_RE` at each digit: finding the digit first is twice as fast as `finditer`,
    which tries the whole pattern at every position."""
    found = []
    pos = 0
    while (first := _DIGIT_RE.search(text, pos)) is not None:
        m = _DIGITS_RE.match(text, first.start())
        if m is None:  # cannot happen (a digit always matches); never loop on it
            pos = first.end()
            continue
        found.append(m)
        pos = m.end()
    return found


def _digit_specifics(text: str) -> list[_Specific]:
    found: list[_Specific] = []
    for m in _digit_matches(text):
        iso, digits, mag, magw, pct = m.group("iso", "digits", "mag", "magw", "pct")
        if iso:
            y, mo, da = (int(p) for p in iso.split("-"))
            found.append(_Specific("date", m.group(0), f"{y:04d}-{mo:02d}-{da:02d}"))
            continue
        if digits.isascii() and digits.isdigit() and not mag and not magw:
            key = digits.lstrip("0") or "0"  # the common case, without Decimal
        else:
            digits = unicodedata.normalize("NFKD", digits)
            value = _decimal(digits) if len(digits) <= _MAX_NUMBER_DIGITS else None
            if value is None:
                key = digits
            else:
                for suffix in (mag, magw):
                    if suffix:
                        suffix = suffix.lower()
                        value *= _MAGNITUDE_SUFFIX.get(suffix) or _SCALES[suffix.rstrip("s")]
                key = format(value.normalize(), "f")
        if pct:
            key += "%"
        start, end = m.span("digits")
        token = ""
        if (start > 0 and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum()):
            token = _enclosing_word(text, start, end)
            if token in _QUARTERS:  # "Q3" is a date, found with the date words
                continue
        found.append(_number(text, m.start(), m.end(), key, token))
    return found


def _word_specifics(text: str) -> list[_Specific]:
    """Number words, date words and names in `text`."""
    folded_words = _analyse(text).words
    found = _special_words(text, folded_words) if not _SPECIAL_WORDS.isdisjoint(folded_words) else []
    found += _names(text)
    return found


def _special_words(text: str, folded_words: tuple[str, ...]) -> list[_Specific]:
    """Number words ("twenty-five", "two million") and date words ("Thursday", "Q3", "today").

    Found with `str.find` for each such word the text contains: an alternation of sixty
    words in a case-insensitive regex costs ten times as much on every draft.
    """
    lowered = text.lower()
    if len(lowered) != len(text):  # a few letters lowercase to two characters ("İ"): keep offsets
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    hits: list[tuple[int, int, str]] = []
    for word in _SPECIAL_WORDS.intersection(folded_words):
        i = lowered.find(word)
        while i >= 0:
            j = i + len(word)
            after = lowered[j : j + 2]
            if (i == 0 or not _is_word_char(lowered[i - 1])) and (
                j == len(lowered) or not _is_word_char(lowered[j]) or after in ("'s", "’s")
            ):
                hits.append((i, j, word))
            i = lowered.find(word, j)
    hits.sort()
    found: list[_Specific] = []
    run: list[tuple[int, int, str]] = []  # number words written together: "twenty five", "two million"
    for hit in hits:
        start, end, word = hit
        if word in _NUMBER_WORDS:
            if run and not _joins(text[run[-1][1] : start]):
                found.append(_number_words(text, run))
                run = []
            run.append(hit)
            continue
        capitalised = text[start].isupper()
        if word in _MONTHS or word in _DATE_ABBREVIATIONS:  # "may", "sat" lowercase are words
            if capitalised:
                found.append(_Specific("date", text[start:end], _DATE_ABBREVIATIONS.get(word, word)))
        else:
            found.append(_Specific("date", text[start:end], word))
    if run:
        found.append(_number_words(text, run))
    return found


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c in "'’"


def _joins(gap: str) -> bool:
    return gap == "-" or (gap.isspace() and "\n" not in gap)


def _number_words(text: str, run: list[tuple[int, int, str]]) -> _Specific:
    start, end = run[0][0], run[-1][1]
    pct = _PERCENT_AFTER_RE.match(text, end)
    key = str(_words_value(word for _, _, word in run)) + ("%" if pct else "")
    return _number(text, start, pct.end() if pct else end, key)


def _names(text: str) -> list[_Specific]:
    """Runs of capitalised words: "Globex", "Series A", "Acme Revenue", "SDRs".

    A sentence's first word is capitalised anyway, and a lone capital letter is an article
    or an initial: neither starts a name (both may continue one: "Series A"). ALL-CAPS-like
    words ("SDRs", "GmbH") are names wherever they stand. Stopwords and number or date
    words end a name.
    """
    found: list[_Specific] = []
    for m in _CAPITALISED_RUN_RE.finditer(text):
        run, offset = m.group(0), m.start()
        start = end = pos = 0
        words: list[str] = []
        for i, token in enumerate(run.split()):
            pos = run.find(token, pos)
            word = token[:-2] if token[-2:] in ("'s", "’s", "'S") else token
            folded = word.lower() if word.isascii() else _fold(word)
            if folded.isalnum():
                parts = [folded]
                special = folded in _SPECIAL_WORDS
            else:
                parts = _WORDS_RE.findall(folded)
                special = not parts or all(p in _SPECIAL_WORDS for p in parts)
            if special or folded in _STOPWORDS:
                if words:
                    found.append(
                        _Specific("name", text[offset + start : offset + end], "", "", "", tuple(words))
                    )
                    words = []
            elif words:
                end = pos + len(word)
                words += parts
            elif len(word) > 1 and not (i == 0 and word[1:].islower() and _sentence_start(text, offset)):
                start, end = pos, pos + len(word)
                words = parts
            pos += len(token)
        if words:
            found.append(_Specific("name", text[offset + start : offset + end], "", "", "", tuple(words)))
    return found


def _sentence_start(text: str, at: int) -> bool:
    before = text[:at].rstrip(_OPENING_PUNCTUATION)
    return not before or before[-1] in _SENTENCE_END


@lru_cache(maxsize=_TEXT_CACHE_SIZE)
def _specifics(text: str) -> tuple[_Specific, ...]:
    """Every number, date and name in `text` (pure, so cached: a fact's text recurs)."""
    if _DIGIT_RE.search(text) is None:
        return tuple(_word_specifics(text))
    return (*_digit_specifics(text), *_word_specifics(text))


def _number_keys(spec: _Specific) -> tuple[str, ...]:
    """The keys a number registers under as support: bare, and with its currency if it has one."""
    return (spec.key, spec.currency + spec.key) if spec.currency else (spec.key,)


# -- what supports a specific: account and cited facts --------------------------------------


class _Support(NamedTuple):
    words: frozenset[str]
    spaced: str  # all texts, spaced, for phrase checks ("series a")
    numbers: frozenset[str]
    dates: frozenset[str]


def _support_from(texts: Iterable[str], numbers: Iterable[str] = (), dates: Iterable[str] = ()) -> _Support:
    """What a fact's or an account's texts support: their words, phrases, numbers and dates."""
    # One pass over all texts joined: a newline stops numbers and phrases running across.
    joined = " \n ".join(t for t in texts if t)
    folded = _fold(joined)
    words = _WORDS_RE.findall(folded)
    nums = set(numbers)
    found_dates = set(dates)
    specifics = _digit_specifics(joined) if _DIGIT_RE.search(joined) else []
    if not _SPECIAL_WORDS.isdisjoint(words):
        specifics += _special_words(joined, tuple(words))
    for spec in specifics:
        if spec.kind == "number":
            nums.update(_number_keys(spec))
        elif spec.key not in _RELATIVE_DAYS:  # relative to the text's own date, not the page's
            found_dates.add(spec.key)
    spaced = " | ".join(_spaced(line) for line in folded.split("\n"))
    return _Support(frozenset(words), spaced, frozenset(nums), frozenset(found_dates))


def _date_parts(day: date) -> tuple[list[str], list[str]]:
    """(numbers, dates) a publish date supports: year, day, month; iso, weekday, month, quarter."""
    numbers = [str(day.year), str(day.day), str(day.month)]
    dates = [
        day.isoformat(),
        _WEEKDAYS[day.weekday()],
        _MONTHS[day.month - 1],
        f"q{(day.month - 1) // 3 + 1}",
    ]
    return numbers, dates


@lru_cache(maxsize=_SUPPORT_CACHE_SIZE)
def _fact_support_cached(
    statement: str, fields: tuple[str, ...], evidence: str, published_at: date
) -> _Support:
    numbers, dates = _date_parts(published_at)
    return _support_from((statement, *fields, evidence), numbers, dates)


def _fact_support(fact: TrustedFact) -> _Support:
    return _fact_support_cached(
        fact.statement, tuple(fact.fields.values()), fact.evidence or "", fact.published_at
    )


@lru_cache(maxsize=_SUPPORT_CACHE_SIZE)
def _account_support_cached(texts: tuple[str, ...]) -> _Support:
    return _support_from(texts)


def _account_support(ctx: GovernedContext) -> _Support:
    account = ctx.account
    extras = account.model_extra or {}
    texts = (
        account.name,
        ctx.short_name,
        str(extras.get("city") or ""),
        account.country or "",
        ctx.firmographics.city or "",
        ctx.firmographics.country or "",
    )
    return _account_support_cached(texts)


def _cited(d: CheckInput) -> tuple[TrustedFact, ...]:
    """The draft's cited facts that are trusted for this account (unknown ids are another check's)."""
    cited = d.draft.fact_ids
    return tuple(f for f in d.context.facts if f.id in cited) if cited else ()


def _cited_support(d: CheckInput, cited: tuple[TrustedFact, ...]) -> tuple[_Support, ...]:
    """The account's and each cited fact's support, plus counts and relative days.

    Not merged into one: each part stays cached, and a lookup in a few small sets is cheaper.
    """
    counts: dict[str, int] = {}
    for fact in cited:
        counts[fact.type] = counts.get(fact.type, 0) + 1
    relative: tuple[str, ...] = ()
    valid_until = d.draft.valid_until
    if valid_until is not None and valid_until <= d.context.as_of + timedelta(days=1):
        # A time-relative word is true for at most a day, and only if the draft says so.
        ages = {(d.context.as_of - f.published_at).days for f in cited}
        relative = tuple(w for w, age in _RELATIVE_DAYS.items() if age in ages)
    extra = _counts_support(frozenset(counts.values()), relative)
    return (_account_support(d.context), *(_fact_support(f) for f in cited), extra)


@lru_cache(maxsize=256)
def _counts_support(counts: frozenset[int], relative: tuple[str, ...]) -> _Support:
    return _Support(frozenset(), " ", frozenset(str(n) for n in counts), frozenset(relative))


def _supported(spec: _Specific, parts: tuple[_Support, ...], v: ApprovedVocabulary, personal: bool) -> bool:
    if spec.kind == "number":
        if spec.token and (spec.token in v.words or any(spec.token in p.words for p in parts)):
            return True
        key = spec.currency + spec.key
        if key in v.numbers or any(key in p.numbers for p in parts):
            return True
        prev, nxt = _neighbours(spec.source, spec.start, spec.end)
        return (key, prev) in v.number_contexts or (key, nxt) in v.number_contexts
    if spec.kind == "date":
        if spec.key in _RELATIVE_DAYS:  # "today" in a fact's text meant its own day, not ours
            return any(spec.key in p.dates for p in parts) or (not personal and spec.key in v.words)
        if spec.key in v.term_words or (not personal and spec.key in v.words):
            return True
        return any(spec.key in p.dates or spec.key in p.words for p in parts)
    return all(w in v.words or any(w in p.words for p in parts) for w in spec.words)


# -- the checks ----------------------------------------------------------------------------


def check_empty(d: CheckInput) -> CheckFailure | None:
    """No letter or digit at all (whitespace, punctuation, invisible characters only)."""
    if not _analyse(d.draft.text).words:
        return CheckFailure("empty", "empty", "no words")
    return None


def check_length(d: CheckInput) -> CheckFailure | None:
    """Over the zone's word or character limit (counted as `ZoneContract.fits` counts them)."""
    text = d.draft.text
    words = len(text.split())
    if words > d.contract.max_words:
        return CheckFailure("length", "too_many_words", f"{words} words > {d.contract.max_words}")
    if len(text) > d.contract.max_chars:
        return CheckFailure("length", "too_many_chars", f"{len(text)} characters > {d.contract.max_chars}")
    return None


@lru_cache(maxsize=64)
def _phrase_keys(*lists: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(spaced key, as written) for each listed phrase, duplicates and empties dropped."""
    keys: dict[str, str] = {}
    for phrase in (p for lst in lists for p in lst):
        key = _spaced(_fold(phrase))
        if key.strip():
            keys.setdefault(key, phrase)
    return tuple(keys.items())


def check_banned_phrases(d: CheckInput) -> CheckFailure | None:
    """A banned phrase anywhere, or a banned opener at the start; case, spacing and punctuation aside."""
    text = _visible(d)
    forms = [_analyse(text).spaced]
    if not text.isascii() and _FORMAT_CHAR_RE.search(text):
        # An invisible character may hide a word break ("game\u00adchanger") or sit inside a
        # word ("syn\u200bergy"): try it as a space too, not only removed.
        forms.append(_spaced(_fold(_FORMAT_CHAR_RE.sub(" ", text))))
    for spaced in forms:
        for key, phrase in _phrase_keys(d.policy.banned_openers, d.campaign.banned_openers):
            if spaced.startswith(key):
                return CheckFailure("banned_phrases", "banned_opener", phrase)
        for key, phrase in _phrase_keys(d.policy.banned_phrases, d.campaign.banned_phrases):
            if key in spaced:
                return CheckFailure("banned_phrases", "banned_phrase", phrase)
    return None


def check_one_question(d: CheckInput) -> CheckFailure | None:
    """More than one question mark (fullwidth and small forms fold to "?")."""
    count = _analyse(d.draft.text).folded.count("?")
    if count > 1:
        return CheckFailure("one_question", "multiple_questions", f"{count} questions")
    return None


# Links: schemes a browser or mail client acts on (on lowercased text), "://" anywhere,
# and bare domains (`_domain_at`).
_SCHEME_RE = re.compile(
    r"://|\b(?:https?|ftp|file|javascript|vbscript|livescript|mailto)\s*:|\bdata\s*:\s*[\w.+-]+/"
    r"|\b(?:tel|sms)\s*:\s*\+?\d"
)
# Tags, comments, entities and attributes: event handlers, `x="..."`, and backslashes
# (page copy never has one; escapes and payloads do).
_HTML_RE = re.compile(
    r"""<(?:[^\W\d_]|[/!?]) | &\#?\w+; | &(?i:lt|gt|amp|quot|apos|nbsp)(?![^\W\d_])
    | \b[oO][nN]\w+\s*= | =\s*["'`] | \\""",
    re.VERBOSE,
)
# Script without markup ("';alert(1)//"): calls of the usual sinks, on lowercased text.
_SCRIPT_CALL_RE = re.compile(
    r"\b(?:alert|prompt|confirm|eval|expression|settimeout|setinterval|fromcharcode|import)\("
)
_SCRIPT_OBJECTS = ("document.", "window.", "location.")
# Links, images, emphasis, code, strikethrough and headings.
_MARKDOWN_RE = re.compile(
    r"""\[[^\]\n]*\]\s*[(\[]
    | !\[ | \*\* | __ | ` | ~~
    | ^[ \t]{0,3}\#{1,6}(?:[ \t]|$)
    | (?<![\w*])\*[^\s*][^*\n]*\*(?![\w*])
    """,
    re.MULTILINE | re.VERBOSE,
)
# A pattern can only match if the text has one of these characters: most drafts skip it.
_HTML_CHARS = frozenset("<&=\\")
_MARKDOWN_CHARS = frozenset("[*_`~#")


def _first_markup(text: str) -> CheckFailure | None:
    # Each pattern only where the characters it needs occur: most drafts skip most of them.
    m = _HTML_RE.search(text) if not _HTML_CHARS.isdisjoint(text) else None
    if m is not None:
        return _markup_failure("html_in_text", text, m.start())
    colon, dot, paren = ":" in text, "." in text, "(" in text
    lowered = text.lower() if colon or dot or paren else text
    m = _SCHEME_RE.search(lowered) if colon else None
    if m is not None:
        return _markup_failure("url_in_text", text, m.start())
    at = _domain_at(text) if dot else -1
    if at >= 0:
        return _markup_failure("url_in_text", text, at)
    m = _SCRIPT_CALL_RE.search(lowered) if paren else None
    at = m.start() if m is not None else -1
    if at < 0 and dot:
        at = max((lowered.find(o) for o in _SCRIPT_OBJECTS), default=-1)
    if at >= 0:
        return _markup_failure("html_in_text", text, at)
    m = _MARKDOWN_RE.search(text) if not _MARKDOWN_CHARS.isdisjoint(text) else None
    if m is not None:
        return _markup_failure("markdown_in_text", text, m.start())
    return None


def _domain_at(text: str) -> int:
    """Where a bare domain starts to show ("evil.com", "www.x.io"), or -1.

    A dot between a letter or digit and two letters, without a space: "e.g.", "B.V.",
    "4.5" and "Done. Next" are not domains. A loop over the few dots of a draft is
    cheaper than a regex that tries every position.
    """
    i = text.find(".", 1)
    while i >= 0:
        before, after = text[i - 1], text[i + 1 : i + 3]
        if before.isalnum() and len(after) == 2 and all(c.isalnum() and not c.isdecimal() for c in after):
            return i - 1
        i = text.find(".", i + 1)
    return -1


def _markup_failure(reason: str, text: str, at: int) -> CheckFailure:
    start = max(0, at - 8)  # a little context before: "evil.com" is found at "l.co"
    return CheckFailure("no_markup_or_links", reason, _clip(text[start : at + 24]))


def check_no_markup_or_links(d: CheckInput) -> CheckFailure | None:
    """Any URL, HTML or markdown; in a zone that allows inline tags, only exactly those tags pass."""
    text = _visible(d)
    found = _first_markup(text)
    if found is None and not text.isascii():
        # Again in compatibility form: fullwidth "ｈｔｔｐｓ://" and "＜" count too.
        found = _first_markup(unicodedata.normalize("NFKC", text))
    return found


def check_unsupported_specifics(d: CheckInput) -> CheckFailure | None:
    """A number, date or proper name not supported by cited facts, the account or the vocabulary."""
    text = _visible(d)
    specifics = _specifics(text)
    rounds = _ROUND_RE.findall(text) if d.personal and "series" in _analyse(text).words else []
    if not specifics and not rounds:
        return None
    cited = _cited(d)
    support = _cited_support(d, cited)
    vocabulary = d.vocabulary
    for spec in specifics:
        if not _supported(spec, support, vocabulary, d.personal):
            return _unsupported(d, spec, cited)
    for found in rounds:
        if not any(_spaced(_fold(found)) in p.spaced for p in support):
            spec = _Specific("name", found, _spaced(_fold(found)).strip())
            return _unsupported(d, spec, cited)
    return None


def _unsupported(d: CheckInput, spec: _Specific, cited: tuple[TrustedFact, ...]) -> CheckFailure:
    # Said better: if a trusted fact the draft did not cite supports it, the draft forgot a citation.
    for fact in d.context.facts:
        if fact in cited:
            continue
        support = _fact_support(fact)
        found = (
            f" {spec.key} " in support.spaced
            if spec.kind == "name" and not spec.words
            else _supported(spec, (support,), _NO_VOCABULARY, d.personal)
        )
        if found:
            return CheckFailure(
                "unsupported_specifics", "uncited_fact", _clip(f"{spec.text} (fact {fact.id})")
            )
    if spec.kind == "number":  # "four SDRs" citing none of the four hiring facts
        counts: dict[str, int] = {}
        for fact in d.context.facts:
            counts[fact.type] = counts.get(fact.type, 0) + 1
        for fact_type, count in sorted(counts.items()):
            if str(count) == spec.key:
                detail = f"{spec.text} ({count} {fact_type} facts)"
                return CheckFailure("unsupported_specifics", "uncited_fact", _clip(detail))
    return CheckFailure("unsupported_specifics", f"unsupported_{spec.kind}", _clip(spec.text))


def check_cited_facts_trusted(d: CheckInput) -> CheckFailure | None:
    """Every cited fact is trusted and of a type this zone may use; a personal zone cites one if it must."""
    usable = False
    trusted = {f.id: f for f in d.context.facts} if d.draft.fact_ids else {}
    for fact_id in d.draft.fact_ids:
        fact = trusted.get(fact_id)
        if fact is None:
            decision = next((x for x in d.context.decisions if x.fact_id == fact_id), None)
            why = f"not trusted ({decision.reason})" if decision is not None else "not a fact of this account"
            return CheckFailure("cited_facts_trusted", "untrusted_fact", _clip(f"{fact_id}: {why}"))
        if fact.type not in d.contract.fact_types:
            return CheckFailure(
                "cited_facts_trusted",
                "untrusted_fact",
                _clip(f"{fact_id}: type {fact.type} not allowed in this zone"),
            )
        usable = True
    if d.personal and d.contract.requires_fact and not usable:
        return CheckFailure("cited_facts_trusted", "personal_without_fact", "no cited fact")
    return None


# Legal forms after one to four capitalised words ("Globex GmbH", "Initech, Inc."). Longer
# spellings first so that "S.A.S." is not read as "S.A." followed by junk.
_LEGAL_SUFFIX = r"""(GmbH|KGaA|KG|AG|BVBA|B\.[ ]?V\.?|BV|N\.[ ]?V\.?|NV|Inc\.?|Incorporated|L\.?L\.?C\.?
    |LLP|Ltd\.?|Limited|PLC|plc|S\.A\.S\.?|SAS|S\.A\.?|SA|SARL|S\.L\.U?\.?|S\.r\.l\.?|Srl|S\.p\.A\.?|SpA|Oyj|Oy|AB|ASA|A/S
    |ApS|Pty|Corp\.?|Corporation|Co\.|SE|Lda\.?)(?![\w/])"""
_LEGAL_NAME_RE = re.compile(
    rf"((?:[{_UPPERCASE}0-9][\w&'’.-]*[ \t]+){{0,3}}[{_UPPERCASE}0-9][\w&'’.-]*),?[ \t]+{_LEGAL_SUFFIX}",
    re.VERBOSE,
)
# The suffix alone, case-sensitive literals: a fast test before the name pattern.
_LEGAL_SUFFIX_RE = re.compile(_LEGAL_SUFFIX, re.VERBOSE)


class _CompanyIndex(NamedTuple):
    """The run's company names, normalised, by word count: keys to test, and keys -> names."""

    keys: Mapping[int, frozenset[str]]
    names: Mapping[str, str]


# id(name set) -> (the set, its index). Keyed by identity, not equality: comparing two
# frozensets of a run's names costs O(n) (no identity shortcut), ~300 µs for 10,000 names.
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


def check_other_company(d: CheckInput) -> CheckFailure | None:
    """Names another account of the run, or any company with a legal form that is not the account."""
    visible = _visible(d)
    spaced = _analyse(visible).spaced
    own = {company_key(d.context.account.name), company_key(d.context.short_name)} - {""}
    for key in own:  # "Acme Robotics" must not count as a mention of another account "Acme"
        if f" {key} " in spaced:
            spaced = spaced.replace(f" {key} ", " | ")
    words = spaced.split()
    vocabulary = d.vocabulary.words
    index = _company_index(d.other_companies)
    for n, keys in index.keys.items():
        grams = words if n == 1 else [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]
        hits = keys.intersection(grams)  # iterates the draft's few words, not the run's names
        # A name made only of the campaign's own words ("Ramp", "Acme") cannot be told
        # apart from those words; the campaign's copy would fail everywhere.
        for gram in sorted(hits - own, key=grams.index):
            if not all(w in vocabulary for w in gram.split()):
                return CheckFailure("other_company", "other_company", index.names[gram])
    for m in _LEGAL_NAME_RE.finditer(visible) if _LEGAL_SUFFIX_RE.search(visible) else ():
        name_words = _WORDS_RE.findall(_fold(m.group(1)))
        allowed = own | d.vocabulary.terms
        if not any(name_words[-(k.count(" ") + 1) :] == k.split() for k in allowed):
            return CheckFailure("other_company", "other_company", _clip(m.group(0)))
    return None


def check_cta_allowed(d: CheckInput) -> CheckFailure | None:
    """A link zone names one of the campaign's CTAs (never a URL); other zones' cta_id is ignored."""
    if not d.contract.link:
        return None
    cta_id = d.draft.cta_id
    if not cta_id:
        return CheckFailure("cta_allowed", "cta_missing", "no cta_id")
    if d.campaign.cta(cta_id) is None:
        return CheckFailure("cta_allowed", "cta_not_allowed", _clip(cta_id))
    return None


def check_confidence(d: CheckInput) -> CheckFailure | None:
    """The writer's own confidence is below the policy's minimum."""
    if not d.draft.confidence >= d.policy.min_model_confidence:  # written so that NaN fails
        return CheckFailure(
            "confidence", "low_confidence", f"{d.draft.confidence:g} < {d.policy.min_model_confidence:g}"
        )
    return None


@lru_cache(maxsize=64)
def _claim_classes(*lists: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(c for lst in lists for c in lst))


def check_prohibited_claims(d: CheckInput) -> CheckFailure | None:
    """A claim of a class the policy or campaign prohibits; an unknown class fails closed."""
    folded = _analyse(_visible(d)).folded
    possible = could_claim(folded)  # one search rules out every class for most drafts
    for claim_class in _claim_classes(d.policy.prohibited_claims, d.campaign.prohibited_claims):
        if claim_class not in KNOWN_CLAIM_CLASSES:
            return CheckFailure(
                "prohibited_claims", "prohibited_claim", f"unknown claim class {claim_class!r}"
            )
        phrase = find_claim(folded, claim_class) if possible else None
        if phrase is not None:
            return CheckFailure("prohibited_claims", "prohibited_claim", _clip(f"{claim_class}: {phrase}"))
    return None


# -- running them --------------------------------------------------------------------------

# In the order failures are reported.
CHECKS: Mapping[str, Callable[[CheckInput], CheckFailure | None]] = MappingProxyType(
    {
        "empty": check_empty,
        "length": check_length,
        "banned_phrases": check_banned_phrases,
        "one_question": check_one_question,
        "no_markup_or_links": check_no_markup_or_links,
        "unsupported_specifics": check_unsupported_specifics,
        "cited_facts_trusted": check_cited_facts_trusted,
        "other_company": check_other_company,
        "cta_allowed": check_cta_allowed,
        "confidence": check_confidence,
        "prohibited_claims": check_prohibited_claims,
    }
)
if set(CHECKS) != KNOWN_CHECKS:  # a contract could name a check nothing implements
    raise RuntimeError(f"checks out of step with KNOWN_CHECKS: {sorted(set(CHECKS) ^ KNOWN_CHECKS)}")

# Hard rules: run whatever a zone contract lists (cta_allowed too, for link zones), because
# no zone contract may publish markup, links, untrusted facts, empty text or a prohibited claim.
ALWAYS_RUN: frozenset[str] = frozenset(
    {"empty", "no_markup_or_links", "cited_facts_trusted", "prohibited_claims"}
)


@lru_cache(maxsize=256)
def _names_for(listed: tuple[str, ...], link: bool) -> tuple[str, ...]:
    wanted = set(listed) | ALWAYS_RUN | ({"cta_allowed"} if link else set())
    return tuple(name for name in CHECKS if name in wanted)


def checks_for(contract: ZoneContract) -> tuple[str, ...]:
    """The checks `run_checks` runs for a zone: its contract's plus the hard ones, in report order."""
    return _names_for(contract.checks, contract.link)


def run_checks(inp: CheckInput) -> tuple[CheckFailure, ...]:
    """Every failure of the zone's checks, in `CHECKS` order; empty means publishable. Never raises."""
    failures: list[CheckFailure] = []
    for name in checks_for(inp.contract):
        try:
            failure = CHECKS[name](inp)
        except Exception as exc:  # a bug in a check must not publish an unchecked zone
            failure = CheckFailure(name, "check_error", type(exc).__name__)
        if failure is not None:
            failures.append(failure)
    return tuple(failures)


# -- the campaign's approved vocabulary ----------------------------------------------------

_NO_VOCABULARY = ApprovedVocabulary(frozenset(), frozenset(), frozenset(), frozenset(), frozenset())


def _approved_copy(campaign: Campaign) -> list[str]:
    """Every literal a page may show as the campaign wrote it (pattern slots cut out)."""
    texts = [p.text for p in campaign.proof_library]
    texts += [c.label for c in campaign.ctas]
    texts += [c.text for c in campaign.default_copy.values()]
    texts += [c.text for s in campaign.segments.values() for c in s.zones.values()]
    for by_zone in campaign.patterns.values():
        for patterns in by_zone.values():
            for pattern in patterns:
                # Each literal part on its own: words on either side of a slot are not neighbours.
                texts += [part for part in _SLOT_RE.split(pattern) if part.strip()]
    return texts


def build_vocabulary(campaign: Campaign) -> ApprovedVocabulary:
    """The campaign's approved names, numbers and terms; build once per campaign, not per draft."""
    terms = [t for t in campaign.vocabulary if t.strip()]
    copy = _approved_copy(campaign)
    words: set[str] = set()
    for text in (*terms, *copy):
        words.update(_WORDS_RE.findall(_fold(text)))
    term_numbers: set[str] = set()
    for term in terms:
        for spec in _specifics(term):
            if spec.kind == "number":
                term_numbers.update(_number_keys(spec))
    contexts: set[tuple[str, str]] = set()
    for text in copy:
        for spec in _specifics(text):
            if spec.kind == "number":
                neighbours = _neighbours(text, spec.start, spec.end)
                for key in _number_keys(spec):
                    contexts.update((key, w) for w in neighbours if w)
    return ApprovedVocabulary(
        words=frozenset(words),
        term_words=frozenset(w for t in terms for w in _WORDS_RE.findall(_fold(t))),
        terms=frozenset(k for k in (_spaced(_fold(t)).strip() for t in terms) if k),
        numbers=frozenset(term_numbers),
        number_contexts=frozenset(contexts),
    )
