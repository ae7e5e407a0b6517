"""Versioned guidelines: the part of `campaign.yaml` that is the campaign's judgment.

The guideline bundle is the fields that decide what copy is written and what is refused
(`GUIDELINE_FIELDS`): voice (its words, example lines and the profile built from them) and
vocabulary, the offline writer's patterns, banned phrases,
openers and claim classes, the check thresholds (minimum confidence, signal windows, QA
limits), the fallback copy (default and segment copy, proof points) and the risk tier.
Ids, hosts, pages, CTAs and holdout are not judgment and are left out. Prompts are the
provider's files (`precompute/providers/prompts/`), versioned with the code and covered by
the input hash, not by the bundle. A bundle has a version (`guideline_version`, written by
a person) and a content hash: SHA-256 of its canonical JSON (sorted keys, no spaces).

A change from one version to the next has a `GuidelineChange` record, kept in Redis per
campaign (`keys.guidelines_key`): a hash of version -> record JSON, and `@active` -> the
active version. The bundles themselves live as files in the campaign folder
(`guidelines/<version>.yaml`, a copy of `campaign.yaml` as it was), so a rollback restores
the file precompute reads; Redis says which of them is active and who approved it.

A candidate is a whole `campaign.yaml`, but promoting it changes only the bundle (and its
`guideline_version`): `outside_bundle` lists every other field in which it differs from the
active file, which `welcomemat guidelines promote` refuses until they are the same (a settings
edit of `campaign.yaml` is made on its own, not smuggled in with a guideline change).
"""

from __future__ import annotations

import enum
import hashlib
import json
from typing import Any, Literal

import redis
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from welcomemat import keys
from welcomemat.campaign.contract import Campaign
from welcomemat.errors import StoredValueError
from welcomemat.replies import reply_text

__all__ = [
    "ACTIVE_FIELD",
    "BUNDLE_LABEL",
    "GUIDELINE_FIELDS",
    "READY_FOR_PROMOTION",
    "ActivationState",
    "FieldDifference",
    "GuidelineChange",
    "GuidelineStore",
    "SetValidation",
    "bundle_differences",
    "guideline_bundle",
    "guideline_hash",
    "outside_bundle",
]

GUIDELINE_FIELDS = (
    "voice",
    "voice_examples",
    "voice_profile",
    "vocabulary",
    "approved_words",
    "patterns",
    "fact_types",
    "banned_phrases",
    "banned_openers",
    "prohibited_claims",
    "min_confidence",
    "signal_windows_days",
    "qa",
    "default_copy",
    "segments",
    "proof_library",
    "risk_tier",
    "experiment",
)
# The bundle's version label: promoted with the bundle, though not part of its hash.
BUNDLE_LABEL = "guideline_version"
# A candidate report's recommendation when it may be promoted (`precompute.guideline_replay`).
READY_FOR_PROMOTION = "READY FOR PROMOTION"
# The hash field naming the active version; versions are written by people and never start with @.
ACTIVE_FIELD = "@active"


# Fields left out of the bundle while unset, so a campaign that never used them hashes as it
# did before they existed (its active version stays the one recorded).
_OMITTED_WHEN_UNSET = ("voice_examples", "voice_profile", "experiment", "fact_types", "approved_words")


def guideline_bundle(campaign: Campaign) -> dict[str, Any]:
    """The campaign's guideline fields as JSON values.

    No experiment, no voice examples: those keys are left out, so a campaign's hash is what it
    was before they existed; a running experiment is without `stopped`, so its hash is what it
    was before experiments could stop.
    """
    bundle = campaign.model_dump(mode="json", include=set(GUIDELINE_FIELDS))
    for name in _OMITTED_WHEN_UNSET:
        if not bundle.get(name):
            bundle.pop(name, None)
    if bundle.get("experiment") and bundle["experiment"].get("stopped") is None:
        bundle["experiment"].pop("stopped", None)  # a running experiment hashes as it always did
    return bundle


