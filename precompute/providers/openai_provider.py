"""The `openai` provider: any OpenAI-compatible model writes the zones; code decides what is kept.

Why it is built this way:

* One generation call per account (every zone its pages show), structured output
  (`PageDraft`, a pydantic model whose strict JSON schema is the request's
  `response_format`): per zone `text`, the `fact_ids` it relies on, a `cta_id` chosen
  from the campaign's CTAs and a `confidence`. In a link zone the text shown is the
  chosen CTA's approved label, never the model's words, and the model never writes a URL:
  the href comes from the campaign.
* The source material (trusted facts, the account's short name, the zone contracts, the
  CTAs, the approved vocabulary) goes in one `<data>` block as JSON, with `<` and `>`
  escaped so no value can close the block; the prompts say that an instruction inside the
  data is data. That is a soft control: the deterministic checks that every draft passes
  in `precompute.assemble` are the hard one (a model obeying a planted instruction writes
  text those checks refuse).
* Malformed output (JSON that does not validate, a refusal, a reply cut off at
  `finish_reason == "length"`) gets at most one repair call per request, which quotes the
  problem; after that the page's zones are declined (`malformed_output`, or `model_refused`
  for a refusal), never published unchecked.
* Self-review (`self_review=True`, the default): a second call per request judges every draft
  against the zone's purpose and the supplied facts (wrong entity, unsupported implication,
  tone) and answers `ok` per zone. It can only REMOVE a zone (a draft judged not ok,
  `self_review_rejected` with the reviewer's note, or not judged at all,
  `self_review_no_verdict`, is declined and takes the fallback); it never adds, rewrites or
  rescues one, and whatever it approves still goes through every deterministic check. A
  rejected draft rides along in its `Decline`: the pipeline holds it for a person to approve.
* Every zone without a draft says why, as a `Decline` (reason code from `welcomemat.reasons`
  and a note): `explain`, QA and the admin preview show it.
* Faults: one retry layer, ours. The client is built with `max_retries=0` and every HTTP
  call goes through `ResilientCaller.call` (breaker, backoff with jitter, Retry-After up to
  a cap, per-call timeout capped by the job's deadline). 429, 5xx, timeouts and connection
  errors are `RetryableError`. Faults are not decisions (`precompute.provider_faults`): an
  endpoint that refuses us whoever the account is (401, 403, 404, a 400 naming an unknown
  model) raises `ProviderFault` at once, and so do retryable faults once the retries are used
  up (its cause: timeout, connection, 429, 5xx, the deadline; a circuit opened by them keeps
  their cause). The account is deferred: a version already published is kept, and the next
  run asks again. Any other HTTP error (a 400 about this request) declines the page
  (`endpoint_error`), a decision like a bad answer.
* Research extraction (`OpenAIProvider.extract_facts`): dated facts from an account's raw
  `sources`, kept only when their `evidence` is a verbatim substring of the source text
  (whitespace aside, see `precompute.providers.extraction`); kept facts then face the
  trust policy like any other fact.
* CPU: a run of hundreds of accounts at once is bound by the client's CPU, not by the
  model's latency (bench/README.md, `bench_llm.py`). So each request goes out through the
  client's generic `post` (its documented way to send a raw request: same base URL, auth,
  headers, timeout and error types as `chat.completions.create`), with the schema and the
  system prompts built once, and the reply is read as bytes and validated by pydantic in
  one pass. `create` walks every message through the SDK's type transforms on each call
  and `.parse()` rebuilds the schema too: together that cost more CPU than the HTTP
  exchange itself. The data block is compact JSON (the C encoder; fewer tokens as well).
  The body goes to `post` already encoded (`request_body`: the bytes the client would
  make of the same dict, with the system prompt and the schema encoded once), and the
  client's transport keeps one connection per thread instead of httpx's shared pool
  (`precompute.providers.http_transport`).

Calls per account: 1 (generation) + 1 (self-review), + at most 1 repair.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any, Generic

import openai
from pydantic import ValidationError

from precompute.claims.support import account_keys, recency_valid_until
from precompute.context import GovernedContext, TrustedFact
from precompute.provider_faults import FaultCause, ProviderFault
from precompute.providers.base import Decline, GenerationRequest, GenerationResult, ProviderUsage, ZoneDraft
from precompute.providers.extraction import MAX_SOURCE_CHARS, MAX_SOURCES, ExtractedFacts, verified_facts
from precompute.providers.http_transport import ThreadConnectionTransport
from precompute.providers.offline import OfflineComposer
from precompute.providers.openai_prompts import (
    PROMPT_FILES,
    M,
    PageDraft,
    PageReview,
    ZoneVerdict,
    clip,
    data_block,
    generation_system,
    listed,
    load_prompts,
    request_body,
    review_system,
    validation_problem,
    voice_profile_prompt,
)
from welcomemat.bounded_json import decode_json
from welcomemat.errors import ConfigError, InputError, ProviderUnavailable
from welcomemat.reasons import ZoneReason
from welcomemat.records.accounts import Account
from welcomemat.settings import Settings
from welcomemat.storage.breaker import CircuitBreaker
from welcomemat.storage.resilience import Deadline, ResilientCaller, RetryableError
from welcomemat.zones.contract import ZoneContract

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "PROVIDER_VERSION",
    "OpenAIProvider",
]

# Part of the fingerprint, hence of every account's input hash: bump it whenever the
# provider's output for the same model and prompts could change, so zone sets are redone.
# Not bumped when only a declined zone's reason code changed: the page text is the same, and
# redoing every account would pay for every model call again. Sets published before keep
# the legacy reason "declined" until their inputs change (read as an unknown code, shown as is).
# 2: compact JSON in the data block; 3: time-relative words cap a draft's valid_until (recency).
PROVIDER_VERSION = "openai-provider/3"


DEFAULT_TIMEOUT_S = 30.0  # per HTTP attempt; the caller caps it by the job's remaining time
_COMPLETIONS_PATH = "/chat/completions"  # relative to the client's base URL, as `create` sends it
_REPAIR_QUOTE_CHARS = 4_000  # how much of a malformed answer the repair call shows the model
_PROBLEM_CHARS = 600  # how much of a validation error the repair call and the notes quote
# Bytes of one answer read (a chat completion of a page of zones is a few KB).
_ANSWER_MAX_BYTES = 4_000_000

# Endpoint answers that say nothing about the account: the same for every request until fixed.
_ENDPOINT_FAULTS = {401: FaultCause.UNAUTHORIZED, 403: FaultCause.FORBIDDEN, 404: FaultCause.NOT_FOUND}
_MODEL_NOT_FOUND_RE = re.compile(r"\bmodel\b.*\b(?:not found|does not exist|unknown)\b", re.I | re.S)

_RELATIVE_DAY_WORDS = frozenset({"today", "tonight", "tomorrow", "yesterday"})
_RELATIVE_WEEK_WORDS = frozenset(
    {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "week"}
)
_WORD_RE = re.compile(r"[^\W_]+")


# -- the provider --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Reply(Generic[M]):
    """One logical call's outcome: the parsed answer, or the problem and what was written."""

    parsed: M | None
    problem: str = ""
    content: str | None = None
    refused: bool = False  # the problem is a refusal or a content filter, not a malformed answer


