"""Grounding: a personal line may say only what its sources support (DESIGN.md, invariant 10).

Checks that look for false claims by their wording catch the wordings someone thought of. A
model phrases a false claim in words no list holds, so this decides the other way round, by
what a line is made of: every word of a personal line must come from somewhere.

A sentence is grounded whole when it is a sentence of approved copy as written, or of a
pattern written for a cited fact's type with its slots filled from the cited facts (the
offline composer's lines). Otherwise each word needs a source (compared by Snowball stem, case
and accents aside):

* the **cited facts**: statement, structured fields (their names too: a `role` field backs
  "role"), evidence, the acronyms of their names ("CRO"), and what the fact's type states
  (`grounding_words.TYPE_WORDS`: a hiring fact is a job opening);
* the **account record** as given: name, aliases, city, industry;
* the campaign's **approved copy**: patterns, segment and default copy, the proof library,
  CTA labels, voice examples, `vocabulary` and `approved_words`;
* words that assert nothing (`grounding_words`: grammar, greetings, light verbs) or that
  other checks judge (time words: `recency`, `unsupported_specifics`).

Stricter, because approved copy said them of someone else and a personal line says them of
this reader:

* a **name**, wherever it stands: a cited fact, the account, or a name the campaign writes;
* a **number** (digits or words): a cited fact, the count of cited facts, or the copy's own
  number beside the copy's own word in a sentence that does not name the account;
* a word that asserts an **event**, a **relationship**, the reader's **words or thoughts**,
  **role or state**, or a **count or rank** (`grounding_words.ASSERTING_WORDS`): a cited fact,
  or the copy's own phrase around it (three words of approved copy; four for an event or a
  count; never for what another fact type states: "new funding usually means" says this
  account raised money);
* what the **reader or the account is said to do or be** (the verb after "you" or the
  account's name, the predicate after "your ... is" or "Dymaxa is"): a cited fact. "You
  onboard every hire yourself" and "Dalgo is one of the Acme Revenue teams" are made of
  approved words and still say something new.

A line with any other word is not published as personal: it is held for a person with a
note naming the words nothing supports (`welcomemat.zones.held`, layer `grounding`); a person who
knows it true may approve it. Segment and default copy are the campaign's own approved lines
and are not grounded again.

Examples (not from the tests): for a funding fact "Pelto raised a Series B", "Congrats on the
Series B, Pelto" is grounded; "Pelto's board must be relieved" is held (board, relieved); "As a
longtime client, Pelto ramps fast" is held (longtime, client: a relationship the fact does not
state); "Loved hearing your take on ramp" is held (loved, hearing, take).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

import snowballstemmer

from precompute.claims.grounding_words import (
    ASSERTING_WORDS,
    COURTESY_WORDS,
    FUNCTION_WORDS,
    IRREGULAR_FORMS,
    JUDGED_ELSEWHERE,
    LIGHT_WORDS,
    NUMBER_WORDS,
    TYPE_WORDS,
)
from precompute.context import GovernedContext, TrustedFact
from precompute.specifics import acronyms, approved_copy_texts, fold
from welcomemat.campaign.contract import Campaign

__all__ = [
    "ASSERTING_STEMS",
    "TYPE_STATES",
    "GroundingSources",
    "approved_word_problem",
    "grounding_note",
    "grounding_sources",
    "ungrounded_words",
]

_STEMMER_LOCK = threading.Lock()  # a Snowball stemmer object keeps state between calls
_STEMMER = snowballstemmer.stemmer("english")
_STEM_CACHE_SIZE = 65_536  # distinct words across a run's drafts and sources
_SOURCES_CACHE_MAX = 16  # campaigns (and copy variants) alive at once
_WORD_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_APOSTROPHE_TAIL_RE = re.compile(r"['’][^\W\d_]*$")
_SENTENCE_END_RE = re.compile(r"[.!?:;]\s*$|^\s*$")
_SHOWN_WORDS = 6  # words named in a note


@lru_cache(maxsize=_STEM_CACHE_SIZE)
def _stem(word: str) -> str:
    """`word` (folded) as sources are compared: possessive and contraction cut, Snowball stem."""
    base = _APOSTROPHE_TAIL_RE.sub("", word)
    base = IRREGULAR_FORMS.get(base, base)
    with _STEMMER_LOCK:
        return str(_STEMMER.stemWord(base))


# What each type states, by stem.
TYPE_STATES: Mapping[str, frozenset[str]] = MappingProxyType(
    {fact_type: frozenset(_stem(w) for w in words) for fact_type, words in TYPE_WORDS.items()}
)

# The asserting words by stem (what a draft's words are compared by): stem -> class.
ASSERTING_STEMS: Mapping[str, str] = MappingProxyType(
    {_stem(word): kind for kind, words in ASSERTING_WORDS.items() for word in words}
)


def _words(text: str) -> list[str]:
    return _WORD_RE.findall(fold(text))


def _stems(texts: Iterable[str]) -> frozenset[str]:
    return frozenset(_stem(w) for text in texts for w in _words(text))


@dataclass(frozen=True)
class GroundingSources:
    """A campaign's approved copy as stems, built once per campaign (`grounding_sources`)."""

    copy: frozenset[str]  # every word of approved copy, vocabulary and approved words
    names: frozenset[str]  # words the copy writes as names (capitalised inside a sentence) and vocabulary
    sentences: frozenset[str]  # each sentence of approved copy as its folded words, space-separated
    patterns: Mapping[str, tuple[str, ...]]  # fact type -> the sentences of the patterns written for it
    trigrams: frozenset[tuple[str, str, str]]  # three folded words in a row in approved copy
    typed_trigrams: Mapping[str, frozenset[tuple[str, str, str]]]  # the same in each type's patterns
    quadgrams: frozenset[tuple[str, str, str, str]]  # four folded words in a row in approved copy
    numbers: frozenset[tuple[str, str]]  # (a number, a word beside it) as approved copy writes it


