"""What the admin routes send: explicit serializers for the explain record and the review queue.

The explain record is written by precompute next to each zone set (`keys.explain_key`).
The renderer reads the stored JSON and re-states it field by field through these models:
a field precompute adds later does not leave here until it is named, and every link in
it goes through the URL gate again (`urlgate.source_href`: https, a named host, no
userinfo or port; the campaign allowlist does not apply to a fact's source).
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from welcomemat.bounded_time import ms_text
from welcomemat.errors import StoredValueError
from welcomemat.security.urlgate import source_href
from welcomemat.zones.held import HeldDraft, one_line
from welcomemat.zones.zoneset import ZoneSet

__all__ = [
    "CheckFailure",
    "ExplainFact",
    "ExplainHeld",
    "ExplainIdentity",
    "ExplainPayload",
    "ExplainScores",
    "ExplainZone",
    "ReviewDecisionBody",
    "ReviewQueueEntry",
    "RollbackBody",
    "parse_explain_record",
    "review_entry",
]


class _Stored(BaseModel):
    # Read from a stored record: unknown fields are dropped, never passed on.
    model_config = ConfigDict(extra="ignore", frozen=True)


def _gated(value: object) -> str | None:
    return source_href(value) if isinstance(value, str) else None


class ExplainIdentity(_Stored):
    registrable_domain: str | None = None
    confidence: str | None = None
    claims_allowed: bool = False
    reason: str | None = None


class ExplainFact(_Stored):
    """One fact's trust decision. `statement`, `source_url` and `published_at` are shown when
    the record carries them; the source link only when it passes the URL gate."""

    id: str
    type: str | None = None
    trusted: bool = False
    reason: str | None = None
    detail: str = ""
    statement: str | None = None
    source_url: str | None = None
    published_at: str | None = None

    @field_validator("source_url", mode="before")
    @classmethod
    def _gate_source(cls, value: object) -> str | None:
        return _gated(value)


class CheckFailure(_Stored):
    check: str
    reason: str | None = None
    detail: str | None = None


class ExplainHeld(_Stored):
    """A draft doubt kept off the page (`welcomemat.zones.held`): which layer, its note, the draft,
    the deterministic checks it fails, and whether a person may approve it. Note and draft are
    one clipped line each (the pages escape them)."""

    zone_id: str
    layer: str
    note: str = ""
    draft: str = ""
    failures: tuple[str, ...] = ()
    approvable: bool = False

    @model_validator(mode="before")
    @classmethod
    def _from_stored(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        failures = value.get("failures") or ()
        return {
            **value,
            "note": one_line(str(value.get("note") or "")),
            "draft": one_line(str(value.get("draft") or ""), 500),
            "approvable": not failures and value.get("content") is not None,
        }

    @classmethod
    def of(cls, held: HeldDraft) -> ExplainHeld:
        return cls.model_validate(held.model_dump(mode="json"))


class ExplainScores(_Stored):
    """A written draft's three scores, kept apart (`precompute.zone_scores`): each 0..1."""

    voice: float | None = None
    relevance: float = 0.0
    role_value: float = 0.0
    role: str = "any"


class ExplainZone(_Stored):
    """One zone's rung and reason code; `note`: why the provider wrote no draft, in its words;
    `held`: the draft held for a person, if doubt kept it off the page; `scores`: a written
    draft's voice, relevance and role-value scores."""

    zone_id: str
    rung: str
    reason: str | None = None
    text: str = ""
    href: str | None = None
    facts: tuple[str, ...] = ()
    draft: str | None = None
    draft_facts: tuple[str, ...] = ()
    checks: tuple[CheckFailure, ...] = ()
    scores: ExplainScores | None = None
    note: str | None = None
    held: ExplainHeld | None = None

    @field_validator("href", mode="before")
    @classmethod
    def _gate_href(cls, value: object) -> str | None:
        return _gated(value)


class ExplainPayload(_Stored):
    """`GET /admin/explain/...`: why an account sees what it sees (status and version as of now)."""

    account_id: str
    name: str | None = None
    segment: str | None = None
    tier: int | None = None
    as_of: str | None = None
    version: int | None = None
    status: str | None = None
    mode: str | None = None
    valid_until: str | None = None
    identity: ExplainIdentity = Field(default_factory=ExplainIdentity)
    firmographics_hidden: tuple[str, ...] = ()
    facts: tuple[ExplainFact, ...] = ()
    zones: tuple[ExplainZone, ...] = ()
    model_calls: int | None = None

    def fact(self, fact_id: str) -> ExplainFact | None:
        return next((f for f in self.facts if f.id == fact_id), None)

    def zone(self, zone_id: str) -> ExplainZone | None:
        return next((z for z in self.zones if z.zone_id == zone_id), None)


def parse_explain_record(raw: bytes, key: str, current: ZoneSet | None) -> ExplainPayload:
    """The stored record, re-stated; status and version from the live zone set when there is one
    (a review may have changed them since the run wrote the record, as `welcomemat explain` says).

    Raises `StoredValueError` naming the key when the value is not an explain record.
    """
    try:
        record: Any = json.loads(raw)
        payload = ExplainPayload.model_validate(record)
    except (ValueError, ValidationError) as exc:  # ValidationError is a ValueError; explicit for readers
        raise StoredValueError(key, f"explain record does not decode: {exc}") from exc
    if current is not None:
        payload = payload.model_copy(update={"status": current.status.value, "version": current.version})
    return payload


class ReviewQueueEntry(BaseModel):
    """One account in the review queue (`approval`: must be approved; `sample`: live, to be read;
    `held`: a zone's draft held for a person, `held` says which and why)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    account_id: str
    queue: str
    queued_at: str
    version: int | None
    status: str | None
    mode: str | None
    segment: str | None
    valid_until: str | None
    held: tuple[ExplainHeld, ...] = ()


def review_entry(
    account_id: str,
    queue: str,
    queued_at: float,
    zone_set: ZoneSet | None,
    held: tuple[HeldDraft, ...] = (),
) -> ReviewQueueEntry:
    return ReviewQueueEntry(
        held=tuple(ExplainHeld.of(h) for h in held),
        account_id=account_id,
        queue=queue,
        # The queue's score as stored: one no clock holds (corrupt, inf) reads "unreadable time", never a 500.
        queued_at=ms_text(round(queued_at * 1000) if math.isfinite(queued_at) else queued_at),
        version=zone_set.version if zone_set is not None else None,
        status=zone_set.status.value if zone_set is not None else None,
        mode=zone_set.mode.value if zone_set is not None else None,
        segment=zone_set.segment if zone_set is not None else None,
        valid_until=zone_set.valid_until.isoformat() if zone_set and zone_set.valid_until else None,
    )


class ReviewDecisionBody(BaseModel):
    """`POST /admin/review/.../approve|reject`: the version the reviewer read, and why (a rejection
    must say; `welcomemat.records.audit.check_reason` decides); `held`: approve that zone's held draft."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(ge=1, strict=True)
    reason: str | None = Field(default=None, strict=True)
    held: str | None = Field(default=None, strict=True, min_length=1, max_length=64)


class RollbackBody(BaseModel):
    """`POST /admin/review/.../rollback`: why the previous version must come back."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str = Field(strict=True)
