"""`welcomemat worker`: consume enqueued runs from the campaigns' work streams.

Any number of workers, on any machines, join one consumer group per campaign stream
(`keys.WORK_CONSUMER_GROUP`). Delivery is at-least-once; what keeps it correct:

- an entry is processed by `PrecomputeRun.process`, the code path of a local run, and
  publishing is idempotent (same input hash: no new version), so doing an entry twice
  changes nothing a visitor can see;
- the acknowledgement and the run's counters are one Lua step that counts only if this
  XACK was the first, so the counters add up to the run's total however often an entry ran;
- an entry idle on a consumer longer than `claim_idle_ms` was left by a dead worker:
  XAUTOCLAIM takes it over. A live worker keeps its in-flight entry from being claimed by
  resetting its idle time (XCLAIM JUSTID, which does not count as a delivery);
- an entry that fails `max_deliveries` times (or was delivered that often and never
  acknowledged: it kills its workers) goes to the dead-letter stream, its accounts are
  journalled `failed`, and it counts as processed, so the run still completes;
- SIGTERM/SIGINT finish the entry in hand, then stop (`stop_on_signals`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import redis

from precompute.providers.base import Provider
from precompute.queue import (
    MAX_DELIVERIES,
    ActiveRun,
    RunRecord,
    WorkEntry,
    active_runs,
    counter_increments,
    ensure_group,
    entry_header,
    read_progress,
)
from precompute.report import RunReport
from precompute.run import JournalState, PrecomputeRun, SampleCandidate, load_campaign_config
from welcomemat import keys
from welcomemat.errors import ConfigError

__all__ = [
    "CLAIM_BATCH",
    "DEFAULT_BLOCK_MS",
    "DEFAULT_CLAIM_IDLE_MS",
    "ProviderFactory",
    "Worker",
    "WorkerOptions",
    "WorkerStats",
    "default_consumer_name",
    "stop_on_signals",
]

DEFAULT_BLOCK_MS = 2_000  # how long one XREADGROUP waits for work; also the longest SIGTERM waits
# An entry unacknowledged this long sits on a dead worker: live ones reset it every third of it.
DEFAULT_CLAIM_IDLE_MS = 60_000
CLAIM_BATCH = 10  # entries taken over per XAUTOCLAIM
_RUN_CACHE_MAX = 8  # runs whose campaign, provider and assembler a worker keeps ready
_INDEX_REFRESH_S = 1.0  # how often a worker without --campaign rereads the active-run index
_REDIS_ERRORS_MAX = 10  # consecutive failed cycles (Redis down) before the worker gives up

# Acknowledge an entry and, only if this XACK was the first, add its counts to the run.
# KEYS: work stream, run hash. ARGV: group, entry id, run TTL s, stream TTL s, finished at,
# then field, increment pairs. Returns -1 already acknowledged, -2 run record gone,
# 1 this count completed the run, 0 otherwise.
_ACK_LUA = """
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then return -1 end
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[4])
if redis.call('EXISTS', KEYS[2]) == 0 then return -2 end
for i = 6, #ARGV, 2 do redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[2], ARGV[3])
local status = redis.call('HGET', KEYS[2], 'status')
local processed = tonumber(redis.call('HGET', KEYS[2], 'processed') or '0')
local total = tonumber(redis.call('HGET', KEYS[2], 'total') or '-1')
if status ~= 'complete' and total >= 0 and processed >= total then
  redis.call('HSET', KEYS[2], 'status', 'complete', 'finished_at', ARGV[5])
  return 1
end
if status == 'queued' then redis.call('HSET', KEYS[2], 'status', 'running') end
return 0
"""

# Builds the provider a run names, with the run's options (e.g. `precompute.commands.make_provider`).
ProviderFactory = Callable[[str, Mapping[str, object]], Provider]


def default_consumer_name() -> str:
    """`host:pid`: stable for the process, distinct across processes and machines."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class WorkerOptions:
    name: str
    campaign: tuple[str, str] | None = None  # (tenant, campaign); None: every active run
    block_ms: int = DEFAULT_BLOCK_MS
    claim_idle_ms: int = DEFAULT_CLAIM_IDLE_MS
    max_deliveries: int = MAX_DELIVERIES
    once: bool = False  # drain what is there (including entries left by dead workers), then return


