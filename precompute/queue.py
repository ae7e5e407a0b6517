"""Distributed runs, the shared records: enqueue a run, the run record, its progress.

`welcomemat precompute --enqueue` calls `enqueue_run`: the accounts go on the campaign's
work stream (`keys.work_stream_key`) as `WorkEntry`s of `WORK_CHUNK_SIZE` accounts, read
by every `welcomemat worker` through one consumer group (`precompute.worker`). Each run
has a hash (`keys.run_key`) that any machine can read for progress:

    record          RunRecord as JSON: written once, at enqueue
    status          queued | running | complete
    finished_at     ISO 8601, set by the worker whose count reached `total`
    total           accounts in the run
    processed ...   counters (`COUNTERS`), HINCRBY'd once per acknowledged entry
    mode:<m> rung:<r> fallback:<reason> check:<check:reason> worker:<consumer>
                    the report's breakdowns, one field per value

Counting happens in the same atomic step as the acknowledgement, and only when the
acknowledgement is the first, so an entry processed twice (claimed back from a worker
that was slow, not dead) is counted once: the counters always add up to `total`.
"""

from __future__ import annotations

import enum
import json
import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple, Self

import redis
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from precompute.company_names import short_name
from precompute.report import AccountFailure, MalformedRow, RunReport
from precompute.run import PrecomputeRun
from welcomemat import keys
from welcomemat.errors import StoredValueError
from welcomemat.ids import OpaqueId, is_valid_id
from welcomemat.records.accounts import Account
from welcomemat.streams.groups import ensure_group as ensure_stream_group
from welcomemat.streams.handler import Stream

__all__ = [
    "COUNTERS",
    "MAX_DELIVERIES",
    "WORK_CHUNK_SIZE",
    "ActiveRun",
    "RunProgress",
    "RunRecord",
    "RunStatus",
    "WorkEntry",
    "active_runs",
    "counter_increments",
    "enqueue_run",
    "ensure_group",
    "entry_header",
    "latest_run_id",
    "new_run_id",
    "read_progress",
    "work_stream",
]

# Accounts per stream entry: small enough that a claimed-back entry redoes little work and
# two workers share a run evenly, big enough that a chunk still batches its Redis calls.
WORK_CHUNK_SIZE = 50
# Deliveries after which an entry that never got acknowledged goes to the dead-letter stream.
MAX_DELIVERIES = 5
# Entries per MULTI/EXEC at enqueue: bounds what Redis buffers for one transaction.
_ENQUEUE_BATCH = 20

COUNTERS = (
    "processed",  # accounts whose entry was acknowledged (done or dead-lettered)
    "published",
    "unchanged",
    "resumed",
    "deferred",
    "provider_answered",  # accounts the provider answered for (none while deferring: every call failed)
    "failed",
    "pending_review",
    "model_calls",
    "tokens",
    "input_tokens",  # of `tokens`, the prompts' (the cost prices them apart from the output's)
    "output_tokens",
    "personal_published",  # new versions with a personal zone (the results page's cost per account)
    "retries",
    "breaker_openings",
    "entries_done",
    "dead_lettered",  # entries moved to the dead-letter stream
    "suppressed",  # erased accounts left out (`welcomemat.records.erasure`)
)
_BREAKDOWNS = {
    "mode": "by_mode",
    "rung": "zones_by_rung",
    "fallback": "fallback_reasons",
    "check": "check_failures",
    "deferred_cause": "deferred_causes",
}