def guideline_hash(campaign: Campaign) -> str:
    """SHA-256 (hex) of the bundle's canonical JSON: the same judgment hashes the same."""
    bundle = guideline_bundle(campaign)
    canonical = json.dumps(bundle, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


_SHOWN_CHARS = 200  # a difference's value as the report shows it: enough to recognise it


class FieldDifference(BaseModel):
    """A top-level `campaign.yaml` field in which a candidate differs from the active file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    field: str
    change: Literal["added", "removed", "changed"]
    active: str | None = None  # the value as JSON, clipped; None when the file does not set it
    candidate: str | None = None

    def describe(self) -> str:
        if self.change == "changed":
            return f"{self.field} (changed: {self.active} -> {self.candidate})"
        return f"{self.field} ({self.change})"


def _shown(campaign: Campaign, name: str) -> str | None:
    if name not in campaign.model_fields_set:
        return None
    text = json.dumps(campaign.model_dump(mode="json", include={name}).get(name), ensure_ascii=False)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def _differences(active: Campaign, candidate: Campaign, names: list[str]) -> tuple[FieldDifference, ...]:
    out: list[FieldDifference] = []
    for name in names:
        before = active.model_dump(mode="json", include={name}).get(name)
        after = candidate.model_dump(mode="json", include={name}).get(name)
        was, now = name in active.model_fields_set, name in candidate.model_fields_set
        if before == after:
            continue  # stated in one file and the default in the other is the same campaign
        change: Literal["added", "removed", "changed"] = (
            "removed" if was and not now else "added" if now and not was else "changed"
        )
        out.append(
            FieldDifference(
                field=name, change=change, active=_shown(active, name), candidate=_shown(candidate, name)
            )
        )
    return tuple(out)


def outside_bundle(active: Campaign, candidate: Campaign) -> tuple[FieldDifference, ...]:
    """Every field outside the guideline bundle (and its label) in which the candidate differs."""
    inside = {*GUIDELINE_FIELDS, BUNDLE_LABEL}
    return _differences(active, candidate, [n for n in Campaign.model_fields if n not in inside])


def bundle_differences(active: Campaign, candidate: Campaign) -> tuple[FieldDifference, ...]:
    """The bundle's fields the candidate changes: what promoting it writes into `campaign.yaml`."""
    return _differences(active, candidate, list(GUIDELINE_FIELDS))


class ActivationState(enum.StrEnum):
    """Where a guideline version stands."""

    CANDIDATE = "candidate"  # proposed and validated, waiting for its sign-off and promotion
    ACTIVE = "active"  # what precompute writes with now
    SUPERSEDED = "superseded"  # was active; a later version was promoted over it
    ROLLED_BACK = "rolled_back"  # was active; rolled back to its previous version


class SetValidation(BaseModel):
    """One account set's result in a candidate report, as the change record keeps it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    set: str
    accounts: int
    passed_before: int
    passed_after: int
    failure_rate_before: float
    failure_rate_after: float
    changed_zones: int
    new_blockers: int


class GuidelineChange(BaseModel):
    """The change record of one guideline version: from which, why, on what evidence, approved by whom."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: str
    campaign: str
    version: str = Field(min_length=1)
    hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    previous_version: str | None = None
    previous_hash: str | None = None
    reason: str = ""
    evidence: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()
    approvers_required: int = Field(default=1, ge=1, le=2)
    # A high-risk change's first step: who signed off the diagnosis in the report, and when.
    signed_off_by: str | None = None
    signed_off_at: AwareDatetime | None = None
    validation: tuple[SetValidation, ...] = ()
    recommendation: str = ""
    report_sha256: str | None = None
    state: ActivationState = ActivationState.CANDIDATE
    rollback_target: str | None = None  # the version a rollback of this one restores
    proposed_at: AwareDatetime | None = None
    activated_at: AwareDatetime | None = None


class GuidelineStore:
    """Change records of a campaign's guideline versions in Redis, and which one is active."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def get(self, tenant: str, campaign: str, version: str) -> GuidelineChange | None:
        key = keys.guidelines_key(tenant, campaign)
        raw = self.client.hget(key, version)
        return None if raw is None else _decode(key, version, raw)

    def active_version(self, tenant: str, campaign: str) -> str | None:
        raw = self.client.hget(keys.guidelines_key(tenant, campaign), ACTIVE_FIELD)
        return None if raw is None else reply_text(raw)

    def history(self, tenant: str, campaign: str) -> list[GuidelineChange]:
        """Every recorded version, oldest proposal first."""
        key = keys.guidelines_key(tenant, campaign)
        found = [
            _decode(key, reply_text(field), raw)
            for field, raw in self.client.hgetall(key).items()
            if reply_text(field) != ACTIVE_FIELD
        ]
        return sorted(found, key=lambda c: (c.proposed_at.isoformat() if c.proposed_at else "", c.version))

    def save(self, *changes: GuidelineChange, active: str | None = None) -> None:
        """Write records (and the active version) in one transaction; every field shares the key."""
        if not changes:
            return
        key = keys.guidelines_key(changes[0].tenant, changes[0].campaign)
        mapping: dict[str, str] = {c.version: c.model_dump_json() for c in changes}
        if active is not None:
            mapping[ACTIVE_FIELD] = active
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(key, mapping=mapping)  # type: ignore[arg-type]
        pipe.expire(key, keys.GUIDELINES_TTL_S)
        pipe.execute()


def _decode(key: str, version: str, raw: Any) -> GuidelineChange:
    try:
        return GuidelineChange.model_validate_json(reply_text(raw))
    except (UnicodeDecodeError, ValidationError) as exc:
        raise StoredValueError(f"{key} {version}", f"{type(exc).__name__}: {exc}") from None