def _capitalised_inside(text: str) -> Iterable[str]:
    """Words written with a capital inside a sentence: the copy's names ("Acme Revenue", "SDRs")."""
    for m in _WORD_RE.finditer(text):
        before = text[: m.start()]
        if m.group(0)[:1].isupper() and not _SENTENCE_END_RE.search(before):
            yield m.group(0)


_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?:;])\s+")
_SLOT_RE = re.compile(r"\{[^{}]*\}")


def _split_sentences(text: str) -> list[str]:
    return [part for part in _SENTENCE_SPLIT_RE.split(text.strip()) if part.strip()]


def _key(sentence: str) -> str:
    """A sentence as its folded words: approved copy matches whatever its punctuation and case."""
    return " ".join(_APOSTROPHE_TAIL_RE.sub("", w) for w in _words(sentence))


def _whole_copy(campaign: Campaign) -> list[str]:
    """Every line of approved copy as written whole (segment, default, proof, CTA labels)."""
    texts = [p.text for p in campaign.proof_library]
    texts += [c.label for c in campaign.ctas]
    texts += [c.text for c in campaign.default_copy.values()]
    texts += [c.text for seg in campaign.segments.values() for c in seg.zones.values()]
    return texts


def _sentences_of(groups: Iterable[Iterable[str]]) -> list[str]:
    return [sentence for lines in groups for line in lines for sentence in _split_sentences(line)]


def _trigrams(words: list[str]) -> list[tuple[str, str, str]]:
    return [(words[i], words[i + 1], words[i + 2]) for i in range(len(words) - 2)]


def _quadgrams(words: list[str]) -> list[tuple[str, str, str, str]]:
    return [(words[i], words[i + 1], words[i + 2], words[i + 3]) for i in range(len(words) - 3)]


# What `{when}` may be filled with: up to three time or grammar words ("on Thursday", "this week").
_WHEN_WORDS = "|".join(
    sorted(re.escape(w) for w in JUDGED_ELSEWHERE | {"on", "in", "the", "this", "last", "earlier"})
)
_WHEN_FILL = rf"(?:(?:{_WHEN_WORDS}) ){{0,2}}(?:{_WHEN_WORDS})"
_COUNT_FILL = r"(?:[0-9]+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a|an)"


@lru_cache(maxsize=4_096)
def _pattern_regex(
    pattern_sentence: str, fills: tuple[tuple[str, tuple[str, ...]], ...]
) -> re.Pattern[str] | None:
    """A pattern's sentence as a regex over folded words, each slot only what the cited facts fill
    it with (`fills`: slot -> folded values); None when a slot has nothing to fill it."""
    by_slot = dict(fills)
    elements: list[str] = []
    for i, part in enumerate(_SLOT_RE.split(pattern_sentence)):
        if i:
            slot = _SLOT_NAMES.findall(pattern_sentence)[i - 1]
            if slot == "when":
                elements.append(_WHEN_FILL)
            elif slot == "role_count":
                elements.append(_COUNT_FILL)
            elif by_slot.get(slot):
                elements.append("(?:" + "|".join(re.escape(v) for v in by_slot[slot]) + ")")
            else:
                return None
        elements += [re.escape(w) for w in _key(part).split()]
    return re.compile(" ".join(elements))