class RunStatus(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETE = "complete"


class RunRecord(BaseModel):
    """What a run is: written once at enqueue; workers build their `PrecomputeRun` from it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: OpaqueId
    tenant: OpaqueId
    campaign: OpaqueId
    total: int = Field(ge=1)
    entries: int = Field(ge=1)
    provider: str
    provider_options: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    # campaign_fingerprint at enqueue: a worker whose campaign config or provider differs
    # refuses the run instead of publishing zone sets nobody asked for.
    fingerprint: str
    resume: bool = False
    created_at: datetime
    accounts_file: str
    rows_read: int = 0
    malformed: list[MalformedRow] = Field(default_factory=list)


class WorkEntry(BaseModel):
    """One stream entry: a chunk of a run's accounts, as the accounts file had them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: OpaqueId
    seq: int = Field(ge=0)
    account_ids: tuple[OpaqueId, ...]
    accounts: tuple[Account, ...]

    @model_validator(mode="after")
    def _ids_match(self) -> Self:
        if tuple(a.account_id for a in self.accounts) != self.account_ids:
            raise ValueError("account_ids do not match the accounts' ids")
        return self

    def to_fields(self) -> dict[str, str]:
        """Stream fields. Run and ids stand apart from the records so that an entry whose
        records do not decode can still be dead-lettered and its accounts journalled."""
        return {
            "run": self.run_id,
            "seq": str(self.seq),
            "ids": ",".join(self.account_ids),  # ids hold no commas (welcomemat.ids)
            "accounts": json.dumps([a.model_dump(mode="json") for a in self.accounts], ensure_ascii=False),
        }

    @classmethod
    def from_fields(cls, stream_key: str, entry_id: str, fields: Mapping[bytes, bytes]) -> WorkEntry:
        """Decode a stream entry; StoredValueError (naming key and entry) when it does not."""
        where = f"{stream_key} entry {entry_id}"
        try:
            text = {k.decode(): v.decode() for k, v in fields.items()}
            return cls.model_validate(
                {
                    "run_id": text["run"],
                    "seq": int(text["seq"]),
                    "account_ids": tuple(text["ids"].split(",")) if text["ids"] else (),
                    "accounts": json.loads(text["accounts"]),
                }
            )
        except (KeyError, ValueError, UnicodeDecodeError, ValidationError) as exc:
            raise StoredValueError(where, f"{type(exc).__name__}: {exc}") from None


def entry_header(fields: Mapping[bytes, bytes] | None) -> tuple[str | None, tuple[str, ...]]:
    """Run id and account ids of an entry that may not decode, or (None, ()) where unreadable."""
    if not fields:
        return None, ()
    try:
        run_id: str | None = fields.get(b"run", b"").decode()
        ids = tuple(i for i in fields.get(b"ids", b"").decode().split(",") if is_valid_id(i))
    except UnicodeDecodeError:
        return None, ()
    return (run_id if is_valid_id(run_id) else None), ids


class ActiveRun(NamedTuple):
    tenant: str
    campaign: str
    run_id: str


class RunProgress(BaseModel):
    """A run as any machine reads it: the record, its status and what workers counted so far."""

    model_config = ConfigDict(extra="forbid")

    record: RunRecord
    status: RunStatus
    finished_at: datetime | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    by_mode: dict[str, int] = Field(default_factory=dict)
    zones_by_rung: dict[str, int] = Field(default_factory=dict)
    fallback_reasons: dict[str, int] = Field(default_factory=dict)
    check_failures: dict[str, int] = Field(default_factory=dict)
    deferred_causes: dict[str, int] = Field(default_factory=dict)
    by_worker: dict[str, int] = Field(default_factory=dict)
    failures: list[AccountFailure] = Field(default_factory=list)
    pending_entries: int = 0  # delivered to a worker, not acknowledged yet (any run of the campaign)

    @property
    def complete(self) -> bool:
        return self.status is RunStatus.COMPLETE

    def count(self, name: str) -> int:
        return self.counts.get(name, 0)

    def to_report(self, now: datetime | None = None) -> RunReport:
        """The run's report, shaped like a local run's. `seconds` runs from enqueue to the last
        acknowledgement (or to `now` while running), so it includes time spent waiting for workers."""
        record = self.record
        end = self.finished_at or now or datetime.now(UTC)
        seconds = max(0.0, (end - record.created_at).total_seconds())
        return RunReport(
            tenant=record.tenant,
            campaign=record.campaign,
            provider=record.provider,
            started_at=record.created_at.isoformat(),
            seconds=round(seconds, 3),
            rows_read=record.rows_read,
            accounts=self.count("processed"),
            malformed=record.malformed,
            published=self.count("published"),
            unchanged=self.count("unchanged"),
            resumed=self.count("resumed"),
            pending_review=self.count("pending_review"),
            suppressed=self.count("suppressed"),
            failed=self.failures,
            by_mode=self.by_mode,
            zones_by_rung=self.zones_by_rung,
            fallback_reasons=self.fallback_reasons,
            check_failures=self.check_failures,
            deferred=self.count("deferred"),
            deferred_causes=self.deferred_causes,
            provider_answered=self.count("provider_answered"),
            model_calls=self.count("model_calls"),
            retries=self.count("retries"),
            breaker_openings=self.count("breaker_openings"),
            tokens=self.count("tokens"),
            input_tokens=self.count("input_tokens"),
            output_tokens=self.count("output_tokens"),
            personal_published=self.count("personal_published"),
            accounts_per_second=round(self.count("processed") / seconds, 1) if seconds else 0.0,
        )


def new_run_id(now: datetime) -> str:
    """Sortable by time, unique without coordination: `20261129T101500-3fa2c1`."""
    return f"{now.astimezone(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


def work_stream(tenant: str, campaign: str) -> Stream:
    """The campaign's work stream as the consumer loop (`welcomemat.streams.consumer`) reads it:
    acknowledged entries are deleted, failing ones go to the campaign's dead-letter stream."""
    return Stream(
        key=keys.work_stream_key(tenant, campaign),
        group=keys.WORK_CONSUMER_GROUP,
        ttl_s=keys.WORK_STREAM_TTL_S,
        label=f"{tenant}/{campaign}",
        dead_letter_key=keys.dead_letter_stream_key(tenant, campaign),
        delete_acked=True,
        scope=(tenant, campaign),
    )


def ensure_group(client: redis.Redis, tenant: str, campaign: str) -> None:
    """Create the campaign's work stream and consumer group if missing (idempotent); refresh its TTL."""
    stream = work_stream(tenant, campaign)
    ensure_stream_group(client, stream)
    client.expire(stream.key, stream.ttl_s)


def enqueue_run(
    run: PrecomputeRun,
    accounts: Sequence[Account],
    *,
    accounts_file: str,
    rows_read: int,
    malformed: Sequence[MalformedRow],
    provider_options: Mapping[str, str | int | float | bool | None],
    chunk_size: int = WORK_CHUNK_SIZE,
) -> RunRecord:
    """Put `accounts` on the campaign's work stream for workers; nothing is processed here.

    Does what a local run does before its first account (`run.prepare`: contracts
    published, every account journalled `accepted`), stores the run record and the run's
    company names, then adds the entries in transactions of `_ENQUEUE_BATCH`. The record
    goes first, so a worker that starts on the first entries already finds it.
    """
    if not accounts:
        raise ValueError("enqueue_run needs at least one account")
    client, tenant, campaign = run.client, run.campaign.tenant, run.campaign.campaign
    chunks = [accounts[i : i + chunk_size] for i in range(0, len(accounts), chunk_size)]
    record = RunRecord(
        run_id=new_run_id(run.now),
        tenant=tenant,
        campaign=campaign,
        total=len(accounts),
        entries=len(chunks),
        provider=run.provider.name,
        provider_options=dict(provider_options),
        fingerprint=run.fingerprint,
        resume=run.resume,
        created_at=run.now,
        accounts_file=accounts_file,
        rows_read=rows_read,
        malformed=list(malformed),
    )
    run.prepare(accounts)
    ensure_group(client, tenant, campaign)
    run_key = keys.run_key(tenant, campaign, record.run_id)
    companies = sorted({short_name(a.name).casefold() for a in accounts})
    pipe = client.pipeline(transaction=True)
    pipe.hset(
        run_key,
        mapping={"record": record.model_dump_json(), "status": RunStatus.QUEUED.value, "total": record.total},
    )
    pipe.expire(run_key, keys.RUN_TTL_S)
    companies_key = keys.run_companies_key(tenant, campaign, record.run_id)
    pipe.set(companies_key, json.dumps(companies, ensure_ascii=False), ex=keys.RUN_TTL_S)
    pipe.zadd(keys.runs_key(tenant, campaign), {record.run_id: run.now.timestamp()})
    pipe.expire(keys.runs_key(tenant, campaign), keys.RUN_TTL_S)
    pipe.execute()

    stream = keys.work_stream_key(tenant, campaign)
    for start in range(0, len(chunks), _ENQUEUE_BATCH):
        pipe = client.pipeline(transaction=True)
        for seq, chunk in enumerate(chunks[start : start + _ENQUEUE_BATCH], start=start):
            entry = WorkEntry(
                run_id=record.run_id,
                seq=seq,
                account_ids=tuple(a.account_id for a in chunk),
                accounts=tuple(chunk),
            )
            pipe.xadd(stream, entry.to_fields())  # type: ignore[arg-type]
        pipe.expire(stream, keys.WORK_STREAM_TTL_S)
        pipe.execute()

    index = keys.active_runs_key()
    pipe = client.pipeline(transaction=True)
    pipe.hset(index, f"{tenant}/{campaign}/{record.run_id}", run.now.isoformat())
    pipe.expire(index, keys.RUN_TTL_S)
    pipe.execute()
    return record


def counter_increments(report: RunReport, *, worker: str) -> dict[str, int]:
    """What one processed entry adds to its run's hash: HINCRBY field -> amount (no zeros)."""
    values: dict[str, int] = {
        "processed": report.accounts,
        "published": report.published,
        "unchanged": report.unchanged,
        "resumed": report.resumed,
        "deferred": report.deferred,
        "provider_answered": report.provider_answered,
        "failed": len(report.failed),
        "pending_review": report.pending_review,
        "model_calls": report.model_calls,
        "tokens": report.tokens,
        "input_tokens": report.input_tokens,
        "output_tokens": report.output_tokens,
        "personal_published": report.personal_published,
        "retries": report.retries,
        "breaker_openings": report.breaker_openings,
        "suppressed": report.suppressed,
        "entries_done": 1,
        f"worker:{worker}": report.accounts,
    }
    for prefix, attribute in _BREAKDOWNS.items():
        counts: dict[str, int] = getattr(report, attribute)
        values.update({f"{prefix}:{name}": n for name, n in counts.items()})
    return {k: v for k, v in values.items() if v}


def latest_run_id(client: redis.Redis, tenant: str, campaign: str) -> str | None:
    """The most recently enqueued run of a campaign, if any is still recorded."""
    newest: list[bytes] = client.zrevrange(keys.runs_key(tenant, campaign), 0, 0)  # type: ignore[assignment]
    return newest[0].decode() if newest else None


def read_progress(client: redis.Redis, tenant: str, campaign: str, run_id: str) -> RunProgress | None:
    """The run's record and counters, or None when no such run is recorded (or it expired)."""
    key = keys.run_key(tenant, campaign, run_id)
    raw: dict[bytes, bytes] = client.hgetall(key)  # type: ignore[assignment]
    if not raw:
        return None
    fields = {k.decode(): v.decode() for k, v in raw.items()}
    try:
        record = RunRecord.model_validate_json(fields["record"])
        status = RunStatus(fields.get("status", RunStatus.QUEUED.value))
        finished = datetime.fromisoformat(fields["finished_at"]) if "finished_at" in fields else None
    except (KeyError, ValueError) as exc:
        raise StoredValueError(key, f"{type(exc).__name__}: {exc}") from None
    progress = RunProgress(record=record, status=status, finished_at=finished)
    for name, value in fields.items():
        prefix, sep, rest = name.partition(":")
        if name in COUNTERS:
            progress.counts[name] = int(value)
        elif sep and prefix in _BREAKDOWNS:
            getattr(progress, _BREAKDOWNS[prefix])[rest] = int(value)
        elif sep and prefix == "worker":
            progress.by_worker[rest] = int(value)
    progress.fallback_reasons = _ranked(progress.fallback_reasons)
    progress.check_failures = _ranked(progress.check_failures)
    failures: dict[bytes, bytes] = client.hgetall(keys.run_failures_key(tenant, campaign, run_id))  # type: ignore[assignment]
    progress.failures = [
        AccountFailure(account_id=k.decode(), reason=v.decode()) for k, v in sorted(failures.items())
    ]
    progress.pending_entries = _pending_count(client, keys.work_stream_key(tenant, campaign))
    return progress


def active_runs(client: redis.Redis) -> list[ActiveRun]:
    """Runs enqueued and not yet complete, from the index workers use to find streams."""
    raw: dict[bytes, Any] = client.hgetall(keys.active_runs_key())  # type: ignore[assignment]
    runs: list[ActiveRun] = []
    for field in sorted(raw):
        parts = field.decode().split("/")
        if len(parts) == 3 and all(is_valid_id(p) for p in parts):
            runs.append(ActiveRun(*parts))
    return runs


def _pending_count(client: redis.Redis, stream: str) -> int:
    try:
        summary: Mapping[str, Any] = client.xpending(stream, keys.WORK_CONSUMER_GROUP)
    except redis.ResponseError:  # no stream or no group (expired): nothing is pending
        return 0
    return int(summary.get("pending", 0))


def _ranked(counts: dict[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
