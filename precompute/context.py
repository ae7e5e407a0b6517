"""The governed context of one account: what the precompute job may build zones from.

Everything a provider sees comes from here, and everything here has been decided by
code: the identity (may we make account-specific claims at all?), each fact's trust
decision with a reason code, the firmographics that are plausible enough to use, and the
effective policy (hard rules ▸ tenant ▸ campaign ▸ zone). Providers only write.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date

from welcomemat.campaign.sections import Confidence
from welcomemat.records.accounts import Account
from welcomemat.surfaces import Surface

__all__ = [
    "EffectivePolicy",
    "FactDecision",
    "FactReason",
    "Firmographics",
    "GovernedContext",
    "Identity",
    "IdentityConfidence",
    "IdentityReason",
    "TrustedFact",
]


class IdentityConfidence(enum.StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    NONE = "none"


class IdentityReason(enum.StrEnum):
    """Why identity resolution came out as it did."""

    DOMAIN_CONFIRMED = "domain_confirmed"  # contacts' mail domains agree with the account domain
    DOMAIN_ONLY = "domain_only"  # a valid employer domain, no contact to confirm it
    CONTACTS_DISAGREE = "contacts_disagree"  # contacts mail from other (non-free) domains
    FREEMAIL_DOMAIN = "freemail_domain"  # the account's own domain is a free-mail provider
    NO_REGISTRABLE_DOMAIN = "no_registrable_domain"  # not a domain under a public suffix


@dataclass(frozen=True)
class Identity:
    """Who the account is, and whether account-specific claims are allowed."""

    registrable_domain: str | None
    confidence: IdentityConfidence
    claims_allowed: bool
    reason: IdentityReason
    # contact_id -> whether that contact's email domain matches the account's
    contact_matches: Mapping[str, bool] = field(default_factory=dict)


class FactReason(enum.StrEnum):
    """One reason code per fact decision (the first rule a fact fails)."""

    TRUSTED = "trusted"
    IDENTITY_UNCERTAIN = "identity_uncertain"
    NO_SOURCE = "no_source"
    BAD_SOURCE_URL = "bad_source_url"
    NO_DATE = "no_date"
    BAD_DATE = "bad_date"
    FUTURE_DATE = "future_date"
    NO_WINDOW_FOR_TYPE = "no_window_for_type"
    STALE = "stale"
    LOW_CONFIDENCE = "low_confidence"
    NOT_FOR_WEB = "not_for_web"
    MARKUP_IN_STATEMENT = "markup_in_statement"  # tags, script, entities or markdown
    TEMPLATE_IN_STATEMENT = "template_in_statement"  # {{ }}, {% %}, ${ }, <% %> ...
    WRONG_SUBJECT = "wrong_subject"  # not named as the account (a brand off its own site, another name)
    OTHER_COMPANY = "other_company"  # names another company, often one whose name holds the account's
    DUPLICATE = "duplicate"


@dataclass(frozen=True)
class FactDecision:
    """The trust policy's decision on one fact."""

    fact_id: str
    fact_type: str
    trusted: bool
    reason: FactReason
    detail: str = ""


@dataclass(frozen=True)
class TrustedFact:
    """A fact that passed the trust policy: sourced, dated, recent, about this account, for the web."""

    id: str
    type: str
    statement: str
    source_url: str  # the URL gate's normalised href
    published_at: date
    expires_at: date  # published_at + the window for its type: not usable on or after
    confidence: Confidence
    # Structured string fields the research carried (round, role, location, person ...).
    fields: Mapping[str, str] = field(default_factory=dict)
    evidence: str | None = None
    # Every channel the research allows it on (web always among them): recorded with each
    # zone that cites it, so the export, the seller and print show only what it allows.
    surfaces: tuple[Surface, ...] = (Surface.WEB,)


@dataclass(frozen=True)
class Firmographics:
    """Firmographics plausible enough to use; anything doubtful is None and listed in `hidden`."""

    employee_bucket: str | None
    industry: str | None
    country: str | None
    city: str | None
    hidden: tuple[str, ...] = ()  # reason codes, e.g. "employee_count_contradicts_segment"


@dataclass(frozen=True)
class EffectivePolicy:
    """Rules after precedence: hard rules ▸ tenant ▸ campaign (lower levels only tighten)."""

    signal_windows_days: Mapping[str, int]
    min_confidence: Confidence
    banned_phrases: tuple[str, ...]
    banned_openers: tuple[str, ...]
    prohibited_claims: tuple[str, ...]
    # A draft whose self-reported confidence is lower falls back and is held for a person.
    min_model_confidence: float = 0.6
    # Checks the tenant and the campaign add for every zone, beside the hard ones (which always
    # run) and the zone's own: `precompute.check_precedence`.
    checks: tuple[str, ...] = ()
    # where each rule came from, for `explain` ("tenant.yaml", "campaign.yaml", "hard rule")
    sources: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GovernedContext:
    """Everything decided about one account before any provider writes a word."""

    account: Account
    short_name: str  # the account's name without legal suffix ("Dymaxa" for "Dymaxa B.V.")
    identity: Identity
    facts: tuple[TrustedFact, ...]
    decisions: tuple[FactDecision, ...]
    firmographics: Firmographics
    as_of: date

    def fact(self, fact_id: str) -> TrustedFact | None:
        return next((f for f in self.facts if f.id == fact_id), None)

    def facts_of_type(self, *types: str) -> tuple[TrustedFact, ...]:
        return tuple(f for f in self.facts if f.type in types)
