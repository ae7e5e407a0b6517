"""A campaign's voice, measured from its example lines, and a line measured against it.

A sales team describes a rep's voice by pointing at lines that sound right. A campaign does
the same with `voice_examples` (5 to 30 lines, strong and everyday ones); `derive_profile`
turns them into a `VoiceProfile`, the numbers a line can be held to without a model:

- sentence length: words per sentence (min, median, max);
- openers: the words sentences open with most, and the kinds of opener used at all
  (`we`, `you`, `i`, `greeting`, `hedge`, `other`);
- hedging: hedge words per line (maybe, might, perhaps, probably, I think ...);
- grammatical person: uses of `i` (I, me, my), `we` (we, us, our) and `you` (you, your);
- punctuation rhythm: exclamation marks, question marks, dashes and colons per line,
  commas per sentence;
- reading level: the Flesch-Kincaid grade, 0.39 × words/sentence + 11.8 × syllables/word
  − 15.59, syllables counted by vowel groups (a silent final e dropped, at least one a word).
  Only lines of `GRADE_MIN_WORDS` words or more are held to it. It is computed here rather
  than by a readability library: the usual one downloads a
  pronouncing dictionary at run time, and the grade must be the same on every machine.

The profile is an artifact, like a lock file: `welcomemat voice build` writes it into
`campaign.yaml` beside the examples, stamped with the examples' hash, so it is part of the
guideline bundle and its hash, and a change of examples is a guideline change. `voice_failures`
holds a line to it, each dimension with a tolerance wide enough for the examples' own lines
(and lines like them) to pass: a line fails only beyond what any example does.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MAX_VOICE_EXAMPLES",
    "MIN_VOICE_EXAMPLES",
    "OPENER_KINDS",
    "PROFILE_VERSION",
    "VOICE_DIMENSIONS",
    "LineVoice",
    "Spread",
    "VoiceFailure",
    "VoiceProfile",
    "derive_profile",
    "examples_sha256",
    "longest_sentence_allowed",
    "measure",
    "voice_failures",
    "voice_score",
]

MIN_VOICE_EXAMPLES = 5
MAX_VOICE_EXAMPLES = 30
PROFILE_VERSION = 1

# The dimensions a line is held to, in the order a failure is reported (`off_voice:<dimension>`).
VoiceDimension = Literal[
    "sentence_length",
    "person",
    "opener",
    "hedging",
    "exclamation",
    "question",
    "dash",
    "colon",
    "comma",
    "reading_level",
]
VOICE_DIMENSIONS: tuple[VoiceDimension, ...] = get_args(VoiceDimension)
OpenerKind = Literal["we", "you", "i", "greeting", "hedge", "other"]
OPENER_KINDS: tuple[OpenerKind, ...] = ("we", "you", "i", "greeting", "hedge", "other")

# Tolerances: how far past the examples' own extremes a line may go before it is off voice.
# Sentences: the longest example's length plus half of it, at least 6 words more.
SENTENCE_SLACK_FACTOR = 0.5
SENTENCE_SLACK_MIN = 6
HEDGE_SLACK = 1  # one hedge more than the most hedged example line
COMMA_SLACK = 1  # one comma per sentence more than the most any example sentence has
GRADE_SLACK = 4.0  # grade levels past the hardest example line
# The grade is held only on lines this long: on a headline of six words, one name of three
# syllables moves it by two grades, so it says nothing about the voice there.
GRADE_MIN_WORDS = 12

_SENTENCE_END_RE = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+")
_WORD_RE = re.compile(r"[^\W_](?:[\w'’.-]*[^\W_])?")
_VOWEL_GROUPS_RE = re.compile(r"[aeiouy]+")
_DASHES = ("—", "–", " - ", "--")

_PERSON_WORDS: dict[str, tuple[str, ...]] = {
    "i": ("i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself"),
    "we": ("we", "we're", "we've", "we'd", "we'll", "us", "our", "ours", "ourselves"),
    "you": ("you", "you're", "you've", "you'd", "you'll", "your", "yours", "yourself", "yourselves"),
}
_PERSON_OF = {word: person for person, words in _PERSON_WORDS.items() for word in words}
_GREETINGS = frozenset({"hi", "hey", "hello", "dear", "greetings", "howdy", "yo"})
# Single hedge words, and two-word hedges (matched on consecutive words).
_HEDGES = frozenset(
    {
        "maybe",
        "might",
        "perhaps",
        "possibly",
        "probably",
        "hopefully",
        "somewhat",
        "arguably",
        "presumably",
        "conceivably",
        "seemingly",
        "likely",
        "seems",
        "seem",
    }
)
_HEDGE_PAIRS = frozenset({("i", "think"), ("i", "guess"), ("sort", "of"), ("kind", "of"), ("i", "believe")})


def _spread_field(description: str, example: tuple[float, float, float]) -> Any:
    low, mid, high = example
    return Field(description=description, examples=[{"min": low, "median": mid, "max": high}])


class Spread(BaseModel):
    """Smallest, median and largest value of a measure over the example lines (or sentences)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    min: float = Field(description="The smallest value.", examples=[2.0])
    median: float = Field(description="The median value.", examples=[11.0])
    max: float = Field(
        description="The largest value: a line is held to it (with the slack of its dimension).",
        examples=[16.0],
    )


