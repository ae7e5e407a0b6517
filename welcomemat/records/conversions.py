"""Conversions: outcomes the CRM reports per account (positive reply, meeting booked, ...).

Goals (`GOAL_TYPES`: positive reply, meeting booked, opportunity, closed won) are what the
lift report counts as conversions; negative outcomes (`NEGATIVE_OUTCOMES`: unsubscribe, spam
complaint) come in the same way, are stored the same way, and are reported on their own.

A conversion is stored once per `conversion_id` (the CRM's own id for the meeting or the
opportunity) in the campaign's hash `keys.conversions_key`, together with the arm
`welcomemat.arms.assign_arm` gives the account, so the lift report compares like with
like. Posting the same conversion again changes nothing (idempotent: a CRM webhook that
retries is safe); posting different content under an id already used is refused
(`ConversionConflict`), so a mistake in the CRM does not silently rewrite history.

Both ways in share this module: `POST /v1/conversions` (server/engagement/conversions_api.py) and
`welcomemat conversions import FILE.jsonl` (`import_conversions`, run by
`cli.conversions_import`).
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import redis
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from redis.exceptions import RedisError

from welcomemat import keys
from welcomemat.arms import Arm, assign_arm
from welcomemat.bounded_json import decode_json, iter_lines
from welcomemat.bounded_time import BoundedInstant
from welcomemat.errors import InputError, StoredValueError, StoreError
from welcomemat.ids import OpaqueId
from welcomemat.limits import CONVERSION_MAX_BYTES
from welcomemat.validation_errors import dotted, first_problem

__all__ = [
    "CONVERSION_BODY_MAX_BYTES",
    "GOAL_TYPES",
    "NEGATIVE_OUTCOMES",
    "ConversionConflict",
    "ConversionIn",
    "ConversionType",
    "ImportReport",
    "RecordResult",
    "StoredConversion",
    "conversion_counts",
    "goal_types",
    "import_conversions",
    "iter_conversions",
    "parse_conversion",
    "record_conversion",
]

# A conversion is a handful of short fields; anything bigger is not one (HTTP body, JSONL line).
CONVERSION_BODY_MAX_BYTES = CONVERSION_MAX_BYTES  # bytes (welcomemat.limits)
_HSCAN_COUNT = 500

# KEYS[1]: the campaign's conversions hash. ARGV: conversion id, JSON, TTL s.
# Returns {1, json} when written, {0, stored json} when the id was already there.
_RECORD_LUA = """
local created = redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
if created == 1 then return {1, ARGV[2]} end
return {0, redis.call('HGET', KEYS[1], ARGV[1])}
"""


class ConversionType(enum.StrEnum):
    """What happened: the goals in the order a deal usually goes, then the negative outcomes."""

    POSITIVE_REPLY = "positive_reply"
    MEETING_BOOKED = "meeting_booked"
    OPPORTUNITY = "opportunity"
    CLOSED_WON = "closed_won"
    UNSUBSCRIBE = "unsubscribe"
    SPAM_COMPLAINT = "spam_complaint"


# Outcomes nobody wants: never a conversion; the lift report shows them per arm and warns when
# the personal arm raises them (`welcomemat.lift.negatives`).
NEGATIVE_OUTCOMES: frozenset[ConversionType] = frozenset(
    {ConversionType.UNSUBSCRIBE, ConversionType.SPAM_COMPLAINT}
)
# What the lift report counts as a conversion unless `--type` / `?type=` picks some.
GOAL_TYPES: frozenset[ConversionType] = frozenset(set(ConversionType) - NEGATIVE_OUTCOMES)


def goal_types(names: Iterable[str]) -> frozenset[ConversionType] | None:
    """The conversion types a report's `--type` / `?type=` names (None: none named, every goal).

    `ValueError` naming the first unknown type, or a negative outcome (shown on its own, never
    counted as a conversion), and the types it could have been.
    """
    chosen = list(names)
    if not chosen:
        return None
    goals = ", ".join(t.value for t in ConversionType if t in GOAL_TYPES)
    for name in chosen:
        if name in {t.value for t in NEGATIVE_OUTCOMES}:
            raise ValueError(
                f"{name!r} is a negative outcome, not a conversion: the report shows it per arm on its "
                f"own; choose among {goals}"
            )
        if name not in {t.value for t in GOAL_TYPES}:
            raise ValueError(f"unknown conversion type {name!r}; use {goals}")
    return frozenset(ConversionType(n) for n in chosen)


# The CRM's own id: printable, no spaces, at most 128 characters (a hash field, never a key).
ConversionId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@/+=-]{0,127}$")]


class ConversionIn(BaseModel):
    """One conversion as the CRM sends it (the body of `POST /v1/conversions`, a JSONL line)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    campaign: OpaqueId
    account_id: OpaqueId
    type: ConversionType
    conversion_id: ConversionId
    # Years 2000-2100 in UTC, normalised to UTC (`welcomemat.bounded_time`): readers move it to a day.
    occurred_at: BoundedInstant
    value: float | None = Field(default=None, ge=0, allow_inf_nan=False, description="deal value, if any")