@dataclass
class WorkerStats:
    entries: int = 0  # acknowledged by this worker (processed or dead-lettered)
    accounts: int = 0
    claimed: int = 0  # taken over by XAUTOCLAIM: left by dead workers, or failed here and retried
    attempts_failed: int = 0
    dead_lettered: int = 0
    runs_completed: int = 0


@dataclass(frozen=True)
class _Stream:
    tenant: str
    campaign: str

    @property
    def key(self) -> str:
        return keys.work_stream_key(self.tenant, self.campaign)


@dataclass
class _RunContext:
    record: RunRecord
    run: PrecomputeRun


class Worker:
    """One consumer: reads, claims back, processes, acknowledges, dead-letters."""

    def __init__(
        self,
        client: redis.Redis,
        provider_factory: ProviderFactory,
        options: WorkerOptions,
        *,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.client = client
        self.provider_factory = provider_factory
        self.options = options
        self.name = options.name
        self.stats = WorkerStats()
        self._log = log or (lambda line: print(f"worker {options.name}: {line}", file=sys.stderr, flush=True))
        self._stopping = threading.Event()
        self._ack = client.register_script(_ACK_LUA)
        self._runs: dict[str, _RunContext] = {}
        self._streams_cache: list[_Stream] = []
        self._streams_read_at = float("-inf")
        # Claim back at least twice per idle threshold, so a dead worker's entry waits < 1.5x it.
        self._claim_every_s = max(0.05, min(options.claim_idle_ms / 2000, 5.0))

    # -- lifecycle -----------------------------------------------------------------------------

    def stop(self) -> None:
        """Finish the entry in hand, then return from `run` (safe from a signal handler)."""
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def run(self) -> WorkerStats:
        """Work until stopped (or, with `once`, until every stream is drained)."""
        try:
            return self._work()
        finally:
            for context in self._runs.values():
                context.run.close()  # the runs' assembly threads

    def _work(self) -> WorkerStats:
        last_claim = float("-inf")
        errors = 0
        rotation = 0
        while not self.stopping:
            try:
                streams = self._streams()
                if not streams:
                    if self.options.once:
                        break
                    self._stopping.wait(self.options.block_ms / 1000)
                    continue
                done = 0
                if time.monotonic() - last_claim >= self._claim_every_s:
                    last_claim = time.monotonic()
                    done += self._claim_idle(streams)
                if self.stopping:
                    break
                rotation = (rotation + 1) % len(streams)
                done += self._read_new(streams[rotation:] + streams[:rotation], block=done == 0)
                if done == 0 and self.options.once and self._drained(streams):
                    break
                errors = 0
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                errors += 1
                if errors >= _REDIS_ERRORS_MAX:
                    raise
                self._log(f"Redis unavailable ({exc}); retrying")
                self._stopping.wait(min(5.0, 0.2 * 2**errors))
        return self.stats

    # -- finding work --------------------------------------------------------------------------

    def _streams(self) -> list[_Stream]:
        if self.options.campaign is not None:
            if not self._streams_cache:
                ensure_group(self.client, *self.options.campaign)
                self._streams_cache = [_Stream(*self.options.campaign)]
            return self._streams_cache
        if time.monotonic() - self._streams_read_at >= _INDEX_REFRESH_S:
            self._streams_read_at = time.monotonic()
            runs = active_runs(self.client)
            self._forget_finished(runs)
            self._streams_cache = sorted({_Stream(r.tenant, r.campaign) for r in runs}, key=lambda s: s.key)
        return self._streams_cache

    def _forget_finished(self, runs: list[ActiveRun]) -> None:
        """Drop index entries whose run hash expired: they would keep idle workers polling."""
        for run in runs:
            if not self.client.exists(keys.run_key(run.tenant, run.campaign, run.run_id)):
                self.client.hdel(keys.active_runs_key(), f"{run.tenant}/{run.campaign}/{run.run_id}")

    def _read_new(self, streams: list[_Stream], *, block: bool) -> int:
        """Entries never delivered: one non-blocking pass, then (if `block`) wait on each in turn."""
        for stream in streams:
            if self._read_one(stream, None):
                return 1
        if not block:
            return 0
        wait_ms = max(10, min(self.options.block_ms, int(self._claim_every_s * 1000)) // len(streams))
        for stream in streams:
            if self.stopping:
                return 0
            if self._read_one(stream, wait_ms):
                return 1
        return 0

    def _read_one(self, stream: _Stream, block_ms: int | None) -> bool:
        try:
            reply: Any = self.client.xreadgroup(
                keys.WORK_CONSUMER_GROUP, self.name, {stream.key: ">"}, count=1, block=block_ms
            )
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            ensure_group(self.client, stream.tenant, stream.campaign)  # the stream expired or was deleted
            return False
        if not reply:
            return False
        for _, messages in reply:
            for entry_id, fields in messages:
                self._handle(stream, _text(entry_id), fields, deliveries=1)
        return True

    def _claim_idle(self, streams: list[_Stream]) -> int:
        """Take over entries idle on other consumers longer than `claim_idle_ms`, and do them."""
        done = 0
        for stream in streams:
            if self.stopping:
                break
            try:
                reply: Any = self.client.xautoclaim(
                    stream.key,
                    keys.WORK_CONSUMER_GROUP,
                    self.name,
                    min_idle_time=self.options.claim_idle_ms,
                    start_id="0-0",
                    count=CLAIM_BATCH,
                )
            except redis.ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    raise
                continue
            for entry_id, fields in reply[1]:
                if self.stopping:
                    break  # claimed but not done: idle again soon, another worker takes it
                entry = _text(entry_id)
                self.stats.claimed += 1
                done += 1
                deliveries = self._deliveries(stream, entry)
                if fields is None:  # deleted from the stream but still pending: nothing to do
                    self._acknowledge_only(stream, entry)
                elif deliveries > self.options.max_deliveries:
                    reason = f"delivered {deliveries - 1} times and never acknowledged (its workers died)"
                    self._dead_letter(stream, entry, fields, reason, deliveries)
                else:
                    self._handle(stream, entry, fields, deliveries=deliveries)
        return done

    def _deliveries(self, stream: _Stream, entry_id: str) -> int:
        rows: Any = self.client.xpending_range(
            stream.key, keys.WORK_CONSUMER_GROUP, min=entry_id, max=entry_id, count=1
        )
        return int(rows[0]["times_delivered"]) if rows else 1

    def _drained(self, streams: list[_Stream]) -> bool:
        """Nothing pending on any stream (the caller just found nothing new to read)."""
        for stream in streams:
            try:
                summary: Any = self.client.xpending(stream.key, keys.WORK_CONSUMER_GROUP)
            except redis.ResponseError:
                continue
            if int(summary["pending"]):
                return False
        return True

    # -- doing an entry ------------------------------------------------------------------------

    def handle(
        self, tenant: str, campaign: str, entry_id: str, fields: Mapping[bytes, bytes], *, deliveries: int = 1
    ) -> None:
        """Do one entry delivered to this worker: process, then acknowledge and count (once).

        A failure leaves the entry pending, to be claimed back and retried, until its
        `deliveries` reach `max_deliveries`: then it is dead-lettered.
        """
        self._handle(_Stream(tenant, campaign), entry_id, fields, deliveries=deliveries)

    def _handle(
        self, stream: _Stream, entry_id: str, fields: Mapping[bytes, bytes], *, deliveries: int
    ) -> None:
        try:
            with self._keep_claimed(stream, entry_id):
                entry = WorkEntry.from_fields(stream.key, entry_id, fields)
                context = self._context(stream, entry.run_id)
                if context is None:
                    self._log(f"run {entry.run_id} of entry {entry_id} is no longer recorded; dropping it")
                    self._acknowledge_only(stream, entry_id)
                    return
                report = context.run.new_report()
                sampled = context.run.process(entry.accounts, report)
            self._record(stream, entry_id, entry.run_id, report, sampled)
        except Exception as exc:  # anything: the entry stays pending and is retried, then dead-lettered
            self.stats.attempts_failed += 1
            reason = f"{type(exc).__name__}: {exc}"
            self._log(
                f"entry {entry_id} failed (delivery {deliveries} of {self.options.max_deliveries}): {reason}"
            )
            if deliveries >= self.options.max_deliveries:
                self._dead_letter(stream, entry_id, fields, reason, deliveries)

    @contextmanager
    def _keep_claimed(self, stream: _Stream, entry_id: str) -> Iterator[None]:
        """Reset the entry's idle time while it is worked on, so that nobody claims it from us."""
        done = threading.Event()
        interval_s = max(0.02, self.options.claim_idle_ms / 3000)

        def beat() -> None:
            while not done.wait(interval_s):
                try:
                    self.client.xclaim(
                        stream.key, keys.WORK_CONSUMER_GROUP, self.name, 0, [entry_id], justid=True
                    )
                except redis.RedisError:
                    pass  # the next beat tries again; at worst the entry is done twice

        thread = threading.Thread(target=beat, name=f"keep-claimed {entry_id}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    def _context(self, stream: _Stream, run_id: str) -> _RunContext | None:
        """The run's PrecomputeRun, built once per run from what enqueue stored."""
        if run_id in self._runs:
            return self._runs[run_id]
        tenant, campaign = stream.tenant, stream.campaign
        raw = self.client.hget(keys.run_key(tenant, campaign, run_id), "record")
        if raw is None:
            return None
        record = RunRecord.model_validate_json(raw)
        loaded = load_campaign_config(self.client, tenant, campaign)
        if loaded is None:
            raise ConfigError(
                f"campaign {tenant}/{campaign} has no published config (expired?); enqueue again"
            )
        campaign_model, zones, policy = loaded
        companies_raw = self.client.get(keys.run_companies_key(tenant, campaign, run_id))
        companies = frozenset(json.loads(companies_raw)) if companies_raw else None
        concurrency = record.provider_options.get("concurrency", 1)
        run = PrecomputeRun(
            client=self.client,
            campaign=campaign_model,
            zones=zones,
            policy=policy,
            provider=self.provider_factory(record.provider, record.provider_options),
            concurrency=concurrency if isinstance(concurrency, int) else 1,
            resume=record.resume,
            now=record.created_at,
            other_companies=companies,
        )
        if run.fingerprint != record.fingerprint:
            raise ConfigError(
                f"run {run_id} was enqueued with campaign fingerprint {record.fingerprint[:12]}, but this "
                f"worker computes {run.fingerprint[:12]}: the campaign config or the provider settings "
                "changed since; enqueue the run again"
            )
        if len(self._runs) >= _RUN_CACHE_MAX:
            self._runs.pop(next(iter(self._runs))).run.close()
        self._runs[run_id] = _RunContext(record, run)
        return self._runs[run_id]

    # -- acknowledging -------------------------------------------------------------------------

    def _record(
        self, stream: _Stream, entry_id: str, run_id: str, report: RunReport, sampled: list[SampleCandidate]
    ) -> None:
        """Sample candidates, failures, then acknowledge-and-count: one transaction."""
        tenant, campaign = stream.tenant, stream.campaign
        pipe = self.client.pipeline(transaction=True)
        if sampled:
            sample_key = keys.run_sample_key(tenant, campaign, run_id)
            pipe.sadd(sample_key, *(f"{stratum}\t{account_id}" for stratum, account_id, _ in sampled))
            pipe.expire(sample_key, keys.RUN_TTL_S)
        if report.failed:
            failures_key = keys.run_failures_key(tenant, campaign, run_id)
            pipe.hset(failures_key, mapping={f.account_id: f.reason for f in report.failed})
            pipe.expire(failures_key, keys.RUN_TTL_S)
        self._count(pipe, stream, entry_id, run_id, counter_increments(report, worker=self.name))
        outcome = int(pipe.execute()[-1])
        self._after_count(stream, run_id, outcome, report.accounts)

    def _dead_letter(
        self, stream: _Stream, entry_id: str, fields: Mapping[bytes, bytes], reason: str, deliveries: int
    ) -> None:
        """Give up on an entry: copy it to the dead-letter stream, journal its accounts failed."""
        tenant, campaign = stream.tenant, stream.campaign
        run_id, account_ids = entry_header(fields)
        now = datetime.now(UTC).isoformat()
        dead_key = keys.dead_letter_stream_key(tenant, campaign)
        pipe = self.client.pipeline(transaction=True)
        dead_fields: dict[bytes, bytes] = {
            **fields,
            b"source_id": entry_id.encode(),
            b"error": reason.encode(),
            b"deliveries": str(deliveries).encode(),
            b"consumer": self.name.encode(),
            b"dead_at": now.encode(),
        }
        pipe.xadd(dead_key, dead_fields)  # type: ignore[arg-type]
        pipe.expire(dead_key, keys.DEAD_LETTER_TTL_S)
        why = f"dead-lettered after {deliveries} deliveries: {reason}"
        if account_ids:
            journal = keys.journal_key(tenant, campaign)
            state = {
                "state": JournalState.FAILED,
                "reason": why,
                "input_hash": None,
                "version": None,
                "at": now,
            }
            pipe.hset(journal, mapping=dict.fromkeys(account_ids, json.dumps(state)))
            pipe.expire(journal, keys.JOURNAL_TTL_S)
        if run_id is None:  # not ours to count: acknowledge and delete only
            pipe.xack(stream.key, keys.WORK_CONSUMER_GROUP, entry_id)
            pipe.xdel(stream.key, entry_id)
            pipe.execute()
        else:
            if account_ids:
                failures_key = keys.run_failures_key(tenant, campaign, run_id)
                pipe.hset(failures_key, mapping=dict.fromkeys(account_ids, why))
                pipe.expire(failures_key, keys.RUN_TTL_S)
            counts = {"dead_lettered": 1, "entries_done": 1}
            if account_ids:
                counts |= {"processed": len(account_ids), "failed": len(account_ids)}
            self._count(pipe, stream, entry_id, run_id, counts)
            self._after_count(stream, run_id, int(pipe.execute()[-1]), len(account_ids))
        self.stats.dead_lettered += 1
        self._log(f"entry {entry_id} ({len(account_ids)} accounts) moved to {dead_key}: {why}")

    def _acknowledge_only(self, stream: _Stream, entry_id: str) -> None:
        pipe = self.client.pipeline(transaction=True)
        pipe.xack(stream.key, keys.WORK_CONSUMER_GROUP, entry_id)
        pipe.xdel(stream.key, entry_id)
        pipe.execute()

    def _count(
        self,
        pipe: redis.client.Pipeline,
        stream: _Stream,
        entry_id: str,
        run_id: str,
        counts: Mapping[str, int],
    ) -> None:
        args: list[str | int] = [
            keys.WORK_CONSUMER_GROUP,
            entry_id,
            keys.RUN_TTL_S,
            keys.WORK_STREAM_TTL_S,
            datetime.now(UTC).isoformat(),
        ]
        for name, amount in counts.items():
            args += [name, amount]
        self._ack(
            keys=[stream.key, keys.run_key(stream.tenant, stream.campaign, run_id)], args=args, client=pipe
        )

    def _after_count(self, stream: _Stream, run_id: str, outcome: int, accounts: int) -> None:
        if outcome == -1:
            self._log(
                f"an entry of run {run_id} was already acknowledged by another worker; not counted twice"
            )
            return
        self.stats.entries += 1
        self.stats.accounts += accounts
        if outcome == 1:
            self._complete(stream, run_id)

    def _complete(self, stream: _Stream, run_id: str) -> None:
        """This worker counted the run's last account: draw the review sample, store the report."""
        tenant, campaign = stream.tenant, stream.campaign
        self.stats.runs_completed += 1
        self.client.hdel(keys.active_runs_key(), f"{tenant}/{campaign}/{run_id}")
        progress = read_progress(self.client, tenant, campaign, run_id)
        if progress is None:
            return
        report = progress.to_report()
        try:
            context = self._context(stream, run_id)
        except Exception as exc:  # e.g. config changed: the counts stand, the sample waits for a rerun
            self._log(f"run {run_id} complete, but its review sample was not drawn: {exc}")
            return
        if context is not None:
            members: set[bytes] = self.client.smembers(keys.run_sample_key(tenant, campaign, run_id))  # type: ignore[assignment]
            candidates = [_candidate(m) for m in members]
            context.run.queue_sample([c for c in candidates if c is not None])
            context.run.finish(report, seconds=report.seconds)
        self._log(
            f"run {run_id} of {tenant}/{campaign} complete: {report.accounts} accounts, "
            f"{report.published} published, {report.unchanged} unchanged, {len(report.failed)} failed"
        )


def _candidate(member: bytes) -> SampleCandidate | None:
    stratum, sep, account_id = member.decode().partition("\t")
    return (stratum, account_id, "published") if sep else None


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


@contextmanager
def stop_on_signals(worker: Worker) -> Iterator[None]:
    """SIGTERM and SIGINT stop the worker after its current entry; a second SIGINT interrupts."""

    def graceful(signum: int, frame: FrameType | None) -> None:
        if worker.stopping and signum == signal.SIGINT:
            raise KeyboardInterrupt
        worker.stop()

    previous = {sig: signal.signal(sig, graceful) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
