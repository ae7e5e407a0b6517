"""The publishing pipeline of a run: its accounts chunk by chunk, assembled and published in batches.

Work goes in chunks (`CHUNK_SIZE` accounts): one MGET reads the chunk's current zone
sets, unchanged accounts are skipped before any generation (same input hash, still
valid: no model call, no new version), the rest are assembled (on the run's thread pool
when it has one, for model providers that wait on the network: each account goes to the
pool as soon as it is hashed, and the next chunk starts assembling while this one
publishes) and published one atomic transaction each, `PUBLISH_BATCH` accounts at a time
in chunk order. A batch's other writes go in one pipeline: journal entries
(`precompute.journal`), explain records, the shared account records, audit entries and
review-queue entries. On `--resume`, accounts journalled `published` with the same input
hash are skipped too (an account whose zone set was written but whose journal entry was
not is unchanged, and journalled `published` then).

An account the provider could not answer for (`precompute.provider_faults`: a fault, not a
decision) is journalled `deferred` with the cause, and retried by the next run. A version it
already has is kept untouched (no new version, no fallback over good copy); an account
without one gets the fallback, published with an input hash that never matches.

With a `--budget` (`over_budget`, asked as each account is about to be assembled), an account
that would start after the budget is reached is not assembled and not published: journalled
`deferred` (reason `budget`), so the next run does it.

The run (`precompute.run`) owns what lasts across its `process` calls (the assembler, the
thread pool) and hands them in; the campaign config it publishes first is
`precompute.published_config`.

With a theme, each account's own pages are rendered in it and checked (`page_check`, the
renderer's, passed in by the command line): an account whose page fails is published with
`theme_refused` (the theme's digest), and the renderer shows it in the built-in frame. An
unchanged account is checked too (the theme is no input of its hash), and assembled and
published again when the answer changed (with a model provider, that is a model call).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import TypeAlias

import redis

from precompute.assemble import AccountOutcome, Assembler
from precompute.explain import explain_record
from precompute.hashing import account_input_hash, account_variant
from precompute.journal import Journal, JournalState
from precompute.report import AccountFailure, RunReport
from precompute.review_sample import SampleCandidate
from welcomemat import keys
from welcomemat.campaign.contract import Campaign
from welcomemat.records.account_records import write_profile
from welcomemat.records.accounts import Account
from welcomemat.records.audit import AuditAction, Auditor, queue_entry
from welcomemat.theme.folder import Theme
from welcomemat.zones.contract import ZoneContract
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneSet, ZoneSetMode, ZoneSetStatus

__all__ = [
    "CHUNK_SIZE",
    "PUBLISH_BATCH",
    "AccountPageCheck",
    "BudgetReached",
    "ChunkPublisher",
    "PageCheckFactory",
]


CHUNK_SIZE = 256  # accounts per MGET: big enough to amortise round trips
# Accounts per publish pipeline. Smaller than a chunk: a chunk's first accounts are written
# while its last are still with the model, so the run's end waits for one batch's writes,
# not a whole chunk's, and the main thread's bursts of work (it shares the interpreter lock
# with the threads waiting on the model) stay short.
PUBLISH_BATCH = 32
# (the theme's digest, a check of one account's zone set at the run's clock: why its pages may
# not be shown in the theme, or None). The renderer's (`server.render.account_page_check`).
AccountPageCheck: TypeAlias = tuple[str, Callable[[ZoneSet, datetime], "str | None"]]
# Builds it for a campaign's theme (`server.render.account_page_check`, passed in by the CLI).
PageCheckFactory: TypeAlias = Callable[[Theme, Campaign, Mapping[str, ZoneContract]], AccountPageCheck]


class BudgetReached(Exception):
    """The run's `--budget` was reached before this account started: nothing assembled or published;
    journalled `deferred` (reason `budget`), so the next run does it."""


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


@dataclass(frozen=True, kw_only=True)
class ChunkPublisher:
    """Publishes a run's accounts, chunk by chunk; one per run, built with the run's settings."""

    client: redis.Redis
    store: ZoneSetStore
    campaign: Campaign
    auditor: Auditor
    journal: Journal
    fingerprint: str
    resume: bool
    now: datetime
    page_check: AccountPageCheck | None = None
    # `--budget`: asked as each account is about to be assembled; True: start no more (`BudgetReached`).
    over_budget: Callable[[], bool] | None = None

    def _theme_refused(self, zone_set: ZoneSet) -> tuple[str | None, str | None]:
        """(the digest to publish as `theme_refused`, why), both None when its pages may use the theme."""
        if self.page_check is None:
            return None, None
        digest, check = self.page_check
        reason = check(zone_set, self.now)
        return (digest, reason) if reason is not None else (None, None)

    def publish(
        self,
        accounts: Sequence[Account],
        assembler: Assembler,
        pool: ThreadPoolExecutor | None,
        report: RunReport,
        progress: Callable[[int], None] | None = None,
    ) -> list[SampleCandidate]:
        """Assemble (on `pool`, if any), publish and journal `accounts`, adding their counts to
        `report` and each chunk's size to `progress`. Returns the review-sample candidates."""
        tally = _Tally(Counter(), Counter(), Counter(), Counter())
        sampled: list[SampleCandidate] = []
        started: _StartedChunk | None = None
        for chunk in _chunks(accounts, CHUNK_SIZE):
            journal = self.journal.load(chunk) if self.resume else {}
            # The next chunk goes to the pool before this one is published, so the pool
            # does not idle while the main thread publishes (chunks never share an account).
            following = self._start_chunk(chunk, assembler, journal, report, tally, sampled, pool)
            if started is not None:
                self._run_chunk(started, report, tally, sampled)
                if progress:
                    progress(started.size)
            started = following
        if started is not None:
            self._run_chunk(started, report, tally, sampled)
            if progress:
                progress(started.size)
        report.by_mode = _merged(report.by_mode, tally.by_mode)
        report.zones_by_rung = _merged(report.zones_by_rung, tally.zones_by_rung)
        report.fallback_reasons = _merged(report.fallback_reasons, tally.fallback_reasons, ranked=True)
        report.check_failures = _merged(report.check_failures, tally.check_failures, ranked=True)
        return sampled

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
            input_hash = hashes[account.account_id] = account_input_hash(
                self.fingerprint, account, account_variant(self.campaign, account.account_id)
            )
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
            elif (
                existing is not None
                and self._still_good(existing, input_hash)
                and (refused := self._theme_refused(existing))[0] == existing.theme_refused
            ):
                if refused[1] is not None:  # still refused: reported again, nothing rewritten
                    report.theme_refused.append(
                        AccountFailure(account_id=account.account_id, reason=refused[1])
                    )
                report.unchanged += 1
                self._count(existing, tally, sampled, account)
                if entry is not None:  # on --resume, and not journalled `published` with this hash:
                    # written by a run killed between its publish and its journal entry.
                    settle.append(existing)
            else:
                todo.append(account)
                if pool is not None:
                    futures.append(
                        pool.submit(_assemble_one, assembler, account, input_hash, self.over_budget)
                    )

        def outcomes(start: int, stop: int) -> list[AccountOutcome | BaseException]:
            # Without a pool nothing starts until asked for (a serial run assembles, then publishes).
            if pool is None:
                return [
                    _assemble_one(assembler, a, hashes[a.account_id], self.over_budget)
                    for a in todo[start:stop]
                ]
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
            self.journal.record(
                pipe,
                zone_set.account_id,
                JournalState.PUBLISHED,
                hashes[zone_set.account_id],
                version=zone_set.version,
                reason=zone_set.mode.value,
            )
        built: list[AccountOutcome] = []
        for account, outcome in zip(todo, outcomes, strict=True):
            if isinstance(outcome, BudgetReached):  # not started: no fallback written, done next run
                report.budget_reached = True
                report.budget_deferred += 1
                self.journal.record(
                    pipe,
                    account.account_id,
                    JournalState.DEFERRED,
                    hashes[account.account_id],
                    reason="budget",
                )
            elif isinstance(outcome, BaseException):
                reason = f"{type(outcome).__name__}: {outcome}"
                report.failed.append(AccountFailure(account_id=account.account_id, reason=reason))
                self.journal.record(
                    pipe, account.account_id, JournalState.FAILED, hashes[account.account_id], reason=reason
                )
            elif outcome.deferred and (existing := current.get(account.account_id)) is not None:
                self._keep(pipe, outcome, existing, hashes[account.account_id], report, tally, sampled)
            else:
                built.append(outcome)
        framed: list[ZoneSet] = []
        for outcome in built:
            digest, why = self._theme_refused(outcome.zone_set)
            if why is not None:
                report.theme_refused.append(AccountFailure(account_id=outcome.account.account_id, reason=why))
            framed.append(outcome.zone_set.model_copy(update={"theme_refused": digest}))
        results = self.store.publish_many(framed, current=current)
        for outcome, result in zip(built, results, strict=True):
            account = outcome.account
            if outcome.deferred:
                _count_deferred(outcome, report)
            elif outcome.model_calls:
                report.provider_answered += 1
            report.published += int(result.changed)
            report.personal_published += int(
                result.changed and result.zone_set.mode is not ZoneSetMode.FALLBACK
            )
            report.unchanged += int(not result.changed)
            if result.zone_set.status is ZoneSetStatus.PENDING_REVIEW:
                report.pending_review += 1
                if result.changed:
                    review_key = keys.review_queue_key(self.campaign.tenant, self.campaign.campaign)
                    pipe.zadd(review_key, {account.account_id: time.time()})
                    pipe.expire(review_key, keys.CAMPAIGN_TTL_S)  # every key gets a TTL
            held_key = keys.review_held_key(self.campaign.tenant, self.campaign.campaign)
            if any(zone.held is not None for zone in outcome.zones):
                pipe.zadd(held_key, {account.account_id: time.time()}, nx=True)
                pipe.expire(held_key, keys.CAMPAIGN_TTL_S)  # every key gets a TTL
            else:  # what this run held before is no longer the account's
                pipe.zrem(held_key, account.account_id)
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
            self.journal.record(
                pipe,
                account.account_id,
                JournalState.DEFERRED if outcome.deferred else JournalState.PUBLISHED,
                hashes[account.account_id],
                version=result.version,
                reason=(
                    outcome.deferred_cause.value
                    if outcome.deferred and outcome.deferred_cause is not None
                    else outcome.zone_set.mode.value
                ),
            )
        self.journal.refresh(pipe)
        pipe.execute()

    def _keep(
        self,
        pipe: redis.client.Pipeline,
        outcome: AccountOutcome,
        existing: ZoneSet,
        input_hash: str,
        report: RunReport,
        tally: _Tally,
        sampled: list[SampleCandidate],
    ) -> None:
        """A deferred account that has a version: a fault is no decision, so nothing is written
        but its journal entry (why; the next run asks again). A good version is never replaced
        by a fallback, and a fallback published while the provider was down is not repeated."""
        _count_deferred(outcome, report)
        self._count(existing, tally, sampled, outcome.account)
        self.journal.record(
            pipe,
            existing.account_id,
            JournalState.DEFERRED,
            input_hash,
            version=existing.version,
            reason=outcome.deferred_cause.value if outcome.deferred_cause is not None else "",
        )

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


def _count_deferred(outcome: AccountOutcome, report: RunReport) -> None:
    report.deferred += 1
    cause = outcome.deferred_cause.value if outcome.deferred_cause is not None else "unavailable"
    report.deferred_causes[cause] = report.deferred_causes.get(cause, 0) + 1


def _assemble_one(
    assembler: Assembler, account: Account, input_hash: str, over_budget: Callable[[], bool] | None = None
) -> AccountOutcome | BaseException:
    if over_budget is not None and over_budget():  # asked as the account starts, on its thread
        return BudgetReached()
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
