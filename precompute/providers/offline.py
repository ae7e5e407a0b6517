"""The `offline` provider: the default zone writer. No network, no model, deterministic.

It fills the campaign's human-written patterns (`campaign.patterns`: fact type -> zone id
-> patterns with `{slots}`) with values taken only from trusted fact fields, the account's
short name and date arithmetic on `as_of`. It never invents: a pattern whose slots cannot
all be filled from trusted data is skipped, and a zone with no pattern left is declined
(`no_pattern_filled`; a link zone no trusted fact supports: `no_cta_support`) so the
pipeline serves the segment copy. Its output goes through the same deterministic checks
as a model's.

Why a composer and not just segment copy: most of the value of a personal page is one
true, dated, specific line ("Congrats on the Series A on Thursday, Dymaxa"), and a human
pattern filled from a sourced fact says it with no model risk at all.

The `{when}` slot: a phrase for the newest cited fact's date that stays true for as long
as the zone's surfaces need (a page 14 days, a mail piece its in-home date plus 30 days, or
until a cited fact expires, if sooner): "on Thursday" only when that is long enough, else
"this month", "in November", "recently" or "in November 2025" (`precompute.date_phrases`).
The draft's `valid_until` is capped by the first day that phrase would be false.

Which pattern wins when several fit, and how a hiring pattern agrees in number with the
facts it cites ("one SDR", "two SDRs"): `precompute.pattern_choice`. The draft carries the
choice (`ZoneDraft.composed`) for `welcomemat explain`.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from precompute.claims.support import account_keys, recency_valid_until
from precompute.context import GovernedContext, TrustedFact
from precompute.date_phrases import DatePhrase, choose_date_phrase, needed_until
from precompute.pattern_choice import PatternChoice, SkippedPattern, number_problem
from precompute.providers.base import Decline, GenerationRequest, GenerationResult, ProviderUsage, ZoneDraft
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.fact_types import COMPUTED_SLOTS
from welcomemat.campaign.patterns import parse_pattern
from welcomemat.reasons import ZoneReason
from welcomemat.surfaces import Surface
from welcomemat.zones.contract import ZoneContract

__all__ = [
    "COMPOSER_VERSION",
    "CTA_CONFIDENCE",
    "LIBRARY_CONFIDENCE",
    "MAX_SLOT_CHARS",
    "PATTERN_CONFIDENCE",
    "PROOF_ZONE_ID",
    "TYPE_PRIORITY",
    "OfflineComposer",
    "count_word",
]

# Part of the provider fingerprint, hence of every account's input hash: bump it whenever
# the composer's output for the same input could change, so published zone sets are redone.
# 2: a declined zone says why (its reason code); 3: time-relative words in a pattern cap valid_until;
# 4: `{when}` stays true as long as the page needs; hiring patterns agree in number.
COMPOSER_VERSION = "offline-composer/4"

# Among facts of equal recency, the order in which fact types make the better opening line.
TYPE_PRIORITY: tuple[str, ...] = ("funding", "expansion", "hiring", "leadership", "product_launch")

# A slot value longer than this is not a round name, a city or a job title: it is a
# research blob or an injection attempt. Truncating could make it false, so it is refused.
MAX_SLOT_CHARS = 60

PATTERN_CONFIDENCE = 0.9  # a human pattern, filled only from trusted fields
CTA_CONFIDENCE = 0.9
LIBRARY_CONFIDENCE = 0.8  # approved copy, but chosen by segment, not by a fact about the account

# The zone that may fall back to the campaign's proof library when no fact fits a pattern.
PROOF_ZONE_ID = "proof"

_COUNT_WORDS = tuple("one two three four five six seven eight nine ten eleven twelve".split())

# How many skipped patterns a draft's `composed` keeps for `explain` (the last ones tried).
_SKIPS_KEPT = 10
# Computed slots that produce an ordinary lowercase word, capitalised when they open the text.
_SENTENCE_OPENERS = frozenset({"when", "role_count"})
# Characters that mean a value is markup or a template, not a name: refused, never stripped,
# because "scriptalert(1)/script" on a page is as wrong as the script.
_REFUSED_CHARS = frozenset("<>{}")


# -- slot values ----------------------------------------------------------------------------


def count_word(n: int) -> str:
    """A count as a page would write it: words for one to twelve, digits beyond."""
    return _COUNT_WORDS[n - 1] if 1 <= n <= len(_COUNT_WORDS) else str(n)


def _clean(value: object) -> str | None:
    """A slot value fit for a page, or None: whitespace (newlines too) collapsed, nothing else changed."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    if len(text) > MAX_SLOT_CHARS or not text.isprintable() or not _REFUSED_CHARS.isdisjoint(text):
        return None
    return text or None


