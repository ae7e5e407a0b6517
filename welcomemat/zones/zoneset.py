"""The published zone set: what one account sees in one campaign, frozen and versioned.

A zone set is written once by the precompute job and read many times by the renderer.
Every zone says which rung of the fallback ladder it came from and why, and which facts
(with source URL and publish date) it cites: a personal zone always, and a written draft
that uses none of its facts' specifics, published as segment copy (`not_specific`).
`valid_until` is the earliest expiry of the cited facts: past it the renderer serves the
fallback even if nothing reran.
"""

from __future__ import annotations

import enum
from datetime import date, datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator

from welcomemat.ids import OpaqueId
from welcomemat.security.markup import CleanedMarkup
from welcomemat.surfaces import ALL_SURFACES, Surface

__all__ = [
    "ZONE_SET_SCHEMA_VERSION",
    "CitedFact",
    "Rung",
    "ZoneContent",
    "ZoneSet",
    "ZoneSetMode",
    "ZoneSetStatus",
]

ZONE_SET_SCHEMA_VERSION = 1


class Rung(enum.StrEnum):
    """Where a served zone came from on the fallback ladder."""

    PERSONAL = "personal"
    SEGMENT = "segment"
    DEFAULT = "default"


class ZoneSetMode(enum.StrEnum):
    """full: every zone personal; degraded: some fell back; fallback: none personal."""

    FULL = "full"
    DEGRADED = "degraded"
    FALLBACK = "fallback"


class ZoneSetStatus(enum.StrEnum):
    """Only `published` zone sets are served as personal."""

    PUBLISHED = "published"
    PENDING_REVIEW = "pending_review"
    REJECTED = "rejected"


class CitedFact(BaseModel):
    """A fact a personal zone relies on, with the evidence a reviewer needs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fact_id: str = Field(min_length=1, max_length=128)
    source_url: str = Field(min_length=1)
    published_at: date
    # The channels the trust policy allowed the fact on. Zone sets written before surfaces
    # were recorded were only checked for the web, so that is all a missing value allows.
    surfaces: tuple[Surface, ...] = (Surface.WEB,)


class ZoneContent(BaseModel):
    """One zone's published content."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    zone_id: OpaqueId
    text: str
    href: str | None = None
    cta_id: str | None = None
    rung: Rung
    reason: str = Field(min_length=1, description="reason code for the rung")
    facts: tuple[CitedFact, ...] = ()
    # Inline markup the zone contract allows, cleaned when the set was written.
    markup: CleanedMarkup | None = None

    @model_validator(mode="after")
    def _default_cites_no_facts(self) -> ZoneContent:
        # A segment zone may cite facts: a draft that uses none of its facts' specifics is
        # published as segment copy (`not_specific`) and keeps what it cites, for the audit,
        # its channels and `valid_until`. The campaign default is never written from a fact.
        if self.rung is Rung.DEFAULT and self.facts:
            raise ValueError(f"zone {self.zone_id}: a default zone cites no facts")
        return self

    @property
    def surfaces(self) -> tuple[Surface, ...]:
        """The channels this zone's text may be shown on: those every cited fact allows.

        Fallback copy and a zone citing no fact are campaign copy: every channel. A segment zone
        citing facts (`not_specific`) was still written from them: only their channels.
        """
        return tuple(s for s in ALL_SURFACES if self.allows(s))

    def allows(self, surface: Surface) -> bool:
        """Whether this zone's text may be shown on `surface` (else it takes its fallback there)."""
        return all(surface in fact.surfaces for fact in self.facts)


class ZoneSet(BaseModel):
    """Every zone of one account in one campaign, as published."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = ZONE_SET_SCHEMA_VERSION
    tenant: OpaqueId
    campaign: OpaqueId
    account_id: OpaqueId
    # The account's segment: whose copy the fallback rungs use, and QA's sampling stratum.
    segment: str | None = None
    # Assigned by the store at publish time: 1, 2, 3 ... per account and campaign.
    version: int = Field(default=0, ge=0)
    input_hash: str = Field(min_length=8, description="hash of everything that produced it")
    guideline_version: str = Field(min_length=1)
    # SHA-256 of the guideline bundle that wrote it (`welcomemat.campaign.guidelines`);
    # None before it was kept.
    guideline_hash: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    created_at: datetime
    valid_until: datetime | None = None
    # The copy experiment and the variant this account's zones were written with
    # (`welcomemat.campaign.experiments`); None outside an experiment and in the holdout.
    experiment: OpaqueId | None = None
    variant: OpaqueId | None = None
    status: ZoneSetStatus = ZoneSetStatus.PUBLISHED
    mode: ZoneSetMode
    zones: tuple[ZoneContent, ...]
    # The digest of the campaign theme this account's pages failed with at precompute (the
    # rendered-page check on its own copy): while the campaign keeps that theme, the renderer
    # shows this account's pages in the built-in frame. None: no page failed.
    theme_refused: str | None = Field(default=None, pattern=r"^[0-9a-f]{16}$")

    @model_validator(mode="after")
    def _zone_ids_unique(self) -> ZoneSet:
        ids = [z.zone_id for z in self.zones]
        if len(ids) != len(set(ids)):
            raise ValueError(f"duplicate zone ids in zone set: {sorted(ids)}")
        return self

    def zone(self, zone_id: str) -> ZoneContent | None:
        for z in self.zones:
            if z.zone_id == zone_id:
                return z
        return None

    def is_servable_as_personal(self, now: datetime) -> bool:
        """Personal only while published and inside the validity window."""
        if self.status is not ZoneSetStatus.PUBLISHED:
            return False
        return self.valid_until is None or now < self.valid_until
