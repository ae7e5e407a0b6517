"""`welcomemat worker`: consume enqueued runs from the campaigns' work streams.

Any number of workers, on any machines, join one consumer group per campaign stream
(`keys.WORK_CONSUMER_GROUP`). Reading, claiming back, counting deliveries, dead-lettering,
waiting out Redis and stopping are the core's one consumer loop (`welcomemat.streams.consumer`);
this module says what an entry is and what doing it means. Delivery is at-least-once;
what keeps it correct:

- an entry is processed by `PrecomputeRun.process`, the code path of a local run, and
  publishing is idempotent (same input hash: no new version), so doing an entry twice
  changes nothing a visitor can see;
- the acknowledgement and the run's counters are one Lua step that counts only if this
  XACK was the first, so the counters add up to the run's total however often an entry ran;
- an entry idle on a consumer longer than `claim_idle_ms` was left by a dead worker and is
  taken over; a live worker keeps the entry in hand claimed (`keep_claimed`). An entry that
  failed here is retried after `claim_idle_ms` too;
- an entry that fails `max_deliveries` times (or was delivered that often and never
  acknowledged: it kills its workers) goes to the dead-letter stream, its accounts are
  journalled `failed`, and it counts as processed, in the same transaction, so the run
  still completes;
- SIGTERM/SIGINT finish the entry in hand, then stop (`welcomemat.stop_signals.stop_on_signals`).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis

from precompute.journal import JournalState
from precompute.providers.base import Provider
from precompute.publish import PageCheckFactory
from precompute.published_config import load_campaign_config
from precompute.queue import (
    MAX_DELIVERIES,
    ActiveRun,
    RunRecord,
    WorkEntry,
    active_runs,
    counter_increments,
    entry_header,
    read_progress,
    work_stream,
)
from precompute.report import RunReport
from precompute.review_sample import SampleCandidate
from precompute.run import PrecomputeRun
from welcomemat import keys
from welcomemat.campaign.config import decode_campaign_config
from welcomemat.campaign.owner import read_ownership, refuse_other_tenant
from welcomemat.errors import ConfigError
from welcomemat.model_cost import DEFAULT_PRICES, PriceTable
from welcomemat.records.audit import Auditor, Via
from welcomemat.storage.redis_client import REDIS_OUTAGE_ERRORS, run_script
from welcomemat.streams.consumer import ConsumerProcess, StreamConsumer
from welcomemat.streams.handler import (
    ACK,
    ACKED,
    DEFAULT_BLOCK_MS,
    DEFAULT_CLAIM_IDLE_MS,
    ConsumerOptions,
    ConsumerReport,
    Delivery,
    Outcome,
    Stream,
    StreamHandler,
    retry,
)
from welcomemat.theme.folder import Theme

__all__ = [
    "CLAIM_BATCH",
    "DEFAULT_BLOCK_MS",
    "DEFAULT_CLAIM_IDLE_MS",
    "ProviderFactory",
    "Worker",
    "WorkerOptions",
    "WorkerStats",
    "default_consumer_name",
]

# Where the lines go when the caller passes no `log` (the commands pass their own, on stderr).
_logger = logging.getLogger(__name__)

CLAIM_BATCH = 10  # entries taken over per XAUTOCLAIM
_RUN_CACHE_MAX = 8  # runs whose campaign, provider and assembler a worker keeps ready
_INDEX_REFRESH_S = 1.0  # how often a worker without --campaign rereads the active-run index
# With `once`: how long Redis may stay unreachable before the worker gives up (two Cluster
# failovers in a row, at the default 15 s node timeout, fit in it).
_ONCE_OUTAGE_MAX_S = 120.0

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

# Builds the provider a run names, with the run's options (e.g. `cli.precompute_command.make_provider`).
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
class WorkerStats(ConsumerReport):
    entries: int = 0  # acknowledged and counted by this worker (processed or dead-lettered)
    accounts: int = 0
    runs_completed: int = 0


@dataclass
class _RunContext:
    record: RunRecord
    run: PrecomputeRun


class Worker(ConsumerProcess):
    """One consumer of the work streams: processes entries, acknowledges and counts, dead-letters."""

    def __init__(
        self,
        client: redis.Redis,
        provider_factory: ProviderFactory,
        options: WorkerOptions,
        *,
        log: Callable[[str], None] | None = None,
        stop: threading.Event | None = None,
        page_check: PageCheckFactory | None = None,
        prices: PriceTable = DEFAULT_PRICES,
        heartbeat: Callable[[], None] | None = None,
    ) -> None:
        self.client = client
        self.prices = prices  # the price table a run's cost is figured with (WELCOMEMAT_MODEL_PRICES)
        # The renderer's check of each account's own pages in the campaign's theme (the CLI's).
        self.page_check = page_check
        self.provider_factory = provider_factory
        self.options = options
        self.name = options.name
        self._log = log or (lambda line: _logger.info("worker %s: %s", options.name, line))
        self._consumer = StreamConsumer(
            client,
            _WorkStreams(self),
            ConsumerOptions(
                name=options.name,
                once=options.once,
                batch=1,  # an entry is already a chunk of accounts
                claim_batch=CLAIM_BATCH,
                block_ms=options.block_ms,
                claim_idle_ms=options.claim_idle_ms,
                max_deliveries=options.max_deliveries,
                retry_after_s=options.claim_idle_ms / 1000,
                keep_claimed=True,  # an entry takes seconds to minutes with a model
                once_outage_max_s=_ONCE_OUTAGE_MAX_S,
            ),
            log=self._log,
            stop=stop,
            heartbeat=heartbeat,
        )
        self.stats = WorkerStats(loop=self._consumer.stats)
        self._ack = client.register_script(_ACK_LUA)
        self._runs: dict[str, _RunContext] = {}
        self._streams_cache: list[Stream] = []
        self._streams_read_at = float("-inf")

    # -- lifecycle -----------------------------------------------------------------------------

    def run(self) -> WorkerStats:
        """Work until stopped (or, with `once`, until every stream is drained). With `once`, a
        Redis that stays down raises its error; without it, the worker waits for Redis."""
        try:
            self._consumer.run()
            return self.stats
        finally:
            for context in self._runs.values():
                context.run.close()  # the runs' assembly threads

    # -- finding work --------------------------------------------------------------------------

    def streams(self) -> list[Stream]:
        """The work streams to read: the one campaign, or those of every active run."""
        if self.options.campaign is not None:
            if not self._streams_cache:
                self._streams_cache = [work_stream(*self.options.campaign)]
            return self._streams_cache
        if time.monotonic() - self._streams_read_at >= _INDEX_REFRESH_S:
            self._streams_read_at = time.monotonic()
            runs = active_runs(self.client)
            self._forget_finished(runs)
            found = {(r.tenant, r.campaign) for r in runs}
            self._streams_cache = [work_stream(t, c) for t, c in sorted(found)]
        return self._streams_cache

    def _forget_finished(self, runs: list[ActiveRun]) -> None:
        """Drop index entries whose run hash expired: they would keep idle workers polling."""
        for run in runs:
            if not self.client.exists(keys.run_key(run.tenant, run.campaign, run.run_id)):
                self.client.hdel(keys.active_runs_key(), f"{run.tenant}/{run.campaign}/{run.run_id}")

    # -- doing an entry ------------------------------------------------------------------------

    def handle(
        self, tenant: str, campaign: str, entry_id: str, fields: Mapping[bytes, bytes], *, deliveries: int = 1
    ) -> None:
        """Do one entry delivered to this worker by hand: process, then acknowledge and count (once).

        Settled as the loop settles what it reads: a failure leaves the entry pending, to be
        retried, until its `deliveries` reach `max_deliveries`: then it is dead-lettered.
        """
        self._consumer.handle([Delivery(work_stream(tenant, campaign), entry_id, fields, deliveries)])

    def handle_batch(self, batch: Sequence[Delivery]) -> list[Outcome]:
        """The outcome of each entry: processed and counted (ACKED), or retried."""
        return [self._process(delivery) for delivery in batch]

    def _process(self, delivery: Delivery) -> Outcome:
        tenant, campaign = delivery.stream.scope
        try:
            entry = WorkEntry.from_fields(delivery.stream.key, delivery.entry_id, delivery.fields)
            context = self._context(tenant, campaign, entry.run_id)
            if context is None:
                self._log(
                    f"run {entry.run_id} of entry {delivery.entry_id} is no longer recorded; dropping it"
                )
                return ACK
            report = context.run.new_report()
            sampled = context.run.process(entry.accounts, report)
            self._record(delivery.stream, delivery.entry_id, entry.run_id, report, sampled)
            return ACKED
        except REDIS_OUTAGE_ERRORS:
            raise
        except Exception as exc:  # anything: the entry stays pending and is retried, then dead-lettered
            return retry(f"{type(exc).__name__}: {exc}")

    def _context(self, tenant: str, campaign: str, run_id: str) -> _RunContext | None:
        """The run's PrecomputeRun, built once per run from what enqueue stored."""
        if run_id in self._runs:
            return self._runs[run_id]
        raw = self.client.hget(keys.run_key(tenant, campaign, run_id), "record")
        if raw is None:
            return None
        record = RunRecord.model_validate_json(raw)
        # A run enqueued before its id was another tenant's (or by an older version) publishes nothing.
        refuse_other_tenant(read_ownership(self.client, campaign), tenant, action="publish")
        loaded = load_campaign_config(self.client, tenant, campaign)
        if loaded is None:
            raise ConfigError(
                f"campaign {tenant}/{campaign} has no published config (expired?); enqueue again"
            )
        campaign_model, zones, policy = loaded
        theme = self._stored_theme(tenant, campaign) if self.page_check is not None else None
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
            auditor=Auditor(f"worker:{self.name}", Via.PRECOMPUTE, lambda: datetime.now(UTC)),
            theme=theme,
            prices=self.prices,
            page_check=(
                self.page_check(theme, campaign_model, zones)
                if self.page_check is not None and theme is not None
                else None
            ),
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

    def _stored_theme(self, tenant: str, campaign: str) -> Theme | None:
        """The theme published with the campaign config (what the renderer will frame pages with)."""
        raw = self.client.get(keys.campaign_config_key(tenant, campaign))
        return decode_campaign_config(tenant, campaign, raw).theme if raw is not None else None

    # -- acknowledging -------------------------------------------------------------------------

    def _record(
        self, stream: Stream, entry_id: str, run_id: str, report: RunReport, sampled: list[SampleCandidate]
    ) -> None:
        """Sample candidates, failures, then acknowledge-and-count: one transaction."""
        tenant, campaign = stream.scope
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

    def dead_letter_writes(self, pipe: Any, delivery: Delivery, reason: str) -> bool:
        """In the dead-letter transaction: journal the entry's accounts failed and count it as
        processed (which acknowledges it), so that the run still completes."""
        tenant, campaign = delivery.stream.scope
        run_id, account_ids = entry_header(delivery.fields)
        why = f"dead-lettered after {delivery.deliveries} deliveries: {reason}"
        if account_ids:
            journal = keys.journal_key(tenant, campaign)
            state = {
                "state": JournalState.FAILED,
                "reason": why,
                "input_hash": None,
                "version": None,
                "at": datetime.now(UTC).isoformat(),
            }
            pipe.hset(journal, mapping=dict.fromkeys(account_ids, json.dumps(state)))
            pipe.expire(journal, keys.JOURNAL_TTL_S)
        if run_id is None:  # not ours to count: the loop acknowledges and deletes it
            return False
        if account_ids:
            failures_key = keys.run_failures_key(tenant, campaign, run_id)
            pipe.hset(failures_key, mapping=dict.fromkeys(account_ids, why))
            pipe.expire(failures_key, keys.RUN_TTL_S)
        counts = {"dead_lettered": 1, "entries_done": 1}
        if account_ids:
            counts |= {"processed": len(account_ids), "failed": len(account_ids)}
        self._count(pipe, delivery.stream, delivery.entry_id, run_id, counts)
        return True

    def dead_lettered(self, delivery: Delivery, reason: str, reply: Any) -> None:
        run_id, account_ids = entry_header(delivery.fields)
        if run_id is not None:
            self._after_count(delivery.stream, run_id, int(reply), len(account_ids))

    def _count(
        self,
        pipe: redis.client.Pipeline,
        stream: Stream,
        entry_id: str,
        run_id: str,
        counts: Mapping[str, int],
    ) -> None:
        tenant, campaign = stream.scope
        args: list[str | int] = [
            keys.WORK_CONSUMER_GROUP,
            entry_id,
            keys.RUN_TTL_S,
            keys.WORK_STREAM_TTL_S,
            datetime.now(UTC).isoformat(),
        ]
        for name, amount in counts.items():
            args += [name, amount]
        run_script(pipe, self._ack, [stream.key, keys.run_key(tenant, campaign, run_id)], args)

    def _after_count(self, stream: Stream, run_id: str, outcome: int, accounts: int) -> None:
        if outcome == -1:
            self._log(
                f"an entry of run {run_id} was already acknowledged by another worker; not counted twice"
            )
            return
        self.stats.entries += 1
        self.stats.accounts += accounts
        if outcome == 1:
            self._complete(stream, run_id)

    def _complete(self, stream: Stream, run_id: str) -> None:
        """This worker counted the run's last account: draw the review sample, store the report."""
        tenant, campaign = stream.scope
        self.stats.runs_completed += 1
        self.client.hdel(keys.active_runs_key(), f"{tenant}/{campaign}/{run_id}")
        progress = read_progress(self.client, tenant, campaign, run_id)
        if progress is None:
            return
        report = progress.to_report()
        try:
            context = self._context(tenant, campaign, run_id)
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


class _WorkStreams(StreamHandler):
    """The worker as the consumer loop sees it."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    def streams(self) -> Sequence[Stream]:
        return self.worker.streams()

    def handle(self, batch: Sequence[Delivery]) -> Sequence[Outcome]:
        return self.worker.handle_batch(batch)

    def dead_letter_writes(self, pipe: Any, delivery: Delivery, reason: str) -> bool:
        return self.worker.dead_letter_writes(pipe, delivery, reason)

    def dead_lettered(self, delivery: Delivery, reason: str, reply: Any) -> None:
        self.worker.dead_lettered(delivery, reason, reply)


def _candidate(member: bytes) -> SampleCandidate | None:
    stratum, sep, account_id = member.decode().partition("\t")
    return (stratum, account_id, "published") if sep else None