@dataclass
class _Tally:
    """What one request spent (for its GenerationResult)."""

    calls: int = 0
    attempts: int = 0
    tokens: int = 0
    notes: list[str] = field(default_factory=list)
    declined: dict[str, Decline] = field(default_factory=dict)

    def decline(
        self, zone_ids: Iterable[str], reason: ZoneReason, note: str = "", draft: ZoneDraft | None = None
    ) -> None:
        """The first reason given for a zone stands: a later step failing does not hide it."""
        for zone_id in zone_ids:
            if zone_id not in self.declined:
                self.declined[zone_id] = Decline(reason=reason, note=note, draft=draft)


class _Declined(Exception):
    """The provider refused the request (a non-retryable HTTP error): decline, do not retry."""


def _endpoint_fault(exc: openai.APIStatusError) -> ProviderFault | None:
    """The fault a non-retryable HTTP answer is, or None when it is about this request (declined)."""
    what = f"HTTP {exc.status_code} from the model endpoint"
    message = exc.message if isinstance(exc.message, str) else ""
    if exc.code == "model_not_found" or (
        exc.status_code in (400, 404) and _MODEL_NOT_FOUND_RE.search(message) is not None
    ):
        return ProviderFault(FaultCause.MODEL_NOT_FOUND, what)
    cause = _ENDPOINT_FAULTS.get(exc.status_code)
    return ProviderFault(cause, what) if cause is not None else None


