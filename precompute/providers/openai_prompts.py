"""What the `openai` provider sends and expects: the structured-output models, the prompts,
the data block, and each request's body built once.

`PageDraft` and `PageReview` are the answers' strict JSON schemas (the request's
`response_format`); the prompts are the files in `prompts/`, filled with the campaign's
voice and rules; the source material goes in one `<data>` block as compact JSON with `<`
and `>` escaped, so no value can close the block. `request_body` encodes a request the way
the client would, with the system prompt and the schema encoded once
(`precompute.providers.openai_provider` says why).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from openai.lib._pydantic import to_strict_json_schema  # what `.parse()` itself uses
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from welcomemat.campaign.voice import Spread, VoiceProfile, longest_sentence_allowed

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

__all__ = [
    "PROMPTS_DIR",
    "PROMPT_FILES",
    "M",
    "PageDraft",
    "PageReview",
    "ZoneVerdict",
    "ZoneWrite",
    "clip",
    "data_block",
    "generation_system",
    "listed",
    "load_prompts",
    "request_body",
    "response_format",
    "review_system",
    "validation_problem",
    "voice_profile_prompt",
]

PROMPTS_DIR = Path(__file__).with_name("prompts")
PROMPT_FILES = ("generate_system.txt", "generate_user.txt", "review_system.txt", "extract_system.txt")


# -- structured output ---------------------------------------------------------------------


class ZoneWrite(BaseModel):
    """What the model writes for one zone."""

    model_config = ConfigDict(extra="forbid")

    zone_id: str
    text: str
    fact_ids: list[str]
    cta_id: str | None
    confidence: float = Field(ge=0.0, le=1.0)


class PageDraft(BaseModel):
    """The generation call's answer: one entry per requested zone id."""

    model_config = ConfigDict(extra="forbid")

    zones: list[ZoneWrite]


class ZoneVerdict(BaseModel):
    """The self-review's judgement of one drafted zone."""

    model_config = ConfigDict(extra="forbid")

    zone_id: str
    ok: bool
    reason: str


class PageReview(BaseModel):
    """The self-review call's answer."""

    model_config = ConfigDict(extra="forbid")

    zones: list[ZoneVerdict]


M = TypeVar("M", bound=BaseModel)


# -- prompts and data ----------------------------------------------------------------------


@cache
def response_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The structured-output request for `schema` (strict JSON schema), built once per model class."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "strict": True, "schema": to_strict_json_schema(schema)},
    }


def _json(value: object) -> bytes:
    # As the client itself encodes a `body`: UTF-8, compact (the C encoder).
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@cache
def _response_format_json(schema: type[BaseModel]) -> bytes:
    return _json(response_format(schema))


@lru_cache(maxsize=64)
def _system_message_json(content: str) -> bytes:
    # System prompts are per campaign (see `_generation_system`): encoded once, not per call.
    return _json({"role": "system", "content": content})


def request_body(
    model: str, messages: Sequence[ChatCompletionMessageParam], schema: type[BaseModel]
) -> bytes:
    """The chat completion request as JSON bytes: `model`, `messages`, and `schema` as `response_format`.

    What the client would encode from the same dict, built from parts encoded once where
    they repeat (the system prompt, the schema) rather than once per call.
    """
    encoded = []
    for message in messages:
        content = message.get("content")
        # Only the exact shape the cached encoding stands for ({"role": "system", "content": ...}).
        if message["role"] == "system" and isinstance(content, str) and list(message) == ["role", "content"]:
            encoded.append(_system_message_json(content))
        else:
            encoded.append(_json(message))
    return (
        b'{"model":'
        + _json(model)
        + b',"messages":['
        + b",".join(encoded)
        + b'],"response_format":'
        + _response_format_json(schema)
        + b"}"
    )


@cache
def load_prompts(folder: Path = PROMPTS_DIR) -> Mapping[str, str]:
    """The prompt files by name, read once per process."""
    return {name: (folder / name).read_text(encoding="utf-8") for name in PROMPT_FILES}


