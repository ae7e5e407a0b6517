"""Copy experiments: two or three variants of one zone's patterns or voice, and who sees which.

A campaign declares at most one experiment at a time (`experiment:` in `campaign.yaml`). A
variant replaces, for the experiment's zone only, the offline composer's patterns of the fact
types it names, and/or the voice a model provider writes in; a variant that names nothing is
the campaign as written (the control). Each variant's drafts go through every check a draft
of the campaign goes through, with the vocabulary its own patterns approve, and a draft that
fails takes the zone's fallback copy: an experiment chooses among copy that passed, it never
relaxes a guard.

Assignment: only accounts in the personal arm (`welcomemat.arms`) get a variant; the holdout
sees its segment copy as before and carries none, so personal-vs-holdout lift stays clean.
The variant is drawn per account by a stable hash of (campaign, experiment, account), so
everyone at one account (the buying committee) sees one variant, on every run and renderer.
The hash is salted differently from the holdout's, so arm and variant are independent draws.
`welcomemat.campaign.experiment_assignment` applies this to a campaign and an account.

Stopping (`welcomemat experiment stop`) keeps the declaration and adds `stopped`: the variant
kept and the guideline version the experiment ran under. From then on every personal account
gets the kept variant. Accounts the hash had already given it keep their zone sets untouched
(their input hash is the one they had: `precompute.hashing`), so a returning visitor there sees
exactly what they saw; the others are rewritten with the kept variant at the next precompute.
The stop's guideline change record says so in its `recommendation` (`stop_recommendation`), in
words that `stopped_in` reads back: the admin's experiments page tells a stopped experiment
from a running one before the next precompute publishes the stop.
"""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel, ConfigDict, Field

from welcomemat.ids import ID_PATTERN, OpaqueId

__all__ = [
    "MAX_VARIANTS",
    "CopyVariant",
    "Experiment",
    "ExperimentStop",
    "assign_variant",
    "drawn_variant",
    "stop_recommendation",
    "stopped_in",
]

MAX_VARIANTS = 3
_SCALE = float(1 << 64)
_STRICT = ConfigDict(frozen=True, extra="forbid")
_ID = ID_PATTERN.removeprefix("^").removesuffix("$")
_STOPPED = re.compile(rf"experiment (?P<experiment>{_ID}) stopped: (?P<keep>{_ID}) is the only variant")


class CopyVariant(BaseModel):
    """One variant of the experiment's zone: its own patterns per fact type, its own voice, or neither."""

    model_config = _STRICT
    id: OpaqueId = Field(
        description="The variant's id: on zone sets, events, exports and the CRM record.", examples=["direct"]
    )
    patterns: dict[str, tuple[str, ...]] = Field(
        default={},
        description="Fact type → the offline composer's patterns for the experiment's zone, replacing the "
        "campaign's for that fact type and zone (same slots and checks as `patterns`).",
        examples=[{"funding": ["{account} just closed a {round}: ramp the new sellers fast"]}],
    )
    voice: str | None = Field(
        default=None,
        min_length=1,
        description="The voice a model provider writes this variant in, replacing the campaign's `voice` "
        "(the offline composer does not use voice).",
        examples=["Direct and brief. One idea per sentence."],
    )


class ExperimentStop(BaseModel):
    """How an experiment ended: the variant every personal account gets now."""

    model_config = _STRICT
    keep: OpaqueId = Field(
        description="The variant kept: every personal account gets it.", examples=["direct"]
    )
    ran_under: str = Field(
        min_length=1,
        description="The guideline version the experiment ran under: accounts already on the kept "
        "variant hash as they did then, so their zone sets stay as they are.",
        examples=["2026-11-01"],
    )


class Experiment(BaseModel):
    """A copy experiment on one zone: two or three variants, the first usually the control."""

    model_config = _STRICT
    id: OpaqueId = Field(
        description="The experiment's id; part of the assignment hash.", examples=["headline-angle"]
    )
    zone: OpaqueId = Field(
        description="The zone whose copy the variants differ in; a page must show it.",
        examples=["hero_headline"],
    )
    variants: tuple[CopyVariant, ...] = Field(
        min_length=2,
        max_length=MAX_VARIANTS,
        description="Two or three variants with distinct ids; a variant with no `patterns` and no `voice` "
        "is the campaign as written.",
        examples=[[{"id": "control"}, {"id": "direct", "voice": "Direct and brief."}]],
    )
    stopped: ExperimentStop | None = Field(
        default=None,
        description="Written by `welcomemat experiment stop`: the experiment is over and one variant kept.",
        examples=[{"keep": "direct", "ran_under": "2026-11-01"}],
    )

    def variant(self, variant_id: str) -> CopyVariant | None:
        return next((v for v in self.variants if v.id == variant_id), None)


def drawn_variant(campaign: str, experiment: Experiment, account: str) -> CopyVariant:
    """The variant the hash draws: sha256 of (campaign, experiment, account), first 64 bits, equal shares."""
    digest = hashlib.sha256(f"{campaign}\0{experiment.id}\0{account}".encode()).digest()
    position = int.from_bytes(digest[:8], "big") / _SCALE
    return experiment.variants[int(position * len(experiment.variants))]


def assign_variant(campaign: str, experiment: Experiment, account: str) -> CopyVariant:
    """The account's variant: the one drawn while the experiment runs, the kept one once it is stopped."""
    if experiment.stopped is not None:
        kept = experiment.variant(experiment.stopped.keep)
        if kept is not None:  # a campaign's load refuses an unknown one; never draw a stopped variant
            return kept
    return drawn_variant(campaign, experiment, account)


def stop_recommendation(experiment_id: str, keep: str) -> str:
    """The `recommendation` of the guideline change record `welcomemat experiment stop` writes."""
    return f"experiment {experiment_id} stopped: {keep} is the only variant"


def stopped_in(recommendation: str) -> tuple[str, str] | None:
    """(experiment id, variant kept) when a change record's `recommendation` is a stop's, else None."""
    found = _STOPPED.fullmatch(recommendation)
    return (found["experiment"], found["keep"]) if found else None