_SLOT_NAMES = re.compile(r"\{([^{}]*)\}")


def _fills(
    context: GovernedContext, cited: tuple[TrustedFact, ...]
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """What each slot may be filled with: the cited facts' field values and the account's names."""
    values: dict[str, set[str]] = {}
    for fact in cited:
        for name, value in fact.fields.items():
            key = _key(value)
            if key:
                values.setdefault(name, set()).add(key)
    account = context.account
    values["account"] = {k for k in (_key(account.name), _key(context.short_name)) if k}
    values["account"] |= {k for k in map(_key, account.aliases) if k}
    return tuple(sorted((slot, tuple(sorted(v))) for slot, v in values.items()))


def _pattern_sentence(
    key: str,
    sources: GroundingSources,
    cited: tuple[TrustedFact, ...],
    fills: tuple[tuple[str, tuple[str, ...]], ...],
) -> bool:
    """Whether `key` is a sentence of a pattern written for a cited fact's type, filled from the facts."""
    for fact_type in {f.type for f in cited}:
        for sentence in sources.patterns.get(fact_type, ()):
            regex = _pattern_regex(sentence, fills)
            if regex is not None and regex.fullmatch(key):
                return True
    return False


_SOURCES: dict[int, tuple[Campaign, GroundingSources]] = {}
_SOURCES_LOCK = threading.Lock()


def grounding_sources(campaign: Campaign) -> GroundingSources:
    """The campaign's sources, cached by identity (a campaign object is immutable once loaded)."""
    cached = _SOURCES.get(id(campaign))
    if cached is not None and cached[0] is campaign:
        return cached[1]
    texts = [*approved_copy_texts(campaign), *campaign.voice_examples, *campaign.approved_words]
    terms = [t for t in campaign.vocabulary if t.strip()]
    whole = [*_whole_copy(campaign), *campaign.voice_examples]
    by_type = {
        fact_type: tuple(_sentences_of(by_zone.values()))
        for fact_type, by_zone in campaign.patterns.items()
        if any(by_zone.values())
    }
    literal = [part for lines in by_type.values() for line in lines for part in _SLOT_RE.split(line)]
    sources = GroundingSources(
        copy=_stems([*texts, *terms]),
        names=_stems([*terms, *(w for t in texts for w in _capitalised_inside(t))]),
        sentences=frozenset(_key(sentence) for text in whole for sentence in _split_sentences(text)),
        patterns=MappingProxyType(by_type),
        trigrams=frozenset(t for text in whole for t in _trigrams(_words(text))),
        typed_trigrams=MappingProxyType(
            {
                fact_type: frozenset(
                    t for line in lines for part in _SLOT_RE.split(line) for t in _trigrams(_words(part))
                )
                for fact_type, lines in by_type.items()
            }
        ),
        numbers=frozenset(pair for text in [*whole, *literal] for pair in _number_neighbours(text)),
        quadgrams=frozenset(q for text in whole for q in _quadgrams(_words(text))),
    )
    with _SOURCES_LOCK:
        if len(_SOURCES) >= _SOURCES_CACHE_MAX:
            _SOURCES.clear()
        _SOURCES[id(campaign)] = (campaign, sources)
    return sources


def _fact_stems(fact: TrustedFact) -> frozenset[str]:
    fields = tuple(f"{k.replace('_', ' ')} {v}" for k, v in sorted(fact.fields.items()))
    return _fact_text_stems(fact.statement, fact.type, fields, fact.evidence or "")


@lru_cache(maxsize=_STEM_CACHE_SIZE)
def _fact_text_stems(
    statement: str, fact_type: str, fields: tuple[str, ...], evidence: str
) -> frozenset[str]:
    """A fact's words: statement, its fields (names and values: a `role` field backs "role"),
    evidence, its type's name and what its type states (`TYPE_STATES`)."""
    own = _stems([statement, fact_type.replace("_", " "), *fields, evidence])
    initials = frozenset(acronyms(" \n ".join([statement, *fields])))  # "CRO" for "Chief Revenue Officer"
    return own | initials | TYPE_STATES.get(fact_type, frozenset())


def _account_stems(context: GovernedContext) -> frozenset[str]:
    account = context.account
    extra = account.model_extra or {}
    texts = [account.name, context.short_name, *account.aliases, account.industry or ""]
    texts += [str(extra.get("city") or "")]
    return _stems(texts)


def _title_case(text: str) -> bool:
    """Most longer words capitalised: a headline, where a capital says nothing about names."""
    longer = [w for w in _WORD_RE.findall(text) if len(w) >= 4]
    return len(longer) >= 3 and sum(w[:1].isupper() for w in longer) >= 0.6 * len(longer)


def _union(sets: Iterable[frozenset[str]]) -> frozenset[str]:
    return frozenset().union(*sets)


_FACT_ONLY = frozenset({"an event", "a count or rank"})  # asserting classes copy context never grounds
_DIGITS_RE = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
_COPULAS = frozenset({"is", "are", "was", "were", "s", "re"})


def _number_neighbours(text: str) -> list[tuple[str, str]]:
    """(number, word) for the word just before and just after each number in `text`."""
    out = []
    for m in _DIGITS_RE.finditer(text):
        number = m.group(0).replace(",", "")
        before = _words(text[: m.start()])[-1:]
        after = _words(text[m.end() :])[:1]
        out += [(number, w) for w in (*before, *after)]
    words = _words(text)
    for i, word in enumerate(words):
        value = NUMBER_WORDS.get(word)
        if value is not None:
            out += [(value, w) for w in (*words[max(0, i - 1) : i], *words[i + 1 : i + 2])]
    return out


def _digits(texts: Iterable[str]) -> frozenset[str]:
    return frozenset(d.replace(",", "") for t in texts for d in _DIGITS_RE.findall(t))


def _fact_digits(cited: tuple[TrustedFact, ...], *, with_dates: bool = True) -> frozenset[str]:
    """The numbers the cited facts give: in their texts, their publish dates, and how many of one
    type are cited ("4 SDRs" citing four hiring facts)."""
    texts = [t for f in cited for t in (f.statement, *f.fields.values(), f.evidence or "")]
    days = [str(x) for f in cited for x in (f.published_at.year, f.published_at.day)] if with_dates else []
    counts = [str(sum(1 for g in cited if g.type == f.type)) for f in cited]
    return _digits([*texts, *days, *counts])


def _names_account(key: str, fills: tuple[tuple[str, tuple[str, ...]], ...]) -> bool:
    names = dict(fills).get("account", ())
    return any(f" {name} " in f" {key} " for name in names)


_OFFER_MODALS = frozenset({"can", "could", "will", "would", "may", "might", "should"})


def _predicate_after(words: list[str], j: int) -> set[int]:
    """The first word after `j` that is not grammar: what a subject is said to do or be."""
    while j < len(words) and (words[j] in FUNCTION_WORDS or words[j] in JUDGED_ELSEWHERE):
        if words[j] in _OFFER_MODALS:
            return set()  # what we offer ("you can ramp ..."), not what the subject does
        j += 1
    return {j} if j < len(words) else set()


def _about_the_subject(words: list[str], account: frozenset[str]) -> set[int]:
    """Indexes of the words saying what the reader or the account does or is: the verb after
    "you" or the account's name ("Dymaxa onboards ..."), the predicate after "your ... is" or
    "Dymaxa is ...". They must come from a cited fact: "You onboard every hire yourself" and
    "Dalgo is one of the Acme Revenue teams" are made of approved words and say something new."""
    i = 0
    while i < len(words) and words[i] in COURTESY_WORDS:
        i += 1
    if i >= len(words):
        return set()
    first = _APOSTROPHE_TAIL_RE.sub("", words[i])
    possessive = first != words[i]
    if words[i] in {"you", "you're", "you've", "youre"} or (first in account and not possessive):
        return _predicate_after(words, i + 1)
    if words[i] == "your" or (first in account and possessive):
        for j in range(i + 1, min(len(words), i + 6)):
            if words[j] in _COPULAS:
                return _predicate_after(words, j + 1)
    return set()


def ungrounded_words(
    text: str, context: GovernedContext, cited: tuple[TrustedFact, ...], sources: GroundingSources
) -> list[tuple[str, str]]:
    """Each word of `text` no source supports, with what it would need: (word as written, why).

    A sentence of approved copy written out whole, or of a pattern for a cited fact's type filled
    from the cited facts, is grounded as it stands. Empty: the line is grounded. Pure; never raises.
    """
    fact_stems = _union(_fact_stems(f) for f in cited)
    own = _account_stems(context)
    ordinary = sources.copy | fact_stems | own
    named = sources.names | fact_stems | own
    fills = _fills(context, cited)
    digits = _fact_digits(cited)
    counted = _fact_digits(cited, with_dates=False)  # "six" is never a day of the month
    account_words = frozenset(
        _key(n) for n in (context.account.name, context.short_name, *context.account.aliases)
    )
    account_words = frozenset(w for n in account_words for w in n.split()[:1])  # a name's first word
    type_words = _union(TYPE_STATES.get(t, frozenset()) for t in TYPE_STATES) - _union(
        TYPE_STATES.get(f.type, frozenset()) for f in cited
    )
    quadgrams = sources.quadgrams
    trigrams = sources.trigrams.union(*(sources.typed_trigrams.get(f.type, frozenset()) for f in cited))
    headline = _title_case(text)
    out: list[tuple[str, str]] = []
    seen: set[str] = set()

    def refuse(written: str, why: str) -> None:
        if fold(written) not in seen:
            seen.add(fold(written))
            out.append((written, why))

    for sentence in _split_sentences(text):
        key = _key(sentence)
        if key in sources.sentences or _pattern_sentence(key, sources, cited, fills):
            continue
        # A number from a cited fact; or the copy's own number beside the copy's own word ("from 90
        # to 45 days"), in a sentence that does not make it the account's ("Dymaxa cut ramp time ...").
        copy_numbers = (
            set()
            if _names_account(key, fills)
            else {n for n, _ in set(_number_neighbours(sentence)) & sources.numbers}
        )
        for number in sorted(_digits([sentence]) - digits - copy_numbers):
            refuse(number, "a number no cited fact states")
        for word in _WORD_RE.findall(sentence):
            value = NUMBER_WORDS.get(fold(word))
            if value is not None and value not in counted and value not in copy_numbers:
                refuse(word, "a number no cited fact states")
        matches = list(_WORD_RE.finditer(sentence))
        folded_words = [fold(m.group(0)) for m in matches]
        reader = _about_the_subject(folded_words, account_words)
        for index, m in enumerate(matches):
            written = m.group(0)
            folded = folded_words[index]
            bare = _APOSTROPHE_TAIL_RE.sub("", folded)
            if (
                bare in FUNCTION_WORDS
                or folded in FUNCTION_WORDS
                or bare in COURTESY_WORDS
                or bare in LIGHT_WORDS
            ):
                continue
            if bare in JUDGED_ELSEWHERE:
                continue
            stem = _stem(folded)
            in_copy_context = any(
                t in trigrams for t in _trigrams(folded_words[max(0, index - 2) : index + 3]) if folded in t
            )
            in_long_context = any(
                q in quadgrams for q in _quadgrams(folded_words[max(0, index - 3) : index + 4]) if folded in q
            )
            if index in reader and stem not in fact_stems and not in_long_context:
                refuse(written, "what the account or the reader does or is, which no cited fact states")
                continue
            capital = written[:1].isupper()
            opening = index == 0 or bool(_SENTENCE_END_RE.search(sentence[: m.start()]))
            # A name: capitalised inside a sentence (not in a headline, where every word is), or
            # opening one without being an ordinary word of the sources. Names count wherever they stand.
            if capital and (not (opening or headline) or stem not in ordinary):
                if stem not in named:
                    refuse(written, "a name no cited fact, the account or the campaign's vocabulary gives")
                continue
            asserts = ASSERTING_STEMS.get(stem)
            if asserts is not None:
                # Said of this reader, it needs a cited fact. Approved copy's own phrase keeps the
                # sense the campaign approved: three words around it ("what already works"), four
                # for an event or a count ("open and close work"). Never for what another fact
                # type states: "new funding usually means" says this account raised money.
                if stem in type_words and asserts == "an event":
                    contextual = False
                elif asserts in _FACT_ONLY:
                    contextual = in_long_context
                else:
                    contextual = in_copy_context
                if stem not in fact_stems and not contextual:
                    refuse(written, f"{asserts} no cited fact states")
                continue
            if stem not in ordinary:
                refuse(written, "in no cited fact, account field or approved copy")
    return out


def grounding_note(found: list[tuple[str, str]]) -> str:
    """One line naming the unsupported words, for the held draft and `explain`."""
    shown = ", ".join(f"{w!r} ({why})" for w, why in found[:_SHOWN_WORDS])
    more = f", and {len(found) - _SHOWN_WORDS} more" if len(found) > _SHOWN_WORDS else ""
    return f"words nothing supports: {shown}{more}"


def approved_word_problem(word: str) -> str | None:
    """Why an `approved_words` entry is refused, or None: one plain word that asserts nothing."""
    words = _words(word)
    if len(words) != 1 or fold(word).strip() != words[0]:
        return f"{word!r} is not one plain word (letters only)"
    asserts = ASSERTING_STEMS.get(_stem(words[0]))
    if asserts is not None:
        return f"{word!r} asserts {asserts}: it must come from a cited fact, not from approved words"
    return None
