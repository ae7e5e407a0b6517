"""A precompute run: read accounts, assemble each account's zone set, publish, journal, report.

Work goes in chunks (`CHUNK_SIZE` accounts): one MGET reads the chunk's current zone
sets, unchanged accounts are skipped before any generation (same input hash, still
valid: no model call, no new version), the rest are assembled (with `concurrency` > 1 on
the run's one thread pool, for model providers that wait on the network: each account
goes to the pool as soon as it is hashed, and the next chunk starts assembling while this
one publishes) and published one atomic transaction each, `PUBLISH_BATCH` accounts at a
time in chunk order; journal entries and explain records for a batch go in one pipeline.
A run killed mid-way leaves accounts journalled `accepted`; `--resume` skips those
journalled `published` with the same input hash and redoes the rest (an account whose
zone set was written but whose journal entry was not is unchanged, and journalled
`published` then).

A local run is `run(path)`: read the file, `prepare` (config, journal), `process` every
account, draw the review sample, `finish` (timing, stored report). A distributed run
(`precompute.worker`) calls the same `process` on each work entry's accounts, so both
paths decide, publish and journal identically; only who adds up the report differs.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis

from precompute.assemble import AccountOutcome, Assembler, neutral_context
from precompute.checks import build_vocabulary
from precompute.context import EffectivePolicy
from precompute.explain import explain_record
from precompute.hashing import account_input_hash, campaign_fingerprint
from precompute.providers.base import Provider
from precompute.report import AccountFailure, MalformedRow, RunReport
from precompute.trust import short_name
from welcomemat import keys
from welcomemat.accounts import Account, read_accounts
from welcomemat.audit import AuditAction, Auditor, Via, queue_entry
from welcomemat.campaign import Campaign, Confidence
from welcomemat.campaign_config import decode_campaign_config, encode_campaign_config
from welcomemat.campaign_owner import claim_campaign
from welcomemat.erasure import suppress
from welcomemat.errors import StoredValueError
from welcomemat.records import write_profile
from welcomemat.store import ZoneSetStore
from welcomemat.theme import Theme
from welcomemat.zone_contract import ZoneContract
from welcomemat.zoneset import Rung, ZoneSet, ZoneSetStatus

__all__ = [
    "CHUNK_SIZE",
    "PUBLISH_BATCH",
    "JournalState",
    "PrecomputeRun",
    "SampleCandidate",
    "choose_sample",
    "load_campaign_config",
    "policy_from_json",
    "progress_bar",
    "publish_campaign_config",
]

CHUNK_SIZE = 256  # accounts per MGET: big enough to amortise round trips
# Accounts per publish pipeline. Smaller than a chunk: a chunk's first accounts are written
# while its last are still with the model, so the run's end waits for one batch's writes,
# not a whole chunk's, and the main thread's bursts of work (it shares the interpreter lock
# with the threads waiting on the model) stay short.
PUBLISH_BATCH = 32


class JournalState:
    ACCEPTED = "accepted"
    PUBLISHED = "published"
    DEFERRED = "deferred"  # published as fallback because the provider could not write; redone next run
    FAILED = "failed"


# (stratum, account id, status) of a published zone set: what the review sample is drawn from.
SampleCandidate = tuple[str, str, str]


@dataclass(frozen=True)
class _StartedChunk:
    """A chunk whose changed accounts (`todo`) are being assembled; `outcomes(i, j)` waits for todo[i:j]."""

    size: int
    todo: list[Account]
    hashes: dict[str, str]
    current: dict[str, ZoneSet | None]
    outcomes: Callable[[int, int], list[AccountOutcome | BaseException]]
    # Unchanged accounts whose journal entry (read on --resume) does not say so yet.
    settle: list[ZoneSet]


@dataclass
class _Tally:
    by_mode: Counter[str]
    zones_by_rung: Counter[str]
    fallback_reasons: Counter[str]
    check_failures: Counter[str]


def publish_campaign_config(
    client: redis.Redis,
    campaign: Campaign,
    zones: dict[str, ZoneContract],
    policy: EffectivePolicy,
    accounts: Sequence[Account] | None = None,
    theme: Theme | None = None,
) -> None:
    """Store what the renderer, QA and review read: contracts, theme, IP ranges; index the campaign id.

    The campaign's theme (its base.html and files, checked at load) travels inside the config:
    the renderer reads no campaign files, and one value keeps the theme and the campaign it
    was checked against in step.

    First the campaign id is claimed for its tenant (`welcomemat.campaign_owner`): an id
    another tenant owns is refused (`CampaignOwnerError`) before anything is written.
    With `accounts`, the campaign's IP-range map (account id -> CIDRs, the renderer's IP
    identification index) is replaced whole, in the same transaction as the contracts.
    The owner and the index of campaign ids live outside the campaign's hash slot, so they
    are written apart from that transaction (Redis Cluster allows a transaction in one slot only).
    """
    config = encode_campaign_config(campaign, zones, asdict(policy), theme)
    tenant, campaign_id = campaign.tenant, campaign.campaign
    claim_campaign(client, tenant, campaign_id)
    pipe = client.pipeline(transaction=True)
    pipe.set(keys.campaign_config_key(tenant, campaign_id), config, ex=keys.CAMPAIGN_TTL_S)
    if accounts is not None:
        ranges = {a.account_id: json.dumps(a.ip_ranges) for a in accounts if a.ip_ranges}
        ip_key = keys.ip_ranges_key(tenant, campaign_id)
        pipe.delete(ip_key)
        if ranges:
            pipe.hset(ip_key, mapping=ranges)  # type: ignore[arg-type]
            pipe.expire(ip_key, keys.CAMPAIGN_TTL_S)
    pipe.execute()
    index = client.pipeline(transaction=False)
    index.hset(keys.campaigns_index_key(), f"{tenant}/{campaign_id}", campaign_id)
    index.expire(keys.campaigns_index_key(), keys.CAMPAIGN_TTL_S)
    index.execute()


def policy_from_json(data: dict[str, Any]) -> EffectivePolicy:
    """The `EffectivePolicy` that `publish_campaign_config` stored, as it was (same fingerprint)."""
    return EffectivePolicy(
        signal_windows_days={str(k): int(v) for k, v in data["signal_windows_days"].items()},
        min_confidence=Confidence(data["min_confidence"]),
        banned_phrases=tuple(data["banned_phrases"]),
        banned_openers=tuple(data["banned_openers"]),
        prohibited_claims=tuple(data["prohibited_claims"]),
        min_model_confidence=float(data["min_model_confidence"]),
        sources={str(k): str(v) for k, v in data["sources"].items()},
    )


def load_campaign_config(
    client: redis.Redis, tenant: str, campaign_id: str
) -> tuple[Campaign, dict[str, ZoneContract], EffectivePolicy] | None:
    """Campaign, zone contracts and effective policy as last published; None if there are none.

    What a worker on another machine builds its run from: it has no campaign files. Raises
    StoredValueError (naming the key) when the stored config does not decode.
    """
    key = keys.campaign_config_key(tenant, campaign_id)
    raw = client.get(key)
    if raw is None:
        return None
    stored = decode_campaign_config(tenant, campaign_id, raw)
    try:
        policy = policy_from_json(dict(stored.policy))
    except (ValueError, KeyError, TypeError) as exc:
        raise StoredValueError(key, f"policy {type(exc).__name__}: {exc}") from exc
    return stored.campaign, stored.zones, policy


def _stratum_rank(account_id: str) -> int:
    """A stable pseudo-random rank for sampling (same account, same rank, every run)."""
    return int.from_bytes(hashlib.sha256(account_id.encode()).digest()[:8], "big")


def choose_sample(candidates: Sequence[SampleCandidate], rate: float) -> list[str]:
    """A stratified sample (segment × mode) of account ids: the same candidates, the same sample.

    Per stratum, `rate` of its accounts (at least one), lowest stable rank first, so the
    sample depends on what was published, not on the order workers happened to publish it.
    """
    if rate <= 0:
        return []
    strata: dict[str, set[str]] = {}
    for stratum, account_id, _ in candidates:
        strata.setdefault(stratum, set()).add(account_id)
    chosen: list[str] = []
    for ids in strata.values():
        take = max(1, round(rate * len(ids)))
        chosen.extend(sorted(ids, key=_stratum_rank)[:take])
    return chosen


class PrecomputeRun:
    """One run of one campaign: over an accounts file (`run`), or over work entries (`process`).

    `other_companies` is the set of casefolded short names of every account in the run, for
    the wrong-company check; by default those of the accounts given to the first `process`.
    A worker passes the whole run's, since it only ever sees one chunk of it.

    Every new zone-set version it publishes is audit-logged (`publish`) as `auditor` (default:
    `precompute`, the wall clock), in the pipeline that journals it.
    """

    def __init__(
        self,
        *,
        client: redis.Redis,
        campaign: Campaign,
        zones: dict[str, ZoneContract],
        policy: EffectivePolicy,
        provider: Provider,
        concurrency: int = 1,
        resume: bool = False,
        now: datetime | None = None,
        progress: Callable[[int], None] | None = None,
        other_companies: frozenset[str] | None = None,
        theme: Theme | None = None,
        auditor: Auditor | None = None,
    ) -> None:
        self.client = client
        self.auditor = auditor or Auditor("precompute", Via.PRECOMPUTE, lambda: datetime.now(UTC))
        self.store = ZoneSetStore(client)
        self.campaign = campaign
        self.zones = zones
        self.policy = policy
        self.provider = provider
        self.concurrency = max(1, concurrency)
        self.resume = resume
        self.now = now or datetime.now(UTC)
        self.progress = progress
        self.other_companies = other_companies
        # Published with the config; no part of the fingerprint: a new look is no reason to
        # write any zone again.
        self.theme = theme
        self._assembler: Assembler | None = None
        self._pool: ThreadPoolExecutor | None = None  # see `_assembly_pool`
        self.fingerprint = campaign_fingerprint(campaign, zones, policy, provider.fingerprint())
        self.journal_key = keys.journal_key(campaign.tenant, campaign.campaign)

    # -- the run -------------------------------------------------------------------------------

    def run(self, accounts_path: Path) -> RunReport:
        """The local run: read the file, then `process` every account in it."""
        started = time.perf_counter()
        report = self.new_report()
        read = read_accounts(accounts_path)
        report.rows_read = read.lines_read
        report.malformed = [
            MalformedRow(file=p.file, line=p.line, field=p.field, reason=p.message) for p in read.problems
        ]
        kept = self.suppress(read.accounts, report)
        self.prepare(kept)
        try:
            sampled = self.process(kept, report, erasures_checked=True)
        finally:
            self.close()
        self.queue_sample(sampled)
        self.finish(report, seconds=time.perf_counter() - started)
        return report

    def new_report(self) -> RunReport:
        """An empty report for this run, to be filled by `process`."""
        return RunReport(
            tenant=self.campaign.tenant,
            campaign=self.campaign.campaign,
            provider=self.provider.name,
            started_at=self.now.isoformat(),
        )

    def prepare(self, accounts: Sequence[Account]) -> None:
        """Once per run, before any `process`: publish the contracts, journal every account `accepted`."""
        publish_campaign_config(self.client, self.campaign, self.zones, self.policy, accounts, self.theme)
        self._journal_accepted(accounts)

    def suppress(self, accounts: Sequence[Account], report: RunReport) -> list[Account]:
        """`accounts` without the erased ones, and without erased contacts (`welcomemat.erasure`):
        the erasure list wins over an accounts file that still lists them. Counted in `report`."""
        suppression = suppress(self.client, self.campaign.tenant, accounts)
        report.accounts += len(suppression.accounts)
        report.suppressed += len(suppression.accounts)
        report.contacts_suppressed += suppression.contacts
        return suppression.kept

    def process(
        self, accounts: Sequence[Account], report: RunReport, *, erasures_checked: bool = False
    ) -> list[SampleCandidate]:
        """Assemble, publish and journal `accounts`, adding their counts to `report`.

        Safe to repeat: accounts already published from the same inputs are counted
        `unchanged` and get no new version. Erased accounts and contacts are left out first
        (`suppress`), unless the caller just did. Returns the review-sample candidates.
        """
        if not erasures_checked:
            accounts = self.suppress(accounts, report)
        if self._assembler is None:
            self._assembler = self._build_assembler(accounts)
        # Usage from the provider itself: it also counts calls spent on accounts it then gave
        # up on (deferred) and on research extraction, which no finished draft reports.
        before = self.provider.usage()
        tally = _Tally(Counter(), Counter(), Counter(), Counter())
        sampled: list[SampleCandidate] = []
        with self._assembly_pool() as pool:
            started: _StartedChunk | None = None
            for chunk in _chunks(accounts, CHUNK_SIZE):
                journal = self._load_journal(chunk) if self.resume else {}
                # The next chunk goes to the pool before this one is published, so the pool
                # does not idle while the main thread publishes (chunks never share an account).
                following = self._start_chunk(chunk, self._assembler, journal, report, tally, sampled, pool)
                if started is not None:
                    self._run_chunk(started, report, tally, sampled)
                    if self.progress:
                        self.progress(started.size)
                started = following
            if started is not None:
                self._run_chunk(started, report, tally, sampled)
                if self.progress:
                    self.progress(started.size)
        report.accounts += len(accounts)
        after = self.provider.usage()
        report.model_calls += after.model_calls - before.model_calls
        report.retries += after.retries - before.retries
        report.tokens += after.tokens - before.tokens
        report.breaker_openings += after.breaker_openings - before.breaker_openings
        report.by_mode = _merged(report.by_mode, tally.by_mode)
        report.zones_by_rung = _merged(report.zones_by_rung, tally.zones_by_rung)
        report.fallback_reasons = _merged(report.fallback_reasons, tally.fallback_reasons, ranked=True)
        report.check_failures = _merged(report.check_failures, tally.check_failures, ranked=True)
        return sampled

    def finish(self, report: RunReport, *, seconds: float) -> None:
        """Stamp the timing and store the report as the campaign's last run."""
        report.seconds = round(seconds, 3)
        report.accounts_per_second = round(report.accounts / report.seconds, 1) if report.seconds else 0.0
        self.client.set(
            keys.run_report_key(self.campaign.tenant, self.campaign.campaign),
            report.model_dump_json().encode(),
            ex=keys.CAMPAIGN_TTL_S,
        )

    def _build_assembler(self, accounts: Sequence[Account]) -> Assembler:
        names = self.other_companies
        if names is None:
            names = frozenset(short_name(a.name).casefold() for a in accounts)
        assembler = Assembler(
            campaign=self.campaign,
            zones=self.zones,
            policy=self.policy,
            provider=self.provider,
            vocabulary=build_vocabulary(self.campaign),
            other_companies=names,
            now=self.now,
        )
        assembler.prepare_fallbacks(neutral_context(self.campaign, self.policy, assembler.as_of))
        return assembler

    def _start_chunk(
        self,
        chunk: Sequence[Account],
        assembler: Assembler,
        journal: dict[str, dict[str, object]],
        report: RunReport,
        tally: _Tally,
        sampled: list[SampleCandidate],
        pool: ThreadPoolExecutor | None,
    ) -> _StartedChunk:
        """Count the chunk's unchanged accounts and set the rest assembling (on `pool`, if any).

        The MGET needs only ids, so it comes first; then each changed account goes to the
        pool as soon as its input hash is known, rather than after the whole chunk's.
        """
        ids = [a.account_id for a in chunk]
        current = self.store.get_many(self.campaign.tenant, self.campaign.campaign, ids)
        hashes: dict[str, str] = {}
        todo: list[Account] = []
        settle: list[ZoneSet] = []
        futures: list[Future[AccountOutcome | BaseException]] = []
        for account in chunk:
            input_hash = hashes[account.account_id] = account_input_hash(self.fingerprint, account)
            entry = journal.get(account.account_id)
            existing = current.get(account.account_id)
            if (
                self.resume
                and entry is not None
                and entry.get("state") == JournalState.PUBLISHED
                and entry.get("input_hash") == input_hash
            ):
                report.resumed += 1
                if existing is not None:
                    self._count(existing, tally, sampled, account)
            elif existing is not None and self._still_good(existing, input_hash):
                report.unchanged += 1
                self._count(existing, tally, sampled, account)
                if entry is not None:  # on --resume, and not journalled `published` with this hash:
                    # written by a run killed between its publish and its journal entry.
                    settle.append(existing)
            else:
                todo.append(account)
                if pool is not None:
                    futures.append(pool.submit(_assemble_one, assembler, account, input_hash))

        def outcomes(start: int, stop: int) -> list[AccountOutcome | BaseException]:
            # Without a pool nothing starts until asked for (a serial run assembles, then publishes).
            if pool is None:
                return [_assemble_one(assembler, a, hashes[a.account_id]) for a in todo[start:stop]]
            return [f.result() for f in futures[start:stop]]

        return _StartedChunk(len(chunk), todo, hashes, current, outcomes, settle)

    def _run_chunk(
        self, started: _StartedChunk, report: RunReport, tally: _Tally, sampled: list[SampleCandidate]
    ) -> None:
        """Publish and journal the chunk, `PUBLISH_BATCH` accounts at a time as their assembly ends."""
        # An all-unchanged chunk still runs one (empty) batch: it refreshes the journal's TTL.
        for start in range(0, max(len(started.todo), 1), PUBLISH_BATCH):
            stop = min(start + PUBLISH_BATCH, len(started.todo))
            self._publish_batch(started, started.outcomes(start, stop), start, report, tally, sampled)

    def _publish_batch(
        self,
        started: _StartedChunk,
        outcomes: list[AccountOutcome | BaseException],
        start: int,
        report: RunReport,
        tally: _Tally,
        sampled: list[SampleCandidate],
    ) -> None:
        """Publish and journal the outcomes of todo[start:start + len(outcomes)]."""
        todo = started.todo[start : start + len(outcomes)]
        hashes, current = started.hashes, started.current
        pipe = self.client.pipeline(transaction=False)
        for zone_set in started.settle if start == 0 else ():
            self._journal(
                pipe,
                zone_set.account_id,
                JournalState.PUBLISHED,
                hashes[zone_set.account_id],
                version=zone_set.version,
                reason=zone_set.mode.value,
            )
        built: list[AccountOutcome] = []
        for account, outcome in zip(todo, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                reason = f"{type(outcome).__name__}: {outcome}"
                report.failed.append(AccountFailure(account_id=account.account_id, reason=reason))
                self._journal(
                    pipe, account.account_id, JournalState.FAILED, hashes[account.account_id], reason=reason
                )
            else:
                built.append(outcome)
        results = self.store.publish_many([o.zone_set for o in built], current=current)
        for outcome, result in zip(built, results, strict=True):
            account = outcome.account
            report.deferred += int(outcome.deferred)
            report.published += int(result.changed)
            report.unchanged += int(not result.changed)
            if result.zone_set.status is ZoneSetStatus.PENDING_REVIEW:
                report.pending_review += 1
                if result.changed:
                    review_key = keys.review_queue_key(self.campaign.tenant, self.campaign.campaign)
                    pipe.zadd(review_key, {account.account_id: time.time()})
                    pipe.expire(review_key, keys.CAMPAIGN_TTL_S)  # every key gets a TTL
            for zone in outcome.zones:
                for failure in zone.failures:
                    tally.check_failures[f"{failure.check}:{failure.reason}"] += 1
            self._count(result.zone_set, tally, sampled, account)
            if result.changed:
                entry = self.auditor.entry(
                    AuditAction.PUBLISH,
                    tenant=self.campaign.tenant,
                    campaign=self.campaign.campaign,
                    account=account.account_id,
                    version=result.version,
                    detail=f"{result.zone_set.status.value}, {result.zone_set.mode.value}",
                )
                queue_entry(pipe, entry)
            # The shared record outbound reads: profile, and the statements of the facts shown.
            write_profile(pipe, self.campaign.tenant, account, result.zone_set)
            pipe.set(
                keys.explain_key(self.campaign.tenant, self.campaign.campaign, account.account_id),
                json.dumps(explain_record(outcome, version=result.version)).encode(),
                ex=keys.ZONE_SET_TTL_S,
            )
            self._journal(
                pipe,
                account.account_id,
                JournalState.DEFERRED if outcome.deferred else JournalState.PUBLISHED,
                hashes[account.account_id],
                version=result.version,
                reason=outcome.zone_set.mode.value,
            )
        pipe.expire(self.journal_key, keys.JOURNAL_TTL_S)
        pipe.execute()

    @contextmanager
    def _assembly_pool(self) -> Iterator[ThreadPoolExecutor | None]:
        """The run's thread pool (none at concurrency 1), kept from one `process` call to the next.

        One thread per concurrent account: the model client is synchronous, and a thread
        waiting on the network holds no lock. (The `openai` client's asyncio flavour was
        measured to cost more CPU per call than its threads, see bench/README.md.) Kept,
        because a worker calls `process` once per work entry and starting `concurrency`
        threads each time was a visible share of its CPU; `close` stops them.
        """
        if self.concurrency == 1:
            yield None
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="assemble")
        try:
            yield self._pool
        except BaseException:
            self.close()  # a failed publish starts no more model calls
            raise

    def close(self) -> None:
        """Stop the run's assembly threads, dropping work not started (a later `process` starts anew)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _still_good(self, existing: ZoneSet, input_hash: str) -> bool:
        """Same inputs and still inside its validity window: keep it, whatever its review status."""
        return existing.input_hash == input_hash and (
            existing.valid_until is None or self.now < existing.valid_until
        )

    @staticmethod
    def _count(zone_set: ZoneSet, tally: _Tally, sampled: list[SampleCandidate], account: Account) -> None:
        tally.by_mode[zone_set.mode.value] += 1
        for zone in zone_set.zones:
            tally.zones_by_rung[zone.rung.value] += 1
            if zone.rung is not Rung.PERSONAL:
                tally.fallback_reasons[zone.reason] += 1
        if zone_set.status is ZoneSetStatus.PUBLISHED:
            sampled.append((f"{account.segment}/{zone_set.mode.value}", account.account_id, zone_set.status))

    # -- journal and review sample -------------------------------------------------------------

    def _journal_accepted(self, accounts: Sequence[Account]) -> None:
        for chunk in _chunks(accounts, 1000):
            entries = {
                a.account_id: json.dumps({"state": JournalState.ACCEPTED, "at": self.now.isoformat()})
                for a in chunk
            }
            # Keep a published entry as it is until this run replaces it: --resume relies on it.
            pipe = self.client.pipeline(transaction=False)
            for account_id, value in entries.items():
                pipe.hsetnx(self.journal_key, account_id, value)
            pipe.execute()

    def _journal(
        self,
        pipe: redis.client.Pipeline,
        account_id: str,
        state: str,
        input_hash: str,
        *,
        reason: str = "",
        version: int | None = None,
    ) -> None:
        pipe.hset(
            self.journal_key,
            account_id,
            json.dumps(
                {
                    "state": state,
                    "reason": reason,
                    "input_hash": input_hash,
                    "version": version,
                    "at": datetime.now(UTC).isoformat(),
                }
            ),
        )

    def _load_journal(self, chunk: Sequence[Account]) -> dict[str, dict[str, object]]:
        """The journal entries of one chunk (HMGET): a worker reads only what it resumes."""
        ids = [a.account_id for a in chunk]
        raw: list[bytes | None] = self.client.hmget(self.journal_key, ids)  # type: ignore[assignment]
        out: dict[str, dict[str, object]] = {}
        for account_id, value in zip(ids, raw, strict=True):
            if value is None:
                continue
            try:
                out[account_id] = json.loads(value)
            except (ValueError, UnicodeDecodeError):
                continue  # an unreadable entry is redone, not trusted
        return out

    def queue_sample(self, sampled: Sequence[SampleCandidate]) -> None:
        """Replace the campaign's review sample with one drawn from `sampled` (see `choose_sample`)."""
        chosen = choose_sample(sampled, self.campaign.approval.sample_rate)
        if not chosen:
            return
        key = keys.review_sample_key(self.campaign.tenant, self.campaign.campaign)
        queued_at = time.time()
        pipe = self.client.pipeline(transaction=True)
        pipe.delete(key)
        pipe.zadd(key, dict.fromkeys(chosen, queued_at))
        pipe.expire(key, keys.CAMPAIGN_TTL_S)
        pipe.execute()


def _assemble_one(assembler: Assembler, account: Account, input_hash: str) -> AccountOutcome | BaseException:
    try:
        return assembler.assemble(account, input_hash)
    except Exception as exc:  # one broken account must not stop the run: journalled as failed
        return exc


def _merged(counts: dict[str, int], more: Counter[str], *, ranked: bool = False) -> dict[str, int]:
    """Counts added up; `ranked`: most common first, as the report lists reasons."""
    total = Counter(counts) + more
    return dict(total.most_common()) if ranked else dict(total)


def _chunks(items: Sequence[Account], size: int) -> Iterator[Sequence[Account]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def progress_bar(
    total: int, *, enabled: bool | None = None
) -> tuple[Callable[[int], None], Callable[[], None]]:
    """A tqdm bar on stderr when it is a terminal; (advance, close)."""
    from tqdm import tqdm

    show = sys.stderr.isatty() if enabled is None else enabled
    bar = tqdm(total=total, unit="acct", disable=not show, file=sys.stderr, dynamic_ncols=True)

    def advance(n: int) -> None:
        bar.update(n)

    return advance, bar.close
