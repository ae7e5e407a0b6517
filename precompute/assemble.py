"""The fallback ladder, zone by zone: personal ▸ segment copy ▸ campaign default.

For one account: build the governed context, ask the provider for drafts (one call per
page, only when the account has a trusted fact and its identity allows claims), check
every draft, and keep each zone's personal draft only if every check passes. Anything
else takes the segment's human-written copy, or the campaign default when the segment
has none. Personal means specific (`precompute.specific_use`): a draft that passes every
check but uses no specific of the facts it cites (a generic line, a CTA label, a library
proof point) is published as it is written on the segment rung (`not_specific`), its cited
facts kept, so they still cap `valid_until` (the line was chosen because of them) and the
channels it may reach. Every zone records its rung and the reason for it (`welcomemat.reasons`), and a
zone the provider wrote no draft for keeps the provider's `Decline` (its note is for `explain`).

Doubt holds a draft rather than losing it (`welcomemat.zones.held`): a draft the self-review judged
not ok, or whose self-reported confidence is below `min_model_confidence`, falls back like
any other, but is kept with the layer's note, built as it would be published and with the
deterministic checks it fails (which make it unapprovable), for a person to approve.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time
from types import MappingProxyType

from precompute.checks import ApprovedVocabulary, CheckFailure, CheckInput, build_vocabulary, run_checks
from precompute.context import EffectivePolicy, GovernedContext
from precompute.context_builder import build_context
from precompute.provider_faults import FaultCause, fault_cause
from precompute.providers.base import (
    Decline,
    FactExtractor,
    GenerationRequest,
    GenerationResult,
    Provider,
    ZoneDraft,
)
from precompute.specific_use import specific_used
from precompute.zone_scores import ZoneScores, score_draft
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.experiment_assignment import variant_campaign, variant_for
from welcomemat.campaign.experiments import CopyVariant
from welcomemat.campaign.guidelines import guideline_hash
from welcomemat.campaign.sections import ZoneCopy
from welcomemat.errors import ContractError, ProviderUnavailable
from welcomemat.reasons import UNKNOWN_SEGMENT, ZoneReason, zone_reason
from welcomemat.records.accounts import Account, Fact
from welcomemat.security.markup import CleanedMarkup, clean_inline, markup_to_text
from welcomemat.security.urlgate import LinkAllowlist, gate_link
from welcomemat.zones.contract import ZoneContract, ZoneFallback
from welcomemat.zones.held import HeldDraft, HoldLayer
from welcomemat.zones.zoneset import CitedFact, Rung, ZoneContent, ZoneSet, ZoneSetMode, ZoneSetStatus

__all__ = [
    "AccountOutcome",
    "Assembler",
    "FallbackCopyError",
    "ZoneOutcome",
    "fallback_copy_problems",
    "neutral_context",
]


class FallbackCopyError(ContractError):
    """Human-written segment or default copy fails a check: the run must not start.

    `problems`: every failing copy, as (field path in campaign.yaml, message); the error
    itself reads as the first.
    """

    def __init__(self, problems: Sequence[tuple[tuple[str, ...], str]]) -> None:
        self.problems = tuple(problems)
        loc, message = self.problems[0]
        more = len(self.problems) - 1
        suffix = f" (and {more} more: `welcomemat validate` lists them all)" if more else ""
        super().__init__(message + suffix, field=".".join(loc))


@dataclass(frozen=True)
class ZoneOutcome:
    """What happened to one zone: the content served and, if a draft was tried, why it failed.

    `decline`: the provider was asked and wrote no draft for the zone, and said why.
    `held`: a draft doubt kept off the page, for a person to approve.
    """

    content: ZoneContent
    draft: ZoneDraft | None
    failures: tuple[CheckFailure, ...]
    decline: Decline | None = None
    held: HeldDraft | None = None
    # The written (or held) draft's voice, relevance and role-value scores (`precompute.zone_scores`).
    scores: ZoneScores | None = None


@dataclass(frozen=True)
class AccountOutcome:
    account: Account
    context: GovernedContext
    zone_set: ZoneSet
    zones: tuple[ZoneOutcome, ...]
    model_calls: int
    tokens: int
    retries: int = 0
    # The provider could not write (ProviderUnavailable): not a decision. The publisher keeps a
    # version already published (else publishes this fallback, marked deferred); next run retries.
    deferred: bool = False
    deferred_cause: FaultCause | None = None  # why, when deferred (`precompute.provider_faults`)


# The checks whose failure is doubt, not a broken rule: a person may approve past them. Each
# holds the draft in its own layer, with its own note (`welcomemat.zones.held`).
_DOUBT_CHECKS: Mapping[str, HoldLayer] = MappingProxyType(
    {"confidence": HoldLayer.MODEL_CONFIDENCE, "grounding": HoldLayer.GROUNDING}
)


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _draft_ends(draft: ZoneDraft, ctx: GovernedContext) -> list[date]:
    """The days a draft stops being true: each fact it cites expires, and it may say when itself."""
    ends = [f.expires_at for f in ctx.facts if f.id in draft.fact_ids]
    return [*ends, draft.valid_until] if draft.valid_until is not None else ends


def _zone_set_mode(contents: Sequence[ZoneContent]) -> ZoneSetMode:
    """Full when every zone is personal, fallback when none is, degraded in between."""
    personal = sum(1 for c in contents if c.rung is Rung.PERSONAL)
    if personal == len(contents):
        return ZoneSetMode.FULL
    return ZoneSetMode.FALLBACK if personal == 0 else ZoneSetMode.DEGRADED


@dataclass(frozen=True)
class _Answer:
    """What asking the provider gave one account: drafts, or why its zones have none."""

    result: GenerationResult
    # The reason a zone without a draft falls back, unless the provider said why (its `Decline`).
    no_draft_reason: str
    # Set when the provider could not write: the account is deferred (`precompute.provider_faults`).
    cause: FaultCause | None = None

    @property
    def deferred(self) -> bool:
        return self.cause is not None


class Assembler:
    """Everything prepared once per run; `assemble` is called once per account."""

    def __init__(
        self,
        *,
        campaign: Campaign,
        zones: Mapping[str, ZoneContract],
        policy: EffectivePolicy,
        provider: Provider,
        vocabulary: ApprovedVocabulary,
        other_companies: frozenset[str],
        now: datetime,
    ) -> None:
        self.campaign = campaign
        self.zones = zones
        self.policy = policy
        self.provider = provider
        self.vocabulary = vocabulary
        self.other_companies = other_companies
        self.now = now
        self.as_of = now.astimezone(UTC).date()
        self.allowlist: LinkAllowlist = campaign.allowlist()
        self.zone_ids = campaign.page_zone_ids()
        self.review_tiers = frozenset(campaign.approval.review_tiers)
        self.guideline_hash = guideline_hash(campaign)
        # Per copy variant: the campaign as the variant writes it and the vocabulary its own
        # patterns approve; every check is otherwise the campaign's (`welcomemat.campaign.experiments`).
        self._variants: dict[str, tuple[Campaign, ApprovedVocabulary]] = {}
        if campaign.experiment is not None:
            for variant in campaign.experiment.variants:
                written = variant_campaign(campaign, variant)
                words = vocabulary if written is campaign else build_vocabulary(written)
                self._variants[variant.id] = (written, words)
        # Fallback copy is human-written and the same for every account: build and check it once.
        self._segment_content: dict[tuple[str, str], ZoneContent] = {}
        self._default_content: dict[str, ZoneContent] = {}

    # -- fallback copy -------------------------------------------------------------------------

    def prepare_fallbacks(self, neutral_context: GovernedContext) -> None:
        """Build and check every segment and default copy; FallbackCopyError names every bad one."""
        problems: list[tuple[tuple[str, ...], str]] = []
        for zone_id in self.zone_ids:
            contract = self.zones[zone_id]
            copies: list[tuple[tuple[str, ...], ZoneCopy, Rung, str | None]] = [
                (("default_copy", zone_id), self.campaign.default_copy[zone_id], Rung.DEFAULT, None)
            ]
            copies += [
                (("segments", segment_id, "zones", zone_id), segment.zones[zone_id], Rung.SEGMENT, segment_id)
                for segment_id, segment in self.campaign.segments.items()
            ]
            for loc, copy, rung, segment_id in copies:
                content = self._copy_content(contract, copy, rung, neutral_context)
                if isinstance(content, str):
                    problems.append((loc, content))
                elif segment_id is None:
                    self._default_content[zone_id] = content
                else:
                    self._segment_content[(segment_id, zone_id)] = content
        if problems:
            raise FallbackCopyError(problems)

    def _copy_content(
        self, contract: ZoneContract, copy: ZoneCopy, rung: Rung, ctx: GovernedContext
    ) -> ZoneContent | str:
        """The copy as published content, or why it cannot be (its checks' failures)."""
        draft = ZoneDraft(zone_id=contract.id, text=copy.text, cta_id=copy.cta, confidence=1.0)
        failures = run_checks(self._check_input(draft, contract, ctx, personal=False))
        href = self._href(copy.cta) if contract.link else None
        if failures or (contract.link and href is None):
            details = [f"{f.reason}: {f.detail}" for f in failures] or ["CTA link refused by the URL gate"]
            return f"{rung.value} copy for zone {contract.id!r} fails its checks ({'; '.join(details)})"
        text, markup = self._text_and_markup(copy.text, contract)
        return ZoneContent(
            zone_id=contract.id,
            text=text,
            href=href,
            cta_id=copy.cta if contract.link else None,
            rung=rung,
            reason="pending",  # placeholder: `_fallback` always sets the zone's own reason
            markup=markup,
        )

    def _fallback(self, account: Account, zone_id: str, reason: str) -> ZoneContent:
        contract = self.zones[zone_id]
        segment = self._segment_content.get((account.segment, zone_id))
        if segment is not None and contract.fallback is ZoneFallback.SEGMENT:
            return segment.model_copy(update={"reason": reason})
        why = reason if segment is not None else f"{reason};{UNKNOWN_SEGMENT}"
        return self._default_content[zone_id].model_copy(update={"reason": why})

    # -- personal drafts -----------------------------------------------------------------------

    def _check_input(
        self,
        draft: ZoneDraft,
        contract: ZoneContract,
        ctx: GovernedContext,
        *,
        personal: bool,
        written: tuple[Campaign, ApprovedVocabulary] | None = None,
    ) -> CheckInput:
        campaign, vocabulary = written if written is not None else (self.campaign, self.vocabulary)
        return CheckInput(
            draft=draft,
            contract=contract,
            context=ctx,
            campaign=campaign,
            policy=self.policy,
            vocabulary=vocabulary,
            other_companies=self.other_companies,
            personal=personal,
        )

    def _href(self, cta_id: str | None) -> str | None:
        cta = self.campaign.cta(cta_id) if cta_id else None
        if cta is None:
            return None
        decision = gate_link(cta.href, self.allowlist)
        return decision.href if decision.allowed else None

    @staticmethod
    def _text_and_markup(text: str, contract: ZoneContract) -> tuple[str, CleanedMarkup | None]:
        # Cleaning (bleach) only when the zone allows markup and the text has a tag at all.
        if contract.markup and "<" in text:
            cleaned = clean_inline(text, contract.markup)
            return markup_to_text(cleaned), cleaned
        return text, None

    def _written(self, draft: ZoneDraft, contract: ZoneContract, ctx: GovernedContext) -> ZoneContent | None:
        """The draft as published: personal when it uses a specific of a fact it cites, else segment.

        None when its CTA link fails the URL gate or it cites a fact the context lacks.
        """
        href = self._href(draft.cta_id) if contract.link else None
        if contract.link and href is None:
            return None
        cited = []
        for fact_id in dict.fromkeys(draft.fact_ids):
            fact = ctx.fact(fact_id)
            if fact is None:  # run_checks refuses this; never publish an uncited claim regardless
                return None
            cited.append(
                CitedFact(
                    fact_id=fact.id,
                    source_url=fact.source_url,
                    published_at=fact.published_at,
                    surfaces=fact.surfaces,
                )
            )
        text, markup = self._text_and_markup(draft.text, contract)
        facts = tuple(f for f in ctx.facts if f.id in draft.fact_ids)
        types = "+".join(sorted({f.type for f in facts})) or "library"
        # Personal means specific: a line that uses no specific of what it cites (a generic
        # line, a CTA label, a library proof point) is segment copy, its citations kept.
        names = (ctx.account.name, ctx.short_name, *ctx.account.aliases)
        specific = specific_used(text, facts, account_names=names, as_of=ctx.as_of) is not None
        return ZoneContent(
            zone_id=contract.id,
            text=text,
            href=href,
            cta_id=draft.cta_id if contract.link else None,
            rung=Rung.PERSONAL if specific else Rung.SEGMENT,
            reason=zone_reason(ZoneReason.PERSONAL if specific else ZoneReason.NOT_SPECIFIC, types),
            facts=tuple(cited),
            markup=markup,
        )

    def _hold(
        self,
        draft: ZoneDraft,
        contract: ZoneContract,
        ctx: GovernedContext,
        layer: HoldLayer,
        note: str,
        failures: Sequence[CheckFailure],
    ) -> HeldDraft:
        """The draft as a person would approve it: doubt aside, every check still stands."""
        blocking = [f"{f.check}:{f.reason}" for f in failures if f.check not in _DOUBT_CHECKS]
        content = None if blocking else self._written(draft, contract, ctx)
        if content is None and not blocking:
            blocking.append(zone_reason(ZoneReason.CTA_LINK_REFUSED))
        ends = _draft_ends(draft, ctx)
        return HeldDraft(
            zone_id=contract.id,
            layer=layer,
            note=note,
            draft=draft.text,
            content=content,
            valid_until=_day_start(min(ends)) if ends else None,
            failures=tuple(blocking),
        )

    def _generate(self, ctx: GovernedContext, campaign: Campaign) -> GenerationResult:
        """One provider call per account for every zone its pages show (in page order).

        One call rather than one per page: the pages tell one story (the continuation page
        picks up the landing page's), and with self-review that keeps a model provider at
        two calls per account.
        """
        wanted = tuple(self.zones[z] for z in self.zone_ids)
        result = self.provider.generate(
            GenerationRequest(
                context=ctx,
                campaign=campaign,
                policy=self.policy,
                page_id="+".join(self.campaign.pages),
                zones=wanted,
            )
        )
        drafts = {
            zone_id: draft
            for zone_id, draft in result.drafts.items()
            if zone_id in self.zones and draft.zone_id == zone_id
        }
        declined = {z: d for z, d in result.declined.items() if z in self.zones and z not in drafts}
        return replace(result, drafts=drafts, declined=declined)

    # -- one account ---------------------------------------------------------------------------

    def _with_extracted_facts(self, account: Account) -> Account:
        """The account plus facts the provider found in its raw sources (verbatim evidence only).

        The input hash is taken before this, from the record as supplied: extraction is part
        of what the provider does with those inputs, so a rerun makes no call for it either.
        """
        if not account.sources or not isinstance(self.provider, FactExtractor):
            return account
        found = self.provider.extract_facts(account, tuple(self.policy.signal_windows_days))
        if not found:
            return account
        extra = [Fact.model_validate(f) for f in found]
        return account.model_copy(update={"facts": [*account.facts, *extra]})

    def _extract_facts_or_defer(self, account: Account) -> tuple[Account, FaultCause | None]:
        """Extraction is a provider call too: when it cannot be made, the account is deferred, not failed."""
        try:
            return self._with_extracted_facts(account), None
        except ProviderUnavailable as exc:
            return account, fault_cause(exc)

    def _ask_provider(self, ctx: GovernedContext, campaign: Campaign, cause: FaultCause | None) -> _Answer:
        """A call only when it can yield a personal line; otherwise why no zone has a draft."""
        empty = GenerationResult(drafts={})
        if cause is not None:
            return _Answer(empty, zone_reason(ZoneReason.PROVIDER_UNAVAILABLE), cause)
        if not ctx.identity.claims_allowed:
            return _Answer(empty, zone_reason(ZoneReason.IDENTITY, ctx.identity.reason.value))
        if not ctx.facts:
            return _Answer(empty, zone_reason(ZoneReason.NO_TRUSTED_FACT))
        try:
            result = self._generate(ctx, campaign)
        except ProviderUnavailable as exc:
            return _Answer(empty, zone_reason(ZoneReason.PROVIDER_UNAVAILABLE), fault_cause(exc))
        # A provider that drops a zone without a word has given no answer for it.
        return _Answer(result, zone_reason(ZoneReason.NO_ANSWER))

    def _fill_zone(
        self,
        account: Account,
        contract: ZoneContract,
        ctx: GovernedContext,
        answer: _Answer,
        written: tuple[Campaign, ApprovedVocabulary],
    ) -> tuple[ZoneOutcome, list[date]]:
        """One zone's rung, and the days its published draft stops being true (none on a fallback)."""
        draft = answer.result.drafts.get(contract.id)
        if draft is None:
            return self._fall_back_undrafted(account, contract, ctx, answer, written), []
        return self._try_draft(account, draft, contract, ctx, written)

    def _fall_back_undrafted(
        self,
        account: Account,
        contract: ZoneContract,
        ctx: GovernedContext,
        answer: _Answer,
        written: tuple[Campaign, ApprovedVocabulary],
    ) -> ZoneOutcome:
        """No draft: the fallback, with the provider's own reason when it gave one (its `Decline`)."""
        decline = answer.result.declined.get(contract.id)
        reason = zone_reason(decline.reason) if decline is not None else answer.no_draft_reason
        rejected = decline.draft if decline is not None else None
        return ZoneOutcome(
            content=self._fallback(account, contract.id, reason),
            draft=None,
            failures=(),
            decline=decline,
            held=self._hold_rejected(decline, contract, ctx, written),
            scores=self._score(rejected, contract, ctx),
        )

    def _hold_rejected(
        self,
        decline: Decline | None,
        contract: ZoneContract,
        ctx: GovernedContext,
        written: tuple[Campaign, ApprovedVocabulary],
    ) -> HeldDraft | None:
        """A draft the self-review judged not ok is doubt, not a broken rule: held with the review's note."""
        if decline is None or decline.draft is None:
            return None
        rejected = decline.draft
        checked = run_checks(self._check_input(rejected, contract, ctx, personal=True, written=written))
        return self._hold(rejected, contract, ctx, HoldLayer.SELF_REVIEW, decline.note, checked)

    def _try_draft(
        self,
        account: Account,
        draft: ZoneDraft,
        contract: ZoneContract,
        ctx: GovernedContext,
        written: tuple[Campaign, ApprovedVocabulary],
    ) -> tuple[ZoneOutcome, list[date]]:
        """A draft is published only if every check passes and its link survives the URL gate."""
        failures = run_checks(self._check_input(draft, contract, ctx, personal=True, written=written))
        content = None if failures else self._written(draft, contract, ctx)
        ends = _draft_ends(draft, ctx) if content is not None else []
        if content is None:
            reason = (
                zone_reason(ZoneReason.CHECK, failures[0].reason)
                if failures
                else zone_reason(ZoneReason.CTA_LINK_REFUSED)
            )
            content = self._fallback(account, contract.id, reason)
        outcome = ZoneOutcome(
            content=content,
            draft=draft,
            failures=failures,
            held=self._hold_doubted(draft, contract, ctx, failures),
            scores=self._score(draft, contract, ctx),
        )
        return outcome, ends

    def _hold_doubted(
        self, draft: ZoneDraft, contract: ZoneContract, ctx: GovernedContext, failures: Sequence[CheckFailure]
    ) -> HeldDraft | None:
        """Low confidence or weak grounding is doubt a person may overrule: the draft is kept for them."""
        doubt = [f for f in failures if f.check in _DOUBT_CHECKS]
        if not doubt:
            return None
        layer = _DOUBT_CHECKS[doubt[0].check]
        note = (
            f"model confidence {doubt[0].detail}" if layer is HoldLayer.MODEL_CONFIDENCE else doubt[0].detail
        )
        return self._hold(draft, contract, ctx, layer, note, failures)

    def _score(
        self, wrote: ZoneDraft | None, contract: ZoneContract, ctx: GovernedContext
    ) -> ZoneScores | None:
        """Scores show how written words read; a link zone shows its CTA's approved label, not such words."""
        if wrote is None or contract.link:
            return None
        return score_draft(wrote.text, ctx, wrote.fact_ids, self.campaign.voice_profile)

    def _build_zone_set(
        self,
        account: Account,
        input_hash: str,
        contents: Sequence[ZoneContent],
        valid_until: date | None,
        variant: CopyVariant | None,
        *,
        deferred: bool,
    ) -> ZoneSet:
        """The record published: mode and status follow from the zones' rungs, expiry from their facts."""
        experiment_id = self.campaign.experiment.id if self.campaign.experiment is not None else None
        # A person reads every page written from the account's facts, personal or not specific.
        from_facts = any(c.rung is Rung.PERSONAL or c.facts for c in contents)
        needs_review = account.tier in self.review_tiers and from_facts
        return ZoneSet(
            tenant=self.campaign.tenant,
            campaign=self.campaign.campaign,
            account_id=account.account_id,
            segment=account.segment,
            # A deferred set never matches the inputs' hash, so the next run generates it again.
            input_hash=f"{input_hash}-deferred" if deferred else input_hash,
            guideline_version=self.campaign.guideline_version,
            guideline_hash=self.guideline_hash,
            created_at=self.now,
            valid_until=_day_start(valid_until) if valid_until is not None else None,
            experiment=experiment_id if variant is not None else None,
            variant=variant.id if variant is not None else None,
            status=ZoneSetStatus.PENDING_REVIEW if needs_review else ZoneSetStatus.PUBLISHED,
            mode=_zone_set_mode(contents),
            zones=tuple(contents),
        )

    def assemble(self, account: Account, input_hash: str) -> AccountOutcome:
        """The account's zone set: facts, context, one provider call, then every zone down its ladder."""
        variant = variant_for(self.campaign, account.account_id)
        written = self._variants[variant.id] if variant is not None else (self.campaign, self.vocabulary)
        account, cause = self._extract_facts_or_defer(account)
        ctx = build_context(account, self.campaign, self.policy, self.as_of)
        answer = self._ask_provider(ctx, written[0], cause)
        filled = [self._fill_zone(account, self.zones[z], ctx, answer, written) for z in self.zone_ids]
        outcomes = tuple(outcome for outcome, _ in filled)
        valid_until = min((end for _, ends in filled for end in ends), default=None)
        zone_set = self._build_zone_set(
            account,
            input_hash,
            [o.content for o in outcomes],
            valid_until,
            variant,
            deferred=answer.deferred,
        )
        return AccountOutcome(
            account=account,
            context=ctx,
            zone_set=zone_set,
            zones=outcomes,
            model_calls=answer.result.model_calls,
            tokens=answer.result.tokens,
            retries=answer.result.retries,
            deferred=answer.deferred,
            deferred_cause=answer.cause,
        )


def neutral_context(campaign: Campaign, policy: EffectivePolicy, as_of: date) -> GovernedContext:
    """The context segment and default copy are checked in: no account's facts, no claims."""
    neutral = Account(
        account_id="segment-copy",
        name=campaign.tenant,
        domain="example.com",
        segment=next(iter(campaign.segments)),
    )
    return build_context(neutral, campaign, policy, as_of)


def fallback_copy_problems(
    campaign: Campaign,
    zones: Mapping[str, ZoneContract],
    policy: EffectivePolicy,
    provider: Provider,
    vocabulary: ApprovedVocabulary,
    *,
    now: datetime,
) -> tuple[tuple[tuple[str, ...], str], ...]:
    """Every segment and default copy that fails its checks, as a run's start would find it.

    (field path in campaign.yaml, message) each; empty when every copy passes. `validate` and
    `precompute` ask this before a run, so a bad line of copy is an input error with its line.
    """
    assembler = Assembler(
        campaign=campaign,
        zones=zones,
        policy=policy,
        provider=provider,
        vocabulary=vocabulary,
        other_companies=frozenset(),
        now=now,
    )
    try:
        assembler.prepare_fallbacks(neutral_context(campaign, policy, assembler.as_of))
    except FallbackCopyError as exc:
        return exc.problems
    return ()