class VoiceProfile(BaseModel):
    """The voice of a campaign's example lines, in numbers: written by `welcomemat voice build`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(default=PROFILE_VERSION, description="How the profile was derived.", examples=[1])
    examples: int = Field(
        ge=MIN_VOICE_EXAMPLES,
        le=MAX_VOICE_EXAMPLES,
        description="How many example lines it read.",
        examples=[10],
    )
    examples_sha256: str = Field(
        pattern=r"^[0-9a-f]{64}$",
        description="SHA-256 of the example lines it was built from (order aside): a profile built from "
        "other examples is refused.",
        examples=["5d41e5400e60139dd0b5b8ca4279b2fe2518f71a3547b22541b672bd4396fd57"],
    )
    sentence_words: Spread = _spread_field("Words per sentence.", (2, 11, 16))
    openers: tuple[str, ...] = Field(
        description="The words the examples' sentences open with most (up to 5, most used first).",
        examples=[["new", "your", "a"]],
    )
    opener_kinds: dict[str, float] = Field(
        description="Share of the examples' sentences opening with each kind of word "
        "(`we`, `you`, `i`, `greeting`, `hedge`, `other`); a kind not listed is never used.",
        examples=[{"we": 0.07, "you": 0.14, "other": 0.79}],
    )
    hedges_per_line: Spread = _spread_field(
        "Hedge words (maybe, might, perhaps, I think ...) per line.", (0, 0, 0)
    )
    person: dict[str, int] = Field(
        description="Uses of `i` (I, me, my), `we` (we, us, our) and `you` (you, your) words in the "
        "examples.",
        examples=[{"i": 0, "we": 4, "you": 4}],
    )
    exclamations_per_line: Spread = _spread_field("Exclamation marks per line.", (0, 0, 0))
    questions_per_line: Spread = _spread_field("Question marks per line.", (0, 0, 1))
    dashes_per_line: Spread = _spread_field("Dashes (em, en, spaced hyphen, --) per line.", (0, 0, 0))
    colons_per_line: Spread = _spread_field("Colons per line.", (0, 0, 1))
    commas_per_sentence: Spread = _spread_field("Commas per sentence.", (0, 0, 2))
    reading_grade: Spread = _spread_field("Flesch-Kincaid grade of each line.", (2.31, 4.25, 6.88))


@dataclass(frozen=True, slots=True)
class LineVoice:
    """One line's measures, on the profile's scales."""

    sentence_words: tuple[int, ...]
    opener_words: tuple[str, ...]
    opener_kinds: tuple[OpenerKind, ...]
    hedges: int
    person: Counter[str]
    exclamations: int
    questions: int
    dashes: int
    colons: int
    commas_per_sentence: tuple[int, ...]
    grade: float


@dataclass(frozen=True, slots=True)
class VoiceFailure:
    """A dimension on which a line is off voice, with what was measured against what was allowed."""

    dimension: VoiceDimension
    detail: str


def _words(text: str) -> list[str]:
    return [w.lower().replace("’", "'").strip(".") for w in _WORD_RE.findall(text)]


def _sentences(text: str) -> list[str]:
    parts = [p.strip() for p in _SENTENCE_END_RE.split(" ".join(text.split()))]
    return [p for p in parts if _WORD_RE.search(p)]


def _syllables(word: str) -> int:
    letters = "".join(c for c in word.lower() if c.isalpha())
    if not letters:
        return 1  # a number is read as a word of one syllable
    count = len(_VOWEL_GROUPS_RE.findall(letters))
    if letters.endswith("e") and not letters.endswith(("le", "ee", "ye")) and count > 1:
        count -= 1  # a silent final e: "rate", "scale"
    return max(1, count)


def _opener_kind(word: str) -> OpenerKind:
    person = _PERSON_OF.get(word)
    if person == "i":
        return "i"
    if person == "we":
        return "we"
    if person == "you":
        return "you"
    if word in _GREETINGS:
        return "greeting"
    if word in _HEDGES:
        return "hedge"
    return "other"


def _hedge_count(words: Sequence[str]) -> int:
    singles = sum(1 for w in words if w in _HEDGES)
    return singles + sum(1 for pair in zip(words, words[1:], strict=False) if pair in _HEDGE_PAIRS)


@lru_cache(maxsize=4096)
def measure(text: str) -> LineVoice:
    """A line's measures (pure: the same text measures the same, whatever came before)."""
    sentences = _sentences(text) or [text]
    per_sentence = [_words(s) for s in sentences]
    words = [w for ws in per_sentence for w in ws]
    openers = tuple(ws[0] for ws in per_sentence if ws)
    counted = max(1, len(words))
    syllables = sum(_syllables(w) for w in words) or 1
    grade = 0.39 * (counted / max(1, len(sentences))) + 11.8 * (syllables / counted) - 15.59
    return LineVoice(
        sentence_words=tuple(len(ws) for ws in per_sentence),
        opener_words=openers,
        opener_kinds=tuple(_opener_kind(w) for w in openers),
        hedges=_hedge_count(words),
        person=Counter(_PERSON_OF[w] for w in words if w in _PERSON_OF),
        exclamations=text.count("!") + text.count("！"),
        questions=text.count("?") + text.count("？"),
        dashes=sum(text.count(d) for d in _DASHES),
        colons=text.count(":"),
        commas_per_sentence=tuple(s.count(",") for s in sentences),
        grade=round(grade, 2),
    )