@dataclass(frozen=True, slots=True)
class _Unit:
    """What one zone may cite: one fact, or a group of hiring facts that make one claim."""

    type: str
    facts: tuple[TrustedFact, ...]
    newest: date
    fact_ids: tuple[str, ...]
    slots: Mapping[str, str]
    when: DatePhrase  # the `when` slot's phrase, chosen for the life the zone needs


def _unit(
    fact_type: str, facts: Sequence[TrustedFact], account: str | None, as_of: date, mail_in_home: date | None
) -> _Unit:
    # Newest first: the unit's date is its latest fact, the one "when" speaks of.
    ordered = tuple(sorted(facts, key=lambda f: (-f.published_at.toordinal(), f.id)))
    newest = ordered[0].published_at
    others = ordered[1:]
    slots: dict[str, str] = {}
    # Only fields every fact of the unit agrees on: a group's slot must be true of each member.
    for key, value in ordered[0].fields.items():
        # COMPUTED_SLOTS (welcomemat/campaign/fact_types.py, per fact type there): never shadowed by a field.
        if key in COMPUTED_SLOTS or not key.isidentifier():
            continue
        if others and any(f.fields.get(key) != value for f in others):
            continue
        clean = _clean(value)
        if clean is not None:
            slots[key] = clean
    if account is not None:
        slots["account"] = account
    need = needed_until(as_of, mail_in_home=mail_in_home, expires=(f.expires_at for f in ordered))
    when = choose_date_phrase(newest, as_of, need)
    slots["when"] = when.text
    if fact_type == "hiring":
        slots["role_count"] = count_word(len(ordered))
    ids = tuple(f.id for f in ordered)
    return _Unit(fact_type, ordered, newest, ids, slots, when)


def _hiring_key(fact: TrustedFact) -> tuple[str, str]:
    role = fact.fields.get("role_plural") or fact.fields.get("role") or ""
    location = fact.fields.get("location") or ""
    return (" ".join(role.split()).casefold(), " ".join(location.split()).casefold())


def _units_by_type(
    context: GovernedContext, wanted: frozenset[str], in_home: date | None = None
) -> dict[str, list[_Unit]]:
    """Each wanted fact type's units, best first (hiring: largest group; others: newest fact).

    `in_home`: the campaign's mail in-home date. It sets how long the `{when}` phrases must
    stay true only when some trusted fact may be printed: a zone set is mailed whole (its
    `valid_until` is every zone's), and without a `print` fact it is never mailed personal.
    """
    # The trust policy decides which facts may be used; repeating its two date rules and the
    # identity gate here is cheap and keeps a hand-built or stale context from making a claim.
    if not context.identity.claims_allowed:
        return {}
    as_of = context.as_of
    account = _clean(context.short_name)
    printed = any(Surface.PRINT in f.surfaces for f in context.facts)
    mail_in_home = in_home if printed else None
    by_type: dict[str, list[TrustedFact]] = {}
    for fact in context.facts:
        if fact.type in wanted and fact.published_at <= as_of < fact.expires_at:
            by_type.setdefault(fact.type, []).append(fact)
    units: dict[str, list[_Unit]] = {}
    for fact_type, facts in by_type.items():
        if fact_type == "hiring":
            groups: dict[tuple[str, str], list[TrustedFact]] = {}
            for fact in facts:
                groups.setdefault(_hiring_key(fact), []).append(fact)
            found = [_unit(fact_type, g, account, as_of, mail_in_home) for g in groups.values()]
            found.sort(key=lambda u: (-len(u.facts), -u.newest.toordinal(), u.facts[0].id))
        else:
            found = [_unit(fact_type, (f,), account, as_of, mail_in_home) for f in facts]
            found.sort(key=lambda u: (-u.newest.toordinal(), u.facts[0].id))
        units[fact_type] = found
    return units


def _priority(fact_type: str) -> int:
    return TYPE_PRIORITY.index(fact_type) if fact_type in TYPE_PRIORITY else len(TYPE_PRIORITY)