def _retryable_cause(exc: BaseException) -> FaultCause | None:
    """The cause of a retryable fault, from the client's exception it was raised from."""
    if isinstance(exc, openai.APITimeoutError):  # before APIConnectionError: it is one
        return FaultCause.TIMEOUT
    if isinstance(exc, openai.APIConnectionError):
        return FaultCause.CONNECTION
    if isinstance(exc, openai.RateLimitError):
        return FaultCause.RATE_LIMITED
    if isinstance(exc, openai.InternalServerError):
        return FaultCause.SERVER_ERROR
    return None


@dataclass(frozen=True)
class _Usage:
    """An answer's `usage`: what the provider bills for it."""

    input: int = 0
    output: int = 0
    total: int = 0


def _count(value: object) -> int:
    # A count the provider could mean: a whole number in range. Anything else counts 0 rather
    # than losing an answer that is otherwise good (the cost line then under-counts, never guesses).
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**12 else 0


def _usage(value: object) -> _Usage:
    """`prompt_tokens` in, `completion_tokens` out; `total_tokens` when given, else their sum."""
    if not isinstance(value, dict):
        return _Usage()
    spent_in, spent_out = _count(value.get("prompt_tokens")), _count(value.get("completion_tokens"))
    return _Usage(spent_in, spent_out, _count(value.get("total_tokens")) or spent_in + spent_out)


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None  # an HTTP date: rare from model APIs; backoff applies


def _valid_until(text: str, cited: Sequence[TrustedFact], ctx: GovernedContext) -> date | None:
    """When a time-relative draft stops being true: "yesterday" tomorrow, "on Thursday" a week on,
    "this week" on Monday, "recently" a month after its fact (`precompute.facts.recency`)."""
    as_of = ctx.as_of
    ends = []
    recency = recency_valid_until(text, account_keys(ctx), cited, as_of)
    if recency is not None:
        ends.append(recency)
    words = {w.casefold() for w in _WORD_RE.findall(text)}
    if words & _RELATIVE_DAY_WORDS:
        ends.append(as_of + timedelta(days=1))
    elif words & _RELATIVE_WEEK_WORDS:
        if not cited:
            ends.append(as_of + timedelta(days=1))
        else:
            # A weekday names one past day only within the week; after that it is ambiguous.
            ends.append(min(f.published_at for f in cited) + timedelta(days=7))
    return min(ends, default=None)


