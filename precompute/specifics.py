"""What counts as a specific claim in zone text, and which facts support it.

Why a module of its own: a specific but false line is worse than a general one, so
`precompute.checks.check_unsupported_specifics` fails any number, date or name that
nothing the draft may rely on supports. Finding those claims (digits, number words,
dates, runs of capitalised words) and deciding what backs them (the cited facts, the
account, the campaign's approved vocabulary) is most of the checks' code and cost; the
check itself only turns the first unsupported one into a failure. The text folding every
check compares by lives here too, because specifics are found and supported in it.

The heuristic:

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
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import NamedTuple

from precompute.context import GovernedContext, TrustedFact
from welcomemat.campaign.contract import Campaign

__all__ = [
    "UPPERCASE_CLASS",
    "ApprovedVocabulary",
    "FoldedText",
    "Specific",
    "acronyms",
    "analyse",
    "approved_copy_texts",
    "build_vocabulary",
    "find_specifics",
    "first_unsupported",
    "fold",
    "spaced_words",
    "uncited_source",
]

_TEXT_CACHE_SIZE = 4_096  # one entry per distinct draft text; every check of a draft reuses it
_SUPPORT_CACHE_SIZE = 16_384  # one entry per fact / account: a fact supports all zones of its account
_MAX_NUMBER_DIGITS = 30  # longer digit runs are compared as written, not as values
_NEIGHBOUR_WINDOW = 40  # characters searched on either side of a number for its neighbouring word


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


def fold(text: str) -> str:
    """Casefolded, accents and invisible format characters (soft hyphen, ZWSP) removed."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(c for c in decomposed if not unicodedata.combining(c) and unicodedata.category(c) != "Cf")
    return kept.casefold().translate(_PUNCT_MAP)


def spaced_words(folded: str) -> str:
    """Words separated by single spaces, padded: `" w1 w2 "`, so `" phrase " in` is a whole-word match."""
    return " " + " ".join(_WORDS_RE.findall(folded)) + " "


class FoldedText(NamedTuple):
    """One draft text, normalised once and shared by every check (pure, so cached)."""

    folded: str  # folded, whitespace collapsed, punctuation kept (claims patterns)
    spaced: str  # folded words only (banned phrases, company names)
    words: tuple[str, ...]


@lru_cache(maxsize=_TEXT_CACHE_SIZE)
def analyse(text: str) -> FoldedText:
    """`text` folded, with whitespace collapsed, and split into words; cached per distinct text."""
    folded = " ".join(fold(text).split())
    words = tuple(_WORDS_RE.findall(folded))
    return FoldedText(folded=folded, spaced=" " + " ".join(words) + " ", words=words)


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


# Inside `[...]` in a pattern: what may start a name (and a company name, `precompute.checks`).
UPPERCASE_CLASS = _uppercase_class()
# A capitalised word: an upper- or titlecase letter not inside another word, then letters
# or digits, apostrophe and hyphen parts ("Dymaxa's", "O'Brien", "Seed-stage", "B2B").
_CAPITALISED_WORD = rf"[{UPPERCASE_CLASS}][^\W_]*(?:['’][^\W\d_]+)*(?:-[^\W_]+)*"
# Capitalised words written together, joined by spaces or "&" ("Acme Revenue", "AT & T").
_CAPITALISED_RUN_RE = re.compile(
    rf"(?<!\w)(?<!\w['’-]){_CAPITALISED_WORD}(?:(?:[ \t]+|[ \t]*&[ \t]*){_CAPITALISED_WORD})*"
)
_ROUND_RE = re.compile(r"\bseries\s+[a-h]\b", re.IGNORECASE)
_NEXT_WORD_RE = re.compile(r"[\W_]*([^\W_]+)")


class Specific(NamedTuple):  # a NamedTuple: built for every specific of every draft
    """One number, date or name found in a text, and what it is compared by."""

    kind: str  # "number" | "date" | "name"
    text: str  # as written, for the failure's detail
    key: str  # numbers: value key; dates: iso / weekday / month / quarter / relative word; rounds: phrase
    currency: str = ""  # numbers: "usd", "eur"... when the draft names one
    token: str = ""  # numbers inside a word ("b2b"): the folded word
    words: tuple[str, ...] = ()  # names: folded words; none for a funding round, matched as a phrase
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
        words = analyse(text).words  # usually cached already: a plain number is one word of it
        if words.count(number) == 1:
            i = words.index(number)
            return (words[i - 1] if i else "", words[i + 1] if i + 1 < len(words) else "")
    # The word before is the first word of the reversed text before `start`: a forward
    # match, where a search anchored at the end would retry from every position.
    before = _NEXT_WORD_RE.match(text[max(0, start - _NEIGHBOUR_WINDOW) : start][::-1])
    after = _NEXT_WORD_RE.match(text, end, end + _NEIGHBOUR_WINDOW)
    return (fold(before.group(1)[::-1]) if before else "", fold(after.group(1)) if after else "")


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
    return fold(word) if any(c.isalpha() for c in word) else ""


