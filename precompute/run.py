"""A precompute run: one campaign's accounts read, assembled, published, journalled, reported.

A local run is `run(path)`: read the file, `prepare` (config, journal), `process` every
account, draw the review sample, `finish` (timing, stored report). A distributed run
(`precompute.worker`) calls the same `process` on each work entry's accounts, so both
paths decide, publish and journal identically; only who adds up the report differs.

The run holds what lasts from one `process` call to the next: the settings, the assembler
and the thread pool (with `concurrency` > 1, for model providers that wait on the network).
Its parts are modules of their own: the campaign config it publishes first
(`precompute.published_config`), the chunk-and-batch publishing (`precompute.publish`), the
journal `--resume` reads (`precompute.journal`) and the review sample
(`precompute.review_sample`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import redis

from precompute.assemble import Assembler, neutral_context
from precompute.checks import build_vocabulary
from precompute.company_names import short_name
from precompute.context import EffectivePolicy
from precompute.hashing import campaign_fingerprint
from precompute.journal import Journal
from precompute.providers.base import Provider
from precompute.publish import AccountPageCheck, ChunkPublisher
from precompute.published_config import publish_campaign_config
from precompute.report import MalformedRow, RunReport
from precompute.review_sample import SampleCandidate, replace_review_sample
from welcomemat import keys
from welcomemat.campaign.contract import Campaign
from welcomemat.model_cost import DEFAULT_PRICES, PriceTable, RunBudget, RunCost, run_cost
from welcomemat.records.accounts import Account, read_accounts
from welcomemat.records.audit import Auditor, Via
from welcomemat.records.erasure import suppress
from welcomemat.security.ip_ranges import IpRangeRules
from welcomemat.theme.folder import Theme
from welcomemat.zones.contract import ZoneContract
from welcomemat.zones.store import ZoneSetStore

__all__ = ["PrecomputeRun"]


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
        ip_rules: IpRangeRules | None = None,
        page_check: AccountPageCheck | None = None,
        prices: PriceTable = DEFAULT_PRICES,
        budget: RunBudget | None = None,
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
        # The tenant's rules for accounts' `ip_ranges` (tenant.yaml; None: no private ranges).
        self.ip_rules = ip_rules
        self._assembler: Assembler | None = None
        # The cost: tokens from the provider's own count since now, priced by `prices`; `budget`
        # (`--budget`) stops the run starting accounts once they reach it (`precompute.publish`).
        self.prices = prices
        self.budget = budget
        self._usage_at_start = provider.usage()
        self._pool: ThreadPoolExecutor | None = None  # see `_assembly_pool`
        self.fingerprint = campaign_fingerprint(campaign, zones, policy, provider.fingerprint())
        self.journal_key = keys.journal_key(campaign.tenant, campaign.campaign)
        self.journal = Journal(client, self.journal_key)
        self.publisher = ChunkPublisher(
            client=client,
            store=self.store,
            campaign=campaign,
            auditor=self.auditor,
            journal=self.journal,
            fingerprint=self.fingerprint,
            resume=self.resume,
            now=self.now,
            # Each account's own pages in the theme: the renderer's check, passed in.
            page_check=page_check if theme is not None else None,
            over_budget=self._over_budget if budget is not None else None,
        )

    # -- the run -------------------------------------------------------------------------------

    def run(self, accounts_path: Path) -> RunReport:
        """The local run: read the file, then `process` every account in it."""
        started = time.perf_counter()
        report = self.new_report()
        read = read_accounts(accounts_path, self.ip_rules)
        report.rows_read = read.lines_read
        report.malformed = [
            MalformedRow(file=p.file, line=p.line, field=p.field, reason=p.message) for p in read.problems
        ]
        kept = self.suppress(read.accounts, report)
        kept_ids = {a.account_id for a in kept}
        self.prepare(kept, erased=[a.account_id for a in read.accounts if a.account_id not in kept_ids])
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
            budget=self.budget.describe() if self.budget is not None else None,
        )

    def prepare(self, accounts: Sequence[Account], *, erased: Sequence[str] = ()) -> None:
        """Once per run, before any `process`: publish the contracts, journal every account `accepted`.

        The IP-range map is merged with the accounts' ranges; `erased`: ids in the file the
        erasure list left out, whose ranges go (`precompute.ip_range_map`).
        """
        publish_campaign_config(
            self.client,
            self.campaign,
            self.zones,
            self.policy,
            accounts,
            self.theme,
            ip_rules=self.ip_rules,
            erased=erased,
        )
        self.journal.accept(accounts, self.now)

    def suppress(self, accounts: Sequence[Account], report: RunReport) -> list[Account]:
        """`accounts` without the erased ones, and without erased contacts (`welcomemat.records.erasure`):
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
        with self._assembly_pool() as pool:
            sampled = self.publisher.publish(accounts, self._assembler, pool, report, self.progress)
        report.accounts += len(accounts)
        after = self.provider.usage()
        report.model_calls += after.model_calls - before.model_calls
        report.retries += after.retries - before.retries
        report.tokens += after.tokens - before.tokens
        report.input_tokens += after.input_tokens - before.input_tokens
        report.output_tokens += after.output_tokens - before.output_tokens
        report.breaker_openings += after.breaker_openings - before.breaker_openings
        report.cost = run_cost(
            after.model,
            model_calls=report.model_calls,
            input_tokens=report.input_tokens,
            output_tokens=report.output_tokens,
            prices=self.prices,
        )
        return sampled

    def spent(self) -> RunCost:
        """What the provider has spent since this run began (every thread's calls), priced."""
        now, start = self.provider.usage(), self._usage_at_start
        return run_cost(
            now.model,
            model_calls=now.model_calls - start.model_calls,
            input_tokens=now.input_tokens - start.input_tokens,
            output_tokens=now.output_tokens - start.output_tokens,
            prices=self.prices,
        )

    def _over_budget(self) -> bool:
        # Asked before each account starts: accounts already with the model finish, so a run may
        # pass its budget by what at most `concurrency` accounts spend.
        return self.budget is not None and self.budget.reached(self.spent())

    def finish(self, report: RunReport, *, seconds: float) -> None:
        """Stamp the timing and the cost, and store the report as the campaign's last run.

        The cost is figured from the report's token counts (a distributed run's add up every
        worker's), at the price this run's provider model has in the run's price table.
        """
        report.cost = run_cost(
            self.provider.usage().model,
            model_calls=report.model_calls,
            input_tokens=report.input_tokens,
            output_tokens=report.output_tokens,
            prices=self.prices,
        )
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

    def queue_sample(self, sampled: Sequence[SampleCandidate]) -> None:
        """Replace the campaign's review sample with one drawn from `sampled` (see `choose_sample`)."""
        replace_review_sample(self.client, self.campaign, sampled)