def _ordered_types(units: Mapping[str, list[_Unit]], types: Iterable[str], used: set[str]) -> list[str]:
    """Fact types in preference order: not yet used on this page, newest, then TYPE_PRIORITY."""
    # Preferring an unused type spreads one page's zones over the account's different facts
    # instead of repeating the top one in every zone.
    found = [t for t in types if units.get(t)]
    found.sort(key=lambda t: (t in used, -units[t][0].newest.toordinal(), _priority(t), t))
    return found


# -- patterns -------------------------------------------------------------------------------


def _pattern_shape(pattern: str) -> tuple[frozenset[str], bool] | None:
    """The slot names a pattern uses and whether it opens with a sentence-opener slot, or None if unusable."""
    # Only plain `{name}` slots (welcomemat/campaign/patterns.py, the parser the campaign loader uses):
    # a campaign loaded from a file never gets here with another; a hand-built one is skipped.
    try:
        shape = parse_pattern(pattern)
    except ValueError:
        return None
    return shape.slots, shape.opening_slot in _SENTENCE_OPENERS


def _fill(pattern: str, unit: _Unit) -> tuple[str, bool] | str:
    """The filled text and whether it used `{when}`, or why the pattern does not fill for `unit`."""
    shape = _pattern_shape(pattern)
    if shape is None:
        return "not a readable pattern"
    names, opens_with = shape
    missing = sorted(names - unit.slots.keys())
    if missing:
        return f"slot {{{missing[0]}}} missing"
    # "one SDRs", "a SDR" for four roles: the wording must agree with how many facts it cites.
    disagrees = number_problem(pattern, len(unit.facts))
    if disagrees is not None:
        return disagrees
    text = pattern.format_map(unit.slots)
    if opens_with:
        text = text[:1].upper() + text[1:]
    return text, "when" in names


def _rotation(patterns: Sequence[str], account_id: str, zone_id: str) -> list[tuple[int, str]]:
    """(1-based index, pattern) from one a stable hash picks, so accounts vary but never flicker."""
    # crc32, not hash(): Python's str hash is salted per process.
    start = zlib.crc32(f"{account_id}\x00{zone_id}".encode()) % len(patterns)
    numbered = list(enumerate(patterns, start=1))
    return [*numbered[start:], *numbered[:start]]


# -- zones ----------------------------------------------------------------------------------


def _fact_draft(
    contract: ZoneContract,
    campaign: Campaign,
    units: Mapping[str, list[_Unit]],
    used: set[str],
    context: GovernedContext,
) -> tuple[ZoneDraft, str] | None:
    """The best filled pattern for a zone and the fact type it used, or None.

    The order is `precompute.pattern_choice`'s; the draft records it (`composed`). A draft is
    valid until its `{when}` phrase and its time-relative words ("this week", "recently": a
    marketer may write them) stop being true of its facts.
    """
    zone_id = contract.id
    account_id = context.account.account_id
    skipped: list[SkippedPattern] = []
    types = (t for t in contract.fact_types if zone_id in campaign.patterns.get(t, {}))
    for fact_type in _ordered_types(units, types, used):
        patterns = campaign.patterns[fact_type][zone_id]
        if not patterns:
            continue
        rotation = _rotation(patterns, account_id, zone_id)
        for unit in units[fact_type]:
            for index, pattern in rotation:
                filled = _fill(pattern, unit)
                if isinstance(filled, str):
                    skipped.append(SkippedPattern(fact_type=fact_type, index=index, reason=filled))
                    continue
                text, uses_when = filled
                if not contract.fits(text):
                    skipped.append(
                        SkippedPattern(fact_type=fact_type, index=index, reason="over the zone's limits")
                    )
                    continue
                ends = [unit.when.true_until] if uses_when and unit.when.true_until is not None else []
                recency = recency_valid_until(text, account_keys(context), unit.facts, context.as_of)
                ends += [recency] if recency is not None else []
                choice = PatternChoice(
                    fact_type=fact_type,
                    index=index,
                    of=len(patterns),
                    pattern=pattern,
                    skipped=tuple(skipped[-_SKIPS_KEPT:]),
                    when=unit.when.explain() if uses_when else None,
                )
                draft = ZoneDraft(
                    zone_id=zone_id,
                    text=text,
                    fact_ids=unit.fact_ids,
                    confidence=PATTERN_CONFIDENCE,
                    valid_until=min(ends, default=None),
                    composed=choice,
                )
                return draft, fact_type
    return None