def _spread(values: Iterable[float]) -> Spread:
    got = sorted(values) or [0.0]
    return Spread(min=got[0], median=round(float(statistics.median(got)), 2), max=got[-1])


def examples_sha256(examples: Iterable[str]) -> str:
    """The examples' hash, order aside: a profile records the one it was built from."""
    canonical = json.dumps(sorted(examples), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def derive_profile(examples: Sequence[str]) -> VoiceProfile:
    """The profile of 5 to 30 example lines; the same lines (in any order) give the same profile."""
    if not MIN_VOICE_EXAMPLES <= len(examples) <= MAX_VOICE_EXAMPLES:
        raise ValueError(
            f"needs {MIN_VOICE_EXAMPLES} to {MAX_VOICE_EXAMPLES} example lines, got {len(examples)}"
        )
    lines = [measure(e) for e in sorted(examples)]
    opener_counts = Counter(w for line in lines for w in line.opener_words)
    kinds = Counter(k for line in lines for k in line.opener_kinds)
    total_openers = max(1, sum(kinds.values()))
    person: Counter[str] = Counter()
    for line in lines:
        person.update(line.person)
    return VoiceProfile(
        examples=len(examples),
        examples_sha256=examples_sha256(examples),
        sentence_words=_spread(n for line in lines for n in line.sentence_words),
        openers=tuple(w for w, _ in sorted(opener_counts.items(), key=lambda i: (-i[1], i[0]))[:5]),
        opener_kinds={k: round(kinds[k] / total_openers, 3) for k in OPENER_KINDS if kinds[k]},
        hedges_per_line=_spread(line.hedges for line in lines),
        person={p: person[p] for p in ("i", "we", "you")},
        exclamations_per_line=_spread(line.exclamations for line in lines),
        questions_per_line=_spread(line.questions for line in lines),
        dashes_per_line=_spread(line.dashes for line in lines),
        colons_per_line=_spread(line.colons for line in lines),
        commas_per_sentence=_spread(n for line in lines for n in line.commas_per_sentence),
        reading_grade=_spread(line.grade for line in lines),
    )


def longest_sentence_allowed(profile: VoiceProfile) -> int:
    longest = profile.sentence_words.max
    return int(longest + max(SENTENCE_SLACK_MIN, SENTENCE_SLACK_FACTOR * longest))


def voice_failures(text: str, profile: VoiceProfile) -> tuple[VoiceFailure, ...]:
    """Every dimension on which `text` goes past what the profile's examples do, in report order."""
    line = measure(text)
    out: list[VoiceFailure] = []
    longest = max(line.sentence_words, default=0)
    if longest > longest_sentence_allowed(profile):
        out.append(
            VoiceFailure(
                "sentence_length",
                f"a sentence of {longest} words; the examples' longest is "
                f"{profile.sentence_words.max:g} (at most {longest_sentence_allowed(profile)})",
            )
        )
    unused = sorted(p for p, n in line.person.items() if n and not profile.person.get(p))
    if unused:
        out.append(VoiceFailure("person", f"writes as {'/'.join(unused)}, which no example does"))
    new_kinds = [
        k for k in dict.fromkeys(line.opener_kinds) if k != "other" and k not in profile.opener_kinds
    ]
    if new_kinds:
        out.append(
            VoiceFailure("opener", f"opens a sentence with a {new_kinds[0]} word, which no example does")
        )
    if line.hedges > profile.hedges_per_line.max + HEDGE_SLACK:
        out.append(
            VoiceFailure(
                "hedging",
                f"{line.hedges} hedge words; the examples use at most {profile.hedges_per_line.max:g} a line",
            )
        )
    marks: tuple[tuple[VoiceDimension, int, Spread, str], ...] = (
        ("exclamation", line.exclamations, profile.exclamations_per_line, "exclamation marks"),
        ("question", line.questions, profile.questions_per_line, "question marks"),
        ("dash", line.dashes, profile.dashes_per_line, "dashes"),
        ("colon", line.colons, profile.colons_per_line, "colons"),
    )
    for dimension, got, spread, name in marks:
        if got > spread.max:
            out.append(
                VoiceFailure(dimension, f"{got} {name}; the examples use at most {spread.max:g} a line")
            )
    commas = max(line.commas_per_sentence, default=0)
    if commas > profile.commas_per_sentence.max + COMMA_SLACK:
        out.append(
            VoiceFailure(
                "comma",
                f"{commas} commas in a sentence; the examples use at most "
                f"{profile.commas_per_sentence.max:g}",
            )
        )
    if sum(line.sentence_words) >= GRADE_MIN_WORDS and line.grade > profile.reading_grade.max + GRADE_SLACK:
        out.append(
            VoiceFailure(
                "reading_level",
                f"reading grade {line.grade:g}; the examples' hardest is {profile.reading_grade.max:g}",
            )
        )
    return tuple(out)


def voice_score(text: str, profile: VoiceProfile) -> float:
    """Share of the voice dimensions `text` stays within (1.0: on voice on every one)."""
    return round(1 - len(voice_failures(text, profile)) / len(VOICE_DIMENSIONS), 3)
