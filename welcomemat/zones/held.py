"""Held drafts: personal copy a layer of doubt kept off the page until a person decides.

A draft the model's self-review judged not ok, whose self-reported confidence is below
the campaign's `min_model_confidence`, or that says words nothing it cites, the account or the
approved copy supports (grounding: the note names them), is not thrown away: the zone is served its fallback
and the draft is *held*, with the layer that held it and that layer's note (the reviewer's
own words, or the confidence against the threshold), in the account's explain record. The
account is queued for review (`keys.review_held_key`); a person may approve the draft
(`welcomemat.zones.review.approve_held`), which publishes a new zone-set version with that zone
personal.

Holding is about doubt, never about rules: every deterministic check ran on the held draft
when it was made, and a draft that failed one (`failures`) is shown but can never be
approved. The layer that held it is the only thing a person's approval overrides.

One codec for the writer (precompute's explain record) and the readers (review, admin).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from welcomemat.zones.zoneset import Rung, ZoneContent

__all__ = ["HELD_NOTE_CHARS", "HeldDraft", "HoldLayer", "held_drafts", "one_line"]

HELD_NOTE_CHARS = 300  # one line for a terminal or an admin page, not a transcript


class HoldLayer(enum.StrEnum):
    """Which layer of doubt held the draft."""

    SELF_REVIEW = "self_review"  # the model's self-review judged it not ok
    MODEL_CONFIDENCE = "model_confidence"  # the model's own confidence is below the threshold
    # words nothing cited, the account or approved copy supports (precompute.claims.grounding)
    GROUNDING = "grounding"


def one_line(value: str, limit: int = HELD_NOTE_CHARS) -> str:
    """`value` as one printable line of at most `limit` characters (clipped with `…`)."""
    line = "".join(c for c in " ".join(value.split()) if c.isprintable())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class HeldDraft(BaseModel):
    """One zone's held draft: what would be served if approved, and why it is held.

    `content` is the zone exactly as it would be published (rung personal, or segment for a
    draft that uses no specific of its facts; cited facts, cleaned markup, gated link);
    `valid_until` the earliest expiry of what it cites; `failures` the deterministic checks
    it failed (`check:reason`): non-empty, never approvable.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    zone_id: str = Field(min_length=1)
    layer: HoldLayer
    note: str = ""
    draft: str
    content: ZoneContent | None = None  # None when it could not be built (e.g. its link refused)
    valid_until: datetime | None = None
    failures: tuple[str, ...] = ()

    @field_validator("note")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return one_line(value)

    @field_validator("content")
    @classmethod
    def _personal(cls, value: ZoneContent | None) -> ZoneContent | None:
        # Segment copy when the draft uses no specific of its facts (`not_specific`): approved,
        # it is still served as what it is.
        if value is not None and value.rung is Rung.DEFAULT:
            raise ValueError("a held draft's content is personal or segment copy")
        return value

    @property
    def approvable(self) -> bool:
        return not self.failures and self.content is not None

    def refusal(self, now: datetime) -> str | None:
        """Why a person cannot approve it now, or None."""
        if self.failures:
            return f"it fails deterministic checks ({', '.join(self.failures)}); approval never bypasses one"
        if self.content is None:
            return "it could not be built as personal copy"
        if self.valid_until is not None and now >= self.valid_until:
            return f"the facts it cites expired ({self.valid_until.date().isoformat()})"
        return None


def held_drafts(record: Mapping[str, Any]) -> dict[str, HeldDraft]:
    """The held drafts of an explain record by zone id (none in records written before them).

    A held entry that does not decode is left out: it cannot be approved, and the rest of
    the record still explains the zone.
    """
    out: dict[str, HeldDraft] = {}
    for zone in record.get("zones") or ():
        raw = zone.get("held") if isinstance(zone, Mapping) else None
        if raw is None:
            continue
        try:
            held = HeldDraft.model_validate(raw)
        except ValidationError:
            continue
        out[held.zone_id] = held
    return out