def _no_pattern(
    contract: ZoneContract, campaign: Campaign, units: Mapping[str, list[_Unit]], *, library: bool
) -> Decline:
    """Why no pattern was filled: no pattern for the zone, no trusted fact for one, or none fits."""
    types = sorted(t for t in contract.fact_types if contract.id in campaign.patterns.get(t, {}))
    have = [t for t in types if units.get(t)]
    if not types:
        note = "the campaign has no pattern for this zone"
    elif not have:
        note = f"no trusted fact of a type with a pattern here ({', '.join(types)})"
    else:
        note = f"no {', '.join(have)} pattern fits the trusted facts and the zone's limits"
    if library:
        note += "; no proof library item fits either"
    return Decline(reason=ZoneReason.NO_PATTERN_FILLED, note=note)


def _cta_draft(
    contract: ZoneContract, campaign: Campaign, units: Mapping[str, list[_Unit]]
) -> ZoneDraft | Decline:
    """The campaign's first CTA when a trusted fact supports the zone; else why not (segment copy)."""
    # A zone naming no fact types (the example's `cta`) is supported by any type the campaign
    # writes patterns for: the campaign's first CTA is its ask for accounts with a live signal.
    supporting = contract.fact_types or frozenset(campaign.patterns)
    ordered = _ordered_types(units, sorted(supporting), set())
    if not ordered:
        note = f"no trusted fact of a supporting type ({', '.join(sorted(supporting)) or 'none'})"
        return Decline(reason=ZoneReason.NO_CTA_SUPPORT, note=note)
    cta = campaign.ctas[0]
    if not contract.fits(cta.label):
        note = f"the label of CTA {cta.id!r} does not fit the zone's limits"
        return Decline(reason=ZoneReason.NO_CTA_SUPPORT, note=note)
    unit = units[ordered[0]][0]
    return ZoneDraft(
        zone_id=contract.id, text=cta.label, fact_ids=unit.fact_ids, cta_id=cta.id, confidence=CTA_CONFIDENCE
    )


def _library_draft(contract: ZoneContract, campaign: Campaign, segment: str) -> ZoneDraft | None:
    """The first proof item written for the account's segment, else the first for every segment."""
    specific = [p for p in campaign.proof_library if segment in p.segments]
    general = [p for p in campaign.proof_library if not p.segments]
    for item in (*specific, *general):
        if contract.fits(item.text):
            return ZoneDraft(zone_id=contract.id, text=item.text, confidence=LIBRARY_CONFIDENCE)
    return None


class OfflineComposer:
    """Fills the campaign's patterns from trusted facts. Implements `Provider`; no model calls."""

    name = "offline"

    def fingerprint(self) -> str:
        # The campaign's patterns are hashed with the campaign; only the code's behaviour here.
        return hashlib.sha256(f"{self.name}\x00{COMPOSER_VERSION}".encode()).hexdigest()

    def usage(self) -> ProviderUsage:
        return ProviderUsage()  # no model, no network: nothing to count

    def generate(self, request: GenerationRequest) -> GenerationResult:
        context = request.context
        campaign = request.campaign
        # Only types some zone of this request could state or be supported by: the rest is waste.
        wanted = frozenset(campaign.patterns).union(*(z.fact_types for z in request.zones))
        units = _units_by_type(context, wanted, campaign.mail_in_home_date)
        drafts: dict[str, ZoneDraft] = {}
        declined: dict[str, Decline] = {}
        used: set[str] = set()  # fact types already stated on this page, in zone order
        for contract in request.zones:
            if contract.id in drafts or contract.id in declined:
                continue
            outcome: ZoneDraft | Decline | None
            if contract.link:
                outcome = _cta_draft(contract, campaign, units)
            else:
                found = _fact_draft(contract, campaign, units, used, context)
                outcome = None
                if found is not None:
                    outcome, fact_type = found
                    used.add(fact_type)
                library = contract.id == PROOF_ZONE_ID and not contract.requires_fact
                if outcome is None and library:
                    outcome = _library_draft(contract, campaign, context.account.segment)
                if outcome is None:
                    outcome = _no_pattern(contract, campaign, units, library=library)
            if isinstance(outcome, Decline):
                declined[contract.id] = outcome
            else:
                drafts[contract.id] = outcome
        return GenerationResult(drafts=drafts, declined=declined, model_calls=0, tokens=0)
