"""A concurrent run keeps its thread pool busy across chunks: one slow account holds back only itself.

With `concurrency` > 1 a run assembles on one thread pool for all its chunks, and the next
chunk's accounts are handed to it before the current chunk is published. A provider
that stalls on the last account of a chunk therefore does not stall the run: the other
threads go on with the next chunk. Real Redis, the offline composer behind a gate.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import redis

from precompute.context_builder import build_context
from precompute.policy import build_policy
from precompute.providers.base import GenerationRequest, GenerationResult, ProviderUsage
from precompute.providers.offline import OfflineComposer
from precompute.publish import CHUNK_SIZE, PUBLISH_BATCH
from precompute.report import RunReport
from precompute.run import PrecomputeRun
from tests.corpora import REPO_ROOT
from tests.example_accounts import write_example_accounts
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.records.accounts import Account, read_accounts
from welcomemat.zones.contract import ZoneContract, load_zone_contracts
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
GATE_TIMEOUT_S = 20.0  # only reached when the next chunk never starts: the test then fails


class GatedComposer:
    """The offline composer, except that `held` waits until an account of `releasers` is generated."""

    name = "gated-offline"

    def __init__(self, held: str, releasers: set[str]) -> None:
        self._inner = OfflineComposer()
        self.held = held
        self.releasers = releasers
        self.released = threading.Event()
        self.released_in_time: bool | None = None

    def fingerprint(self) -> str:
        return self._inner.fingerprint()

    def usage(self) -> ProviderUsage:
        return self._inner.usage()

    def generate(self, request: GenerationRequest) -> GenerationResult:
        account_id = request.context.account.account_id
        if account_id in self.releasers:
            self.released.set()
        if account_id == self.held:
            self.released_in_time = self.released.wait(GATE_TIMEOUT_S)
        return self._inner.generate(request)


def run_concurrently(
    redis_client: redis.Redis,
    tmp_path: Path,
    campaign: Campaign,
    zones: dict[str, ZoneContract],
    provider: GatedComposer,
    accounts: list[Account],
) -> RunReport:
    """A run over `accounts` (written to a file, as a user's run reads them), four threads."""
    path = tmp_path / "accounts.jsonl"
    path.write_text("".join(a.model_dump_json() + "\n" for a in accounts))
    return PrecomputeRun(
        client=redis_client,
        campaign=campaign,
        zones=zones,
        policy=build_policy(campaign, None),
        provider=provider,
        concurrency=4,
        now=NOW,
    ).run(path)


def test_a_stalled_account_does_not_stop_the_next_chunk_from_being_written(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    zones = dict(load_zone_contracts(REPO_ROOT / "zones"))
    campaign = load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones)
    policy = build_policy(campaign, None)
    pool = read_accounts(write_example_accounts(tmp_path / "pool.jsonl", CHUNK_SIZE + 60, NOW.date()))
    accounts = pool.accounts[: CHUNK_SIZE + 40]

    def generated(account: Account) -> bool:
        return bool(build_context(account, campaign, policy, NOW.date()).facts)

    first, second = accounts[:CHUNK_SIZE], accounts[CHUNK_SIZE:]
    held = [a.account_id for a in first if generated(a)][-1]
    releasers = {a.account_id for a in second if generated(a)}
    assert releasers, "the second chunk needs accounts the provider writes for"
    provider = GatedComposer(held, releasers)
    report = run_concurrently(redis_client, tmp_path, campaign, zones, provider, accounts)

    # The held account of chunk one was released by an account of chunk two: the second
    # chunk was being written while the first still waited for its slowest account.
    assert provider.released_in_time is True
    assert report.failed == [] and report.published == len(accounts)
    store = ZoneSetStore(redis_client)
    published = store.get_many(campaign.tenant, campaign.campaign, [a.account_id for a in accounts])
    assert all(published[a.account_id] is not None for a in accounts)
    held_set = published[held]
    assert held_set is not None and any(z.rung is Rung.PERSONAL for z in held_set.zones)


class WaitsForPublication(GatedComposer):
    """The offline composer, except that `held` waits until `watched`'s zone set is in Redis."""

    def __init__(self, held: str, watched: str, store: ZoneSetStore, tenant: str, campaign: str) -> None:
        super().__init__(held, set())
        self.watched = watched
        self.store = store
        self.where = (tenant, campaign)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        if request.context.account.account_id == self.held:
            self.released_in_time = self._published_in_time()
        return self._inner.generate(request)

    def _published_in_time(self) -> bool:
        deadline = threading.Event()
        timer = threading.Timer(GATE_TIMEOUT_S, deadline.set)
        timer.start()
        try:
            while not deadline.is_set():
                if self.store.get(*self.where, self.watched) is not None:
                    return True
                deadline.wait(0.01)
            return False
        finally:
            timer.cancel()


def test_a_chunks_first_accounts_are_published_while_its_last_is_still_being_written(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    """Publishing goes in batches of PUBLISH_BATCH as they are assembled, not once per chunk."""
    zones = dict(load_zone_contracts(REPO_ROOT / "zones"))
    campaign = load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones)
    policy = build_policy(campaign, None)
    accounts = read_accounts(
        write_example_accounts(tmp_path / "pool.jsonl", 3 * PUBLISH_BATCH, NOW.date())
    ).accounts
    assert len(accounts) < CHUNK_SIZE  # one chunk
    generated = [a.account_id for a in accounts if build_context(a, campaign, policy, NOW.date()).facts]
    held, watched = generated[-1], accounts[0].account_id
    store = ZoneSetStore(redis_client)
    provider = WaitsForPublication(held, watched, store, campaign.tenant, campaign.campaign)
    report = run_concurrently(redis_client, tmp_path, campaign, zones, provider, accounts)

    assert accounts.index(next(a for a in accounts if a.account_id == held)) >= PUBLISH_BATCH
    assert provider.released_in_time is True  # the first batch was in Redis before the chunk ended
    assert report.failed == [] and report.published == len(accounts)