class OpenAIProvider:
    """Writes zones with an OpenAI-compatible model. Implements `Provider`."""

    name = "openai"

    def __init__(
        self,
        client: openai.OpenAI,
        *,
        model: str,
        caller: ResilientCaller,
        self_review: bool = True,
    ) -> None:
        self._client = client
        self.model = model
        self._caller = caller
        self.self_review = self_review
        self._prompts = load_prompts()
        self._composer = OfflineComposer()  # fills the campaign's patterns as few-shot examples
        self._lock = threading.Lock()
        self._calls = 0
        self._tokens = 0
        self._input_tokens = 0  # the answers' `usage`: prompt and completion tokens, for the cost
        self._output_tokens = 0
        # The cause of the last retryable fault: an open circuit defers accounts for that cause.
        self._last_cause: FaultCause | None = None

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        concurrency: int = 1,
        deadline_s: float | None = None,
        self_review: bool = True,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_attempts: int = 3,
        breaker_threshold: int = 5,
        breaker_reset_s: float = 30.0,
        retry_after_cap_s: float = 20.0,
        backoff_base_s: float = 0.5,
        backoff_cap_s: float = 8.0,
    ) -> OpenAIProvider:
        """The provider for `OPENAI_BASE_URL` / `WELCOMEMAT_MODEL`; the deadline starts now."""
        if not settings.openai_base_url:
            raise ConfigError(
                "OPENAI_BASE_URL is not set: the openai provider needs an OpenAI-compatible endpoint "
                "(e.g. https://api.openai.com/v1)"
            )
        if not settings.model:
            raise ConfigError("WELCOMEMAT_MODEL is not set: the openai provider needs a model name")
        # The limits apply to the pool httpx keeps for a proxy named in the environment; calls
        # without one go through one connection per thread (`ThreadConnectionTransport`: CPU).
        limits = type(openai.DEFAULT_CONNECTION_LIMITS)(
            max_connections=max(1000, 2 * concurrency), max_keepalive_connections=max(100, concurrency)
        )
        client = openai.OpenAI(
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key or "unset",  # local servers often need none
            max_retries=0,  # one retry layer only: ResilientCaller's, which counts every attempt
            timeout=timeout_s,
            http_client=openai.DefaultHttpxClient(limits=limits, transport=ThreadConnectionTransport()),
        )
        caller = ResilientCaller(
            CircuitBreaker(breaker_threshold, breaker_reset_s),
            Deadline(deadline_s) if deadline_s is not None else None,
            max_attempts=max_attempts,
            timeout_s=timeout_s,
            retry_after_cap_s=retry_after_cap_s,
            backoff_base_s=backoff_base_s,
            backoff_cap_s=backoff_cap_s,
        )
        return cls(client, model=settings.model, caller=caller, self_review=self_review)

    def close(self) -> None:
        """Close the client's connections (a long-lived process may keep the provider instead)."""
        self._client.close()

    # -- Provider ------------------------------------------------------------------------------

    def fingerprint(self) -> str:
        # Not the base URL or key: the same model behind another gateway writes the same zones.
        h = hashlib.sha256()
        for part in (self.name, PROVIDER_VERSION, self.model, f"self_review={self.self_review}"):
            h.update(part.encode() + b"\x00")
        for name in PROMPT_FILES:
            h.update(name.encode() + b"\x00" + self._prompts[name].encode() + b"\x00")
        return h.hexdigest()

    def usage(self) -> ProviderUsage:
        with self._lock:
            calls, tokens = self._calls, self._tokens
            input_tokens, output_tokens = self._input_tokens, self._output_tokens
        return ProviderUsage(
            model_calls=calls,
            retries=self._caller.retries,
            breaker_openings=self._caller.breaker.openings,
            tokens=tokens,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            model=self.model,
        )

    def generate(self, request: GenerationRequest) -> GenerationResult:
        tally = _Tally()
        drafts: dict[str, ZoneDraft] = {}
        every_zone = [z.id for z in request.zones]
        try:
            messages = self._generation_messages(request)
            reply = self._ask(messages, PageDraft, tally)
            repaired = reply.parsed is None
            if reply.parsed is None:
                reply = self._ask(self._repair(messages, reply, tally, "generation"), PageDraft, tally)
            if reply.parsed is None:
                why = ZoneReason.MODEL_REFUSED if reply.refused else ZoneReason.MALFORMED_OUTPUT
                tally.decline(every_zone, why, f"after one repair: {reply.problem}")
            else:
                drafts = self._drafts(request, reply.parsed, tally)
                if self.self_review and drafts:
                    drafts = self._review(request, drafts, tally, repair_left=not repaired)
        except _Declined as exc:
            tally.decline(every_zone, ZoneReason.ENDPOINT_ERROR, str(exc))
            drafts = {}
        return GenerationResult(
            drafts=drafts,
            declined={k: v for k, v in tally.declined.items() if k not in drafts},
            model_calls=tally.calls,
            tokens=tally.tokens,
            retries=tally.attempts - tally.calls,
            notes=tuple(tally.notes),
        )

    # -- research extraction -------------------------------------------------------------------

    def extract_facts(self, account: Account, fact_types: Sequence[str]) -> list[dict[str, Any]]:
        """Facts from the account's raw `sources`, evidence checked verbatim (see `verified_facts`).

        One call (plus at most one repair) per account with sources; none without. Raises
        ProviderUnavailable like `generate`; a malformed or refused answer extracts nothing.
        """
        sources = {f"s{i}": s for i, s in enumerate(account.sources[:MAX_SOURCES], 1) if s.text.strip()}
        if not sources or not fact_types:
            return []
        payload = {
            "company": account.name,
            "sources": [
                {"source_id": k, "published_at": s.published_at, "text": s.text[:MAX_SOURCE_CHARS]}
                for k, s in sources.items()
            ],
        }
        system = self._prompts["extract_system.txt"].format_map({"fact_types": listed(fact_types)})
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {"role": "user", "content": f"<data>\n{data_block(payload)}\n</data>"},
        ]
        tally = _Tally()
        try:
            reply = self._ask(messages, ExtractedFacts, tally)
            if reply.parsed is None:
                reply = self._ask(self._repair(messages, reply, tally, "extraction"), ExtractedFacts, tally)
        except _Declined:
            return []
        if reply.parsed is None:
            return []
        return verified_facts(reply.parsed.facts, sources)

    # -- calls ---------------------------------------------------------------------------------

    def _ask(self, messages: list[ChatCompletionMessageParam], schema: type[M], tally: _Tally) -> _Reply[M]:
        """One logical call through the ResilientCaller: retried faults, parsed or described answer."""
        started = False
        body = request_body(self.model, messages, schema)  # the same bytes for every attempt

        def attempt(timeout_s: float) -> _Reply[M]:
            nonlocal started
            tally.attempts += 1
            if not started:
                started = True
                tally.calls += 1
                with self._lock:
                    self._calls += 1
            try:
                # `post` rather than `chat.completions.create`: see the module docstring (CPU).
                # The client still maps every HTTP fault to the same exception types below.
                raw = self._client.post(
                    _COMPLETIONS_PATH,
                    cast_to=bytes,
                    content=body,
                    options={"timeout": timeout_s},
                )
            except openai.RateLimitError as exc:
                self._last_cause = FaultCause.RATE_LIMITED
                raise RetryableError(_retry_after(exc.response.headers.get("retry-after"))) from exc
            # APITimeoutError is an APIConnectionError; InternalServerError is every 5xx.
            except (openai.InternalServerError, openai.APIConnectionError) as exc:
                self._last_cause = _retryable_cause(exc)
                raise RetryableError() from exc
            except openai.APIStatusError as exc:
                fault = _endpoint_fault(exc)
                if fault is not None:  # not retried: the next attempt would get the same answer
                    raise fault from exc
                raise _Declined(f"HTTP {exc.status_code} from the model endpoint") from exc
            return self._read(raw, schema, tally)

        try:
            return self._caller.call(attempt)
        except ProviderFault:
            raise
        except ProviderUnavailable as exc:  # retries used up, circuit open, deadline reached
            raise ProviderFault(self._unavailable_cause(exc), str(exc)) from exc

    def _unavailable_cause(self, exc: ProviderUnavailable) -> FaultCause:
        """Why the caller gave up: the last retryable fault's cause, else the deadline's or the circuit's."""
        retryable = exc.__cause__  # the last RetryableError, raised from the client's exception
        original = retryable.__cause__ if retryable is not None else None
        cause = _retryable_cause(original) if original is not None else None
        if cause is not None:
            return cause
        if "deadline" in str(exc):  # `ResilientCaller` gave up before any attempt failed
            return FaultCause.DEADLINE
        return self._last_cause or FaultCause.UNAVAILABLE

    def _read(self, raw: bytes, schema: type[M], tally: _Tally) -> _Reply[M]:
        """The answer validated against `schema`, or the problem a repair call should name."""
        try:
            body = decode_json(raw, max_bytes=_ANSWER_MAX_BYTES)
            choice = body["choices"][0]
            message = choice.get("message") or {}
            content = message.get("content")
            usage = _usage(body.get("usage"))
        except InputError as exc:  # a body no decoder should follow (nesting, huge numbers, size)
            return _Reply(None, f"the answer could not be read: {exc.message}", None)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            return _Reply(None, "the answer could not be read: not a chat completion", None)
        tally.tokens += usage.total
        with self._lock:
            self._tokens += usage.total
            self._input_tokens += usage.input
            self._output_tokens += usage.output
        finish = choice.get("finish_reason")
        if finish == "length":
            return _Reply(None, "the answer was cut off (finish_reason length): answer more briefly", content)
        if finish == "content_filter":
            return _Reply(None, "the answer was stopped by a content filter", content, refused=True)
        if message.get("refusal"):
            problem = clip(f"the answer is a refusal: {message['refusal']}", _PROBLEM_CHARS)
            return _Reply(None, problem, content, refused=True)
        if not isinstance(content, str) or not content.strip():
            return _Reply(None, "the answer is empty", content if isinstance(content, str) else None)
        try:
            return _Reply(schema.model_validate_json(content), "", content)
        except ValidationError as exc:
            return _Reply(None, validation_problem(exc), content)

    def _repair(
        self, messages: list[ChatCompletionMessageParam], reply: _Reply[Any], tally: _Tally, what: str
    ) -> list[ChatCompletionMessageParam]:
        tally.notes.append(f"{what}: repairing ({clip(reply.problem, _PROBLEM_CHARS)})")
        repaired = list(messages)
        if reply.content:
            repaired.append({"role": "assistant", "content": clip(reply.content, _REPAIR_QUOTE_CHARS)})
        repaired.append(
            {
                "role": "user",
                "content": (
                    f"Your answer could not be used: {clip(reply.problem, _PROBLEM_CHARS)}. "
                    "Answer again with JSON only, matching the schema exactly, following every rule above."
                ),
            }
        )
        return repaired

    # -- generation ----------------------------------------------------------------------------

    def _generation_messages(self, request: GenerationRequest) -> list[ChatCompletionMessageParam]:
        campaign, policy = request.campaign, request.policy
        system = generation_system(
            self._prompts["generate_system.txt"],
            campaign.tenant,
            campaign.name,
            campaign.voice,
            voice_profile_prompt(campaign.voice_profile, campaign.voice_examples),
            policy.banned_phrases,
            policy.banned_openers,
            policy.prohibited_claims,
        )
        user = self._prompts["generate_user.txt"].format_map(
            {"page_id": request.page_id, "data": data_block(self._generation_payload(request))}
        )
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def _generation_payload(self, request: GenerationRequest) -> dict[str, Any]:
        ctx, campaign = request.context, request.campaign
        types = frozenset().union(*(z.fact_types for z in request.zones)) or frozenset(
            f.type for f in ctx.facts
        )
        segment = campaign.segments.get(ctx.account.segment)
        # Few-shot: the campaign's human patterns filled from these facts (the offline
        # composer, no network), else the segment's approved copy for the zone.
        examples = self._composer.generate(request).drafts
        zones = []
        for contract in request.zones:
            example = examples.get(contract.id)
            copy = (segment.zones if segment else campaign.default_copy).get(contract.id)
            zones.append(
                {
                    "zone_id": contract.id,
                    "purpose": contract.purpose,
                    "max_words": contract.max_words,
                    "max_chars": contract.max_chars,
                    "link": contract.link,
                    "needs_fact": contract.requires_fact,
                    "fact_types": sorted(contract.fact_types),
                    "example": example.text if example else (copy.text if copy else None),
                    "example_fact_ids": list(example.fact_ids) if example else [],
                }
            )
        return {
            "account": {"name": ctx.short_name, "segment": segment.label if segment else ctx.account.segment},
            "as_of": ctx.as_of.isoformat(),
            "facts": [
                {
                    "id": f.id,
                    "type": f.type,
                    "statement": f.statement,
                    "published_at": f.published_at.isoformat(),
                    "source_url": f.source_url,
                }
                for f in ctx.facts
                if f.type in types
            ],
            "zones": zones,
            "ctas": [{"id": c.id, "label": c.label} for c in campaign.ctas],
            "vocabulary": list(campaign.vocabulary),
        }

    def _drafts(self, request: GenerationRequest, page: PageDraft, tally: _Tally) -> dict[str, ZoneDraft]:
        wanted: dict[str, ZoneContract] = {z.id: z for z in request.zones}
        ctx = request.context
        drafts: dict[str, ZoneDraft] = {}
        for item in page.zones:
            contract = wanted.get(item.zone_id)
            if contract is None or item.zone_id in drafts:
                continue  # a zone nobody asked for, or a second answer for one: ignored
            text = item.text.strip()
            cta_id: str | None = None
            if contract.link:
                if not item.cta_id:  # choosing no CTA is how the model leaves a link zone out
                    tally.decline([contract.id], ZoneReason.MODEL_DECLINED, "no cta_id chosen")
                    continue
                cta = request.campaign.cta(item.cta_id)
                if cta is None:
                    note = f"cta_id {clip(item.cta_id, 80)!r} is not a campaign CTA"
                    tally.decline([contract.id], ZoneReason.UNKNOWN_CTA, note)
                    continue
                text, cta_id = cta.label, cta.id  # the approved label, never the model's words
            if not text:
                tally.decline([contract.id], ZoneReason.MODEL_DECLINED)
                continue
            fact_ids = tuple(dict.fromkeys(item.fact_ids))
            cited = [f for f in (ctx.fact(i) for i in fact_ids) if f is not None]
            drafts[contract.id] = ZoneDraft(
                zone_id=contract.id,
                text=text,
                fact_ids=fact_ids,
                cta_id=cta_id,
                confidence=item.confidence,
                valid_until=_valid_until(text, cited, ctx),
            )
            tally.declined.pop(contract.id, None)  # declined by an earlier entry, drafted by this one
        tally.decline(sorted(wanted.keys() - drafts.keys()), ZoneReason.NO_ANSWER)
        return drafts

    # -- self-review ---------------------------------------------------------------------------

    def _review(
        self, request: GenerationRequest, drafts: dict[str, ZoneDraft], tally: _Tally, *, repair_left: bool
    ) -> dict[str, ZoneDraft]:
        """Only removes: a draft survives if the review judged it, and judged it ok."""
        ctx = request.context
        contracts = {z.id: z for z in request.zones}
        payload = {
            "account": ctx.short_name,
            "facts": [
                {
                    "id": f.id,
                    "type": f.type,
                    "statement": f.statement,
                    "published_at": f.published_at.isoformat(),
                }
                for f in ctx.facts
            ],
            "zones": [
                {
                    "zone_id": d.zone_id,
                    "purpose": contracts[d.zone_id].purpose,
                    "text": d.text,
                    "fact_ids": list(d.fact_ids),
                }
                for d in drafts.values()
            ],
        }
        system = review_system(self._prompts["review_system.txt"], request.campaign.voice)
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {"role": "user", "content": f"<data>\n{data_block(payload)}\n</data>"},
        ]
        reply = self._ask(messages, PageReview, tally)
        if reply.parsed is None and repair_left:
            reply = self._ask(self._repair(messages, reply, tally, "self-review"), PageReview, tally)
        if reply.parsed is None:
            tally.decline(drafts, ZoneReason.SELF_REVIEW_UNUSABLE, reply.problem)
            return {}
        verdicts: dict[str, ZoneVerdict] = {}
        for judged in reply.parsed.zones:
            verdicts.setdefault(judged.zone_id, judged)
        kept: dict[str, ZoneDraft] = {}
        for zone_id, draft in drafts.items():
            verdict = verdicts.get(zone_id)
            if verdict is not None and verdict.ok:
                kept[zone_id] = draft
            elif verdict is not None:
                # Held, not lost: the pipeline keeps the draft for a person (`welcomemat.zones.held`).
                tally.decline([zone_id], ZoneReason.SELF_REVIEW_REJECTED, verdict.reason, draft)
            else:
                tally.decline([zone_id], ZoneReason.SELF_REVIEW_NO_VERDICT)
        return kept
