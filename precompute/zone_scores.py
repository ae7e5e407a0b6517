"""Three scores per written draft, kept apart: voice, relevance to the fact, value to the reader's role.

One number would hide which of three things a line got wrong: a line can sound right and say
nothing about the account, or name the fact and mean nothing to the person reading. Each
score is 0..1, deterministic, and recorded per written zone (a link zone shows its CTA's
approved label, so it has none) in the explain record beside the checks
(`welcomemat explain`); none decides publication on its own: the checks do (`voice` is the
`off_voice` check's measure, the model's own confidence stays `min_model_confidence`'s).

- voice: share of the voice profile's dimensions the text stays within
  (`welcomemat.campaign.voice.voice_score`); None when the campaign has no profile.
- relevance: share of the cited facts the text refers to, by one of the fact's own values
  (round, role, location, person ...) or two words of its statement beyond the account's name;
  0 when no fact is cited.
- role_value: how much the text speaks to what the reader's function cares about, read from the
  account's contacts' titles (sales, marketing, enablement, operations, leadership): each of
  that function's words the text uses counts a half, up to 1. With no title known, the reader is
  `any` and every function's words count.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from precompute.context import GovernedContext, TrustedFact
from precompute.specifics import analyse, fold, spaced_words
from welcomemat.campaign.voice import VoiceProfile, voice_score

__all__ = ["ROLE_CONCERNS", "ZoneScores", "reader_role", "score_draft"]

# Function -> (words in a title that say it, words in a line that speak to it).
ROLE_CONCERNS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = MappingProxyType(
    {
        "sales": (
            ("sales", "revenue", "sdr", "bdr", "account executive", "business development", "cro", "seller"),
            (
                "sales",
                "sellers",
                "reps",
                "rep",
                "sdr",
                "sdrs",
                "ae",
                "aes",
                "quota",
                "pipeline",
                "meeting",
                "meetings",
                "deals",
                "calls",
                "ramp",
                "ramped",
                "ramps",
                "hire",
                "hires",
                "hiring",
            ),
        ),
        "marketing": (
            ("marketing", "demand", "growth", "brand", "cmo", "content"),
            ("pipeline", "campaign", "leads", "demand", "message", "messaging", "market", "launch", "story"),
        ),
        "enablement": (
            ("enablement", "training", "learning", "onboarding", "coach"),
            (
                "onboarding",
                "onboard",
                "onboards",
                "coaching",
                "playbook",
                "talk",
                "tracks",
                "ramp",
                "ramped",
                "ramps",
                "training",
            ),
        ),
        "operations": (
            ("operations", "ops", "revops", "systems", "crm"),
            ("crm", "metrics", "process", "data", "forecast", "consistent", "same"),
        ),
        "leadership": (
            ("ceo", "founder", "coo", "president", "chief", "managing director", "owner", "vp", "head"),
            (
                "growth",
                "growing",
                "team",
                "teams",
                "weeks",
                "faster",
                "productive",
                "funding",
                "scale",
                "scaling",
                "market",
            ),
        ),
    }
)
_STATEMENT_STOP = frozenset(
    "a an and the of in on at to for with from by is are was were has have had its it this that "
    "new our your their as into over per".split()
)
_TOKEN_RE = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class ZoneScores:
    """The three scores of one draft (see the module docstring)."""

    voice: float | None
    relevance: float
    role_value: float
    role: str  # the reader's function the role value was scored for (`any`: no title known)

    def as_record(self) -> dict[str, float | str | None]:
        return {
            "voice": self.voice,
            "relevance": self.relevance,
            "role_value": self.role_value,
            "role": self.role,
        }


def reader_role(titles: Sequence[str]) -> str:
    """The reader's function from the contacts' job titles: the first function a title names
    (in `ROLE_CONCERNS` order), else `any`."""
    spaced = [spaced_words(fold(t)) for t in titles if t]
    for function, (title_words, _) in ROLE_CONCERNS.items():
        if any(f" {word} " in s for s in spaced for word in title_words):
            return function
    return "any"


def _refers_to(words: frozenset[str], spaced: str, fact: TrustedFact, account_words: frozenset[str]) -> bool:
    for value in fact.fields.values():
        key = spaced_words(fold(value))
        if key.strip() and key in spaced:
            return True
    statement = set(_TOKEN_RE.findall(fold(fact.statement))) - _STATEMENT_STOP - account_words
    return len(statement & words) >= 2


def score_draft(
    text: str, context: GovernedContext, fact_ids: Sequence[str], profile: VoiceProfile | None
) -> ZoneScores:
    """The draft's three scores, as the module docstring defines them."""
    folded = analyse(text)
    words = frozenset(folded.words)
    cited = [f for f in context.facts if f.id in fact_ids]
    account_words = frozenset(_TOKEN_RE.findall(fold(f"{context.account.name} {context.short_name}")))
    referred = sum(1 for f in cited if _refers_to(words, folded.spaced, f, account_words))
    role = reader_role([c.title or "" for c in context.account.contacts])
    functions = ROLE_CONCERNS.values() if role == "any" else [ROLE_CONCERNS[role]]
    concerns = {w for _, line_words in functions for w in line_words}
    return ZoneScores(
        voice=voice_score(text, profile) if profile is not None else None,
        relevance=round(referred / len(cited), 3) if cited else 0.0,
        role_value=min(1.0, 0.5 * len(concerns & words)),
        role=role,
    )