def data_block(payload: object) -> str:
    """`payload` as JSON for a `<data>` block: `<` and `>` escaped, so no value can end the block."""
    # Compact: `indent` would switch json to its pure-Python encoder (twice the CPU, more tokens).
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def _voice(voice: str) -> str:
    return " ".join(voice.split()) or "Plain, specific and warm."


def voice_profile_prompt(profile: VoiceProfile | None, examples: tuple[str, ...]) -> str:
    """The campaign's voice profile as constraints, and its example lines as few-shot: what the
    `voice` check will hold each zone to, said before the model writes (empty without a profile)."""
    if profile is None:
        return ""
    s = profile.sentence_words
    shown = {"i": '"I"', "we": '"we"', "you": '"you"', "greeting": "a greeting", "hedge": "a hedge word"}
    used = [shown[p] for p in ("we", "you", "i") if profile.person.get(p)]
    never = [shown[p] for p in ("i", "we", "you") if not profile.person.get(p)]
    kinds = [shown[k] for k in ("i", "we", "you", "greeting", "hedge") if k not in profile.opener_kinds]

    def at_most(spread: Spread, name: str) -> str:
        return f"no {name}" if spread.max == 0 else f"at most {spread.max:g} {name}"

    rules = [
        f"- Sentences of {s.min:g} to {s.max:g} words (median {s.median:g}); never over "
        f"{longest_sentence_allowed(profile)}.",
        f"- Write as {' and '.join(used) or 'neither I, we nor you'}"
        + (f"; never as {' or '.join(never)}." if never else "."),
        f"- Open sentences as the examples do (most often: {', '.join(profile.openers)})"
        + (f"; never with {', '.join(kinds)}." if kinds else "."),
        f"- Per zone: {at_most(profile.hedges_per_line, 'hedge words (maybe, might, perhaps, I think)')}, "
        f"{at_most(profile.exclamations_per_line, 'exclamation marks')}, "
        f"{at_most(profile.questions_per_line, 'question marks')}, "
        f"{at_most(profile.dashes_per_line, 'dashes')}, "
        f"{at_most(profile.colons_per_line, 'colons')}; at most {profile.commas_per_sentence.max:g} commas "
        "a sentence.",
        f"- Plain words: a reading grade (Flesch-Kincaid) of {profile.reading_grade.max:g} or less.",
    ]
    shots = [f"- {json.dumps(e, ensure_ascii=False)}" for e in examples]
    return "\n".join(
        [
            "The campaign's voice, measured from its own example lines (code checks every zone against it):",
            *rules,
            "Lines in this voice (for their sound only: they are not facts about the account):",
            *shots,
            "",
        ]
    )


# The system prompts are the same for every account of a campaign: formatted once per
# campaign and policy (a handful per process), not once per call.
@lru_cache(maxsize=64)
def generation_system(
    template: str,
    tenant: str,
    campaign_name: str,
    voice: str,
    voice_profile: str,
    banned_phrases: tuple[str, ...],
    banned_openers: tuple[str, ...],
    prohibited_claims: tuple[str, ...],
) -> str:
    return template.format_map(
        {
            "tenant": tenant,
            "campaign_name": campaign_name,
            "voice": _voice(voice),
            "voice_profile": voice_profile,
            "banned_phrases": listed(banned_phrases),
            "banned_openers": listed(banned_openers),
            "prohibited_claims": listed(c.replace("_", " ") for c in prohibited_claims),
        }
    )


@lru_cache(maxsize=64)
def review_system(template: str, voice: str) -> str:
    return template.format_map({"voice": _voice(voice)})


def listed(items: Iterable[str]) -> str:
    quoted = [json.dumps(i, ensure_ascii=False) for i in items]
    return ", ".join(quoted) if quoted else "(none)"


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def validation_problem(exc: ValidationError) -> str:
    # Locations and messages only: the input values may be long or hostile.
    parts = [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()[:5]]
    return "the answer does not match the schema (" + "; ".join(parts) + ")"