class StoredConversion(BaseModel):
    """A conversion as stored: what the CRM sent, plus the tenant, the arm and when it arrived."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: OpaqueId
    campaign: OpaqueId
    account_id: OpaqueId
    type: ConversionType
    conversion_id: ConversionId
    # Bounded on reading too: a value stored before the bound existed does not decode, and its
    # reader skips it (`iter_conversions`' problems) instead of crashing on it.
    occurred_at: BoundedInstant
    value: float | None = None
    arm: Arm
    received_at: BoundedInstant

    def same_outcome(self, other: StoredConversion) -> bool:
        """Same conversion as far as the CRM is concerned (arrival time and arm aside)."""
        fields = ("campaign", "account_id", "type", "conversion_id", "value")
        return all(getattr(self, f) == getattr(other, f) for f in fields) and (
            self.occurred_at == other.occurred_at
        )


class ConversionConflict(InputError):
    """A conversion id already stored with different content."""


@dataclass(frozen=True)
class RecordResult:
    """`created` is False when the conversion was already stored (an idempotent repeat)."""

    created: bool
    stored: StoredConversion


def parse_conversion(raw: bytes | str) -> ConversionIn:
    """A conversion from JSON (`welcomemat.bounded_json`); `InputError` naming the field if not one."""
    data = decode_json(raw, max_bytes=CONVERSION_BODY_MAX_BYTES)
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object, got {type(data).__name__}")
    try:
        return ConversionIn.model_validate(data)
    except ValidationError as exc:
        loc, message = first_problem(exc)
        raise InputError(message, field=dotted(loc)) from None


def record_conversion(
    client: redis.Redis, tenant: str, holdout_fraction: float, conversion: ConversionIn, *, now: datetime
) -> RecordResult:
    """Store a conversion with its account's arm, once per conversion id.

    Raises `ConversionConflict` when the id is stored with different content, `StoreError`
    when Redis fails, `StoredValueError` when what is stored under the id does not decode.
    """
    arm = assign_arm(tenant, conversion.campaign, conversion.account_id, holdout_fraction)
    stored = StoredConversion(
        tenant=tenant, arm=arm, received_at=now.astimezone(UTC), **conversion.model_dump()
    )
    key = keys.conversions_key(tenant, conversion.campaign)
    try:
        reply = client.register_script(_RECORD_LUA)(
            keys=[key], args=[conversion.conversion_id, stored.model_dump_json(), keys.CONVERSIONS_TTL_S]
        )
    except RedisError as exc:
        raise StoreError(
            f"Redis write of conversion {conversion.conversion_id!r} to {key!r} failed: {exc}"
        ) from exc
    created, raw = int(reply[0]), reply[1]
    if created:
        return RecordResult(True, stored)
    existing = _decode(key, raw)
    if not existing.same_outcome(stored):
        raise ConversionConflict(
            f"conversion {conversion.conversion_id!r} is already recorded with different content "
            f"({existing.type.value} for {existing.account_id} at {existing.occurred_at.isoformat()}); "
            "a conversion id names one outcome",
            field="conversion_id",
        )
    return RecordResult(False, existing)


def _decode(key: str, raw: object) -> StoredConversion:
    try:
        return StoredConversion.model_validate_json(raw if isinstance(raw, (bytes, str)) else b"")
    except ValidationError as exc:
        loc, message = first_problem(exc)
        raise StoredValueError(key, f"{dotted(loc) or '(value)'}: {message}") from None


def iter_conversions(
    client: redis.Redis, tenant: str, campaign: str, *, problems: list[StoredValueError] | None = None
) -> Iterator[StoredConversion]:
    """Every stored conversion of a campaign (HSCAN, any order).

    One that does not decode (corrupt, or stored before its date was bounded) raises
    `StoredValueError`, unless `problems` is given: then it is appended there (naming the key
    and the conversion id) and skipped, so one bad value costs only itself.
    """
    key = keys.conversions_key(tenant, campaign)
    try:
        for conversion_id, raw in client.hscan_iter(key, count=_HSCAN_COUNT):
            try:
                yield _decode(key, raw)
            except StoredValueError as exc:
                if problems is None:
                    raise
                where = (
                    conversion_id.decode(errors="replace")
                    if isinstance(conversion_id, bytes)
                    else conversion_id
                )
                problems.append(StoredValueError(f"{key} {where}", exc.detail))
    except RedisError as exc:
        raise StoreError(f"Redis HSCAN of {key!r} failed: {exc}") from exc


def conversion_counts(
    client: redis.Redis,
    tenant: str,
    campaign: str,
    types: frozenset[ConversionType] | None = None,
    *,
    problems: list[StoredValueError] | None = None,
) -> Counter[str]:
    """Conversions per account id (of the given types; all types when None); `problems` as
    `iter_conversions`."""
    counts: Counter[str] = Counter()
    for conversion in iter_conversions(client, tenant, campaign, problems=problems):
        if types is None or conversion.type in types:
            counts[conversion.account_id] += 1
    return counts


@dataclass
class ImportReport:
    """What `import_conversions` did: counts, and every bad line with where and why."""

    recorded: int = 0
    repeated: int = 0
    problems: list[InputError] = field(default_factory=list)


def import_conversions(
    client: redis.Redis,
    path: Path,
    campaign_target: Callable[[str], tuple[str, float]],
    *,
    now: datetime,
) -> ImportReport:
    """Record every good line of a JSONL file; bad lines are reported (file, line, field), not fatal.

    `campaign_target` gives a campaign id's (tenant, holdout fraction), or raises `InputError`
    (a line naming a campaign nobody published is a bad line).
    """
    report = ImportReport()
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read conversions file: {exc.strerror}", file=path) from None
    with handle:
        for number, line in iter_lines(handle, CONVERSION_BODY_MAX_BYTES):
            if line is not None and not line.strip():
                continue
            try:
                if line is None:  # skipped unread: never held whole
                    raise InputError(f"line is over {CONVERSION_BODY_MAX_BYTES} bytes")
                conversion = parse_conversion(line)
                tenant, fraction = campaign_target(conversion.campaign)
                result = record_conversion(client, tenant, fraction, conversion, now=now)
            except InputError as exc:
                report.problems.append(InputError(exc.message, file=path, line=number, field=exc.field))
                continue
            if result.created:
                report.recorded += 1
            else:
                report.repeated += 1
    return report