def _number(text: str, start: int, end: int, key: str, token: str = "") -> Specific:
    """A number found at text[start:end]: its currency, percent sign and neighbouring words."""
    currency, start = _currency_before(text, start)
    return Specific(
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


def _digit_specifics(text: str) -> list[Specific]:
    found: list[Specific] = []
    for m in _digit_matches(text):
        iso, digits, mag, magw, pct = m.group("iso", "digits", "mag", "magw", "pct")
        if iso:
            y, mo, da = (int(p) for p in iso.split("-"))
            found.append(Specific("date", m.group(0), f"{y:04d}-{mo:02d}-{da:02d}"))
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


def _word_specifics(text: str) -> list[Specific]:
    """Number words, date words and names in `text`."""
    folded_words = analyse(text).words
    found = _special_words(text, folded_words) if not _SPECIAL_WORDS.isdisjoint(folded_words) else []
    found += _names(text)
    return found


def _special_words(text: str, folded_words: tuple[str, ...]) -> list[Specific]:
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
    found: list[Specific] = []
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
                found.append(Specific("date", text[start:end], _DATE_ABBREVIATIONS.get(word, word)))
        else:
            found.append(Specific("date", text[start:end], word))
    if run:
        found.append(_number_words(text, run))
    return found


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c in "'’"


def _joins(gap: str) -> bool:
    return gap == "-" or (gap.isspace() and "\n" not in gap)


def _number_words(text: str, run: list[tuple[int, int, str]]) -> Specific:
    start, end = run[0][0], run[-1][1]
    pct = _PERCENT_AFTER_RE.match(text, end)
    key = str(_words_value(word for _, _, word in run)) + ("%" if pct else "")
    return _number(text, start, pct.end() if pct else end, key)


def _names(text: str) -> list[Specific]:
    """Runs of capitalised words: "Globex", "Series A", "Acme Revenue", "SDRs".

    A sentence's first word is capitalised anyway, and a lone capital letter is an article
    or an initial: neither starts a name (both may continue one: "Series A"). ALL-CAPS-like
    words ("SDRs", "GmbH") are names wherever they stand. Stopwords and number or date
    words end a name.
    """
    found: list[Specific] = []
    for m in _CAPITALISED_RUN_RE.finditer(text):
        run, offset = m.group(0), m.start()
        start = end = pos = 0
        words: list[str] = []
        for i, token in enumerate(run.split()):
            pos = run.find(token, pos)
            word = token[:-2] if token[-2:] in ("'s", "’s", "'S") else token
            folded = word.lower() if word.isascii() else fold(word)
            if folded.isalnum():
                parts = [folded]
                special = folded in _SPECIAL_WORDS
            else:
                parts = _WORDS_RE.findall(folded)
                special = not parts or all(p in _SPECIAL_WORDS for p in parts)
            if special or folded in _STOPWORDS:
                if words:
                    found.append(
                        Specific("name", text[offset + start : offset + end], "", "", "", tuple(words))
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
            found.append(Specific("name", text[offset + start : offset + end], "", "", "", tuple(words)))
    return found


def _sentence_start(text: str, at: int) -> bool:
    before = text[:at].rstrip(_OPENING_PUNCTUATION)
    return not before or before[-1] in _SENTENCE_END


def find_specifics(text: str, personal: bool) -> tuple[Specific, ...]:
    """Every number, date and name in `text`, then (personal copy only) each funding round."""
    specifics = _specifics(text)
    if personal and "series" in analyse(text).words:
        rounds = _rounds(text)
        if rounds:
            return (*specifics, *rounds)
    return specifics


@lru_cache(maxsize=_TEXT_CACHE_SIZE)
def _rounds(text: str) -> tuple[Specific, ...]:
    """Each funding round ("Series B") in `text`: a name without words, matched as a phrase."""
    return tuple(
        Specific("name", found, spaced_words(fold(found)).strip()) for found in _ROUND_RE.findall(text)
    )


@lru_cache(maxsize=_TEXT_CACHE_SIZE)
def _specifics(text: str) -> tuple[Specific, ...]:
    """Every number, date and name in `text` (pure, so cached: a fact's text recurs)."""
    if _DIGIT_RE.search(text) is None:
        return tuple(_word_specifics(text))
    return (*_digit_specifics(text), *_word_specifics(text))


def _number_keys(spec: Specific) -> tuple[str, ...]:
    """The keys a number registers under as support: bare, and with its currency if it has one."""
    return (spec.key, spec.currency + spec.key) if spec.currency else (spec.key,)


# -- what supports a specific: account and cited facts --------------------------------------


class _Support(NamedTuple):
    words: frozenset[str]
    spaced: str  # all texts, spaced, for phrase checks ("series a")
    numbers: frozenset[str]
    dates: frozenset[str]


# Two to six capitalised words in a row ("Chief Revenue Officer"): their initials are the
# acronym people write for them ("CRO").
_ACRONYM_RUN_RE = re.compile(r"\b[A-Z][\w'’-]*(?:[ \t]+(?:of[ \t]+|and[ \t]+|&[ \t]+)?[A-Z][\w'’-]*){1,5}")


def acronyms(text: str) -> list[str]:
    """The acronyms of `text`'s runs of capitalised words, folded: "Chief Revenue Officer" -> "cro"."""
    out = []
    for m in _ACRONYM_RUN_RE.finditer(text):
        initials = "".join(w[0] for w in m.group(0).split() if w[:1].isupper())
        if len(initials) >= 2:
            out.append(initials.lower())
    return out


def _support_from(texts: Iterable[str], numbers: Iterable[str] = (), dates: Iterable[str] = ()) -> _Support:
    """What a fact's or an account's texts support: their words, phrases, numbers and dates, and
    the acronyms of their capitalised names ("CRO" for "Chief Revenue Officer")."""
    # One pass over all texts joined: a newline stops numbers and phrases running across.
    joined = " \n ".join(t for t in texts if t)
    folded = fold(joined)
    words = _WORDS_RE.findall(folded) + acronyms(joined)
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
    spaced = " | ".join(spaced_words(line) for line in folded.split("\n"))
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


def first_unsupported(
    specifics: Iterable[Specific],
    *,
    context: GovernedContext,
    cited: tuple[TrustedFact, ...],
    valid_until: date | None,
    vocabulary: ApprovedVocabulary,
    personal: bool,
) -> Specific | None:
    """The first specific that neither the account, the `cited` facts nor the vocabulary supports.

    `valid_until` is the draft's: only a draft that expires by tomorrow may say "today".
    """
    support = _cited_support(context, cited, valid_until)
    for spec in specifics:
        if not _supported(spec, support, vocabulary, personal):
            return spec
    return None


def uncited_source(
    spec: Specific, facts: tuple[TrustedFact, ...], cited: tuple[TrustedFact, ...], personal: bool
) -> str | None:
    """What among the account's `facts` the draft did not cite would support `spec`, or None.

    "fact <id>" for a fact that states it; for a number, "<n> <type> facts" when the account
    has that many facts of one type ("four SDRs" citing none of the four hiring facts).
    """
    for fact in facts:
        if fact in cited:
            continue
        if _supported(spec, (_fact_support(fact),), _NO_VOCABULARY, personal):
            return f"fact {fact.id}"
    if spec.kind == "number":
        counts: dict[str, int] = {}
        for fact in facts:
            counts[fact.type] = counts.get(fact.type, 0) + 1
        for fact_type, count in sorted(counts.items()):
            if str(count) == spec.key:
                return f"{count} {fact_type} facts"
    return None


def _cited_support(
    ctx: GovernedContext, cited: tuple[TrustedFact, ...], valid_until: date | None
) -> tuple[_Support, ...]:
    """The account's and each cited fact's support, plus counts and relative days.

    Not merged into one: each part stays cached, and a lookup in a few small sets is cheaper.
    """
    counts: dict[str, int] = {}
    for fact in cited:
        counts[fact.type] = counts.get(fact.type, 0) + 1
    relative: tuple[str, ...] = ()
    if valid_until is not None and valid_until <= ctx.as_of + timedelta(days=1):
        # A time-relative word is true for at most a day, and only if the draft says so.
        ages = {(ctx.as_of - f.published_at).days for f in cited}
        relative = tuple(w for w, age in _RELATIVE_DAYS.items() if age in ages)
    extra = _counts_support(frozenset(counts.values()), relative)
    return (_account_support(ctx), *(_fact_support(f) for f in cited), extra)


@lru_cache(maxsize=256)
def _counts_support(counts: frozenset[int], relative: tuple[str, ...]) -> _Support:
    return _Support(frozenset(), " ", frozenset(str(n) for n in counts), frozenset(relative))


def _supported(spec: Specific, parts: tuple[_Support, ...], v: ApprovedVocabulary, personal: bool) -> bool:
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
    if not spec.words:  # a funding round: only a fact or the account says it, as a phrase
        return any(f" {spec.key} " in p.spaced for p in parts)
    return all(w in v.words or any(w in p.words for p in parts) for w in spec.words)


# -- the campaign's approved vocabulary ----------------------------------------------------


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


_SLOT_RE = re.compile(r"\{[^{}]*\}")  # a pattern's slot ("{role}"): not approved copy
_NO_VOCABULARY = ApprovedVocabulary(frozenset(), frozenset(), frozenset(), frozenset(), frozenset())


def approved_copy_texts(campaign: Campaign) -> list[str]:
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
    copy = approved_copy_texts(campaign)
    words: set[str] = set()
    for text in (*terms, *copy):
        words.update(_WORDS_RE.findall(fold(text)))
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
        term_words=frozenset(w for t in terms for w in _WORDS_RE.findall(fold(t))),
        terms=frozenset(k for k in (spaced_words(fold(t)).strip() for t in terms) if k),
        numbers=frozenset(term_numbers),
        number_contexts=frozenset(contexts),
    )
