"""The zone-set reader against a real Redis: an account visited late in its cache entry's life
is read again in the background, so no request waits for the entry's expiry."""

from __future__ import annotations

import asyncio
import threading

import pytest
import redis

from server.metrics import RendererMetrics
from server.redis_guard import RedisGuard, renderer_redis_client
from server.zone_cache import REFRESH_AFTER, ZoneSetCache
from server.zone_set_reader import ZoneSetReader
from tests.server.conftest import CAMPAIGN, TENANT, make_zone_set
from welcomemat.storage.breaker import CircuitBreaker
from welcomemat.zones.store import ZoneSetStore

ACCOUNT = "acct_refresh"
TTL_S = 30.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def reader_with(
    client: redis.Redis,
    clock: Clock,
    cache: ZoneSetCache | None = None,
    faults: list[str] | None = None,
    guard: RedisGuard | None = None,
) -> tuple[ZoneSetReader, RendererMetrics]:
    metrics = RendererMetrics()
    guard = guard or RedisGuard(
        timeout_s=10,
        breaker=CircuitBreaker(3, 1.0),
        threads=2,
        on_fault=lambda op, kind: faults.append(kind) if faults is not None else None,
    )
    cache = cache if cache is not None else ZoneSetCache(100, TTL_S, clock=clock)
    return ZoneSetReader(client, cache, guard, metrics), metrics


@pytest.fixture
def clock(store: ZoneSetStore) -> Clock:
    """The account's first copy published; the clock of the cache the test builds."""
    store.publish(make_zone_set(ACCOUNT, texts={"hero_headline": "First copy"}))
    return Clock()


def headline(lookup: object) -> str:
    zone_set = getattr(lookup, "zone_set", None)
    assert zone_set is not None
    return str(zone_set.zones[0].text)


def test_an_account_visited_late_in_its_entry_is_read_again_while_it_is_served(
    redis_client: redis.Redis, store: ZoneSetStore, clock: Clock
) -> None:
    reader, metrics = reader_with(redis_client, clock)

    async def visits() -> None:
        assert headline(await reader.get(TENANT, CAMPAIGN, ACCOUNT)) == "First copy"  # a miss: read
        # New copy published (its change message is not what this test is about).
        store.publish(
            make_zone_set(ACCOUNT, texts={"hero_headline": "Second copy"}, input_hash="input-hash-0002")
        )
        clock.now = TTL_S * REFRESH_AFTER
        # Served from the entry at once (no await), while a read starts in the background.
        assert headline(reader.cached(TENANT, CAMPAIGN, ACCOUNT)) == "First copy"
        for _ in range(200):
            await asyncio.sleep(0.01)
            if headline(reader.cached(TENANT, CAMPAIGN, ACCOUNT)) == "Second copy":
                break
        assert headline(reader.cached(TENANT, CAMPAIGN, ACCOUNT)) == "Second copy"
        # Past the first entry's expiry: the refreshed entry answers, no request waits on Redis.
        clock.now = TTL_S + 1
        assert headline(reader.cached(TENANT, CAMPAIGN, ACCOUNT)) == "Second copy"

    asyncio.run(visits())
    counts = metrics.pages.zone_cache
    assert counts["miss"] == 1 and counts["refresh"] == 1 and counts["hit"] >= 3


def test_an_entry_nobody_reads_late_expires_and_is_read_on_the_next_request(
    redis_client: redis.Redis, clock: Clock
) -> None:
    reader, metrics = reader_with(redis_client, clock)

    async def visits() -> None:
        await reader.get(TENANT, CAMPAIGN, ACCOUNT)
        clock.now = TTL_S * REFRESH_AFTER - 1  # read before the refresh point: nothing started
        assert reader.cached(TENANT, CAMPAIGN, ACCOUNT) is not None
        clock.now = TTL_S
        assert reader.cached(TENANT, CAMPAIGN, ACCOUNT) is None  # expired: the caller reads it
        assert headline(await reader.get(TENANT, CAMPAIGN, ACCOUNT)) == "First copy"

    asyncio.run(visits())
    assert metrics.pages.zone_cache["miss"] == 2 and metrics.pages.zone_cache["refresh"] == 0


def test_a_refresh_when_redis_is_down_leaves_the_entry_served_until_it_expires(
    redis_client: redis.Redis, clock: Clock
) -> None:
    cache = ZoneSetCache(100, TTL_S, clock=clock)
    reader, _ = reader_with(redis_client, clock, cache)
    dead = renderer_redis_client("redis://127.0.0.1:1")  # the renderer's client; nothing listens there
    faults: list[str] = []
    broken, metrics = reader_with(dead, clock, cache, faults)  # the same cache, Redis gone

    async def visits() -> None:
        await reader.get(TENANT, CAMPAIGN, ACCOUNT)
        clock.now = TTL_S * REFRESH_AFTER
        assert headline(broken.cached(TENANT, CAMPAIGN, ACCOUNT)) == "First copy"
        for _ in range(1500):  # within the guard's 10 s budget
            if faults:
                break
            await asyncio.sleep(0.01)
        assert faults == ["error"]
        assert headline(broken.cached(TENANT, CAMPAIGN, ACCOUNT)) == "First copy"
        clock.now = TTL_S
        assert broken.cached(TENANT, CAMPAIGN, ACCOUNT) is None

    try:
        asyncio.run(visits())
    finally:
        dead.close()
    assert metrics.pages.zone_cache["refresh"] == 1


def test_no_refresh_takes_a_thread_while_requests_reads_hold_half_of_them(
    redis_client: redis.Redis, clock: Clock
) -> None:
    """A request's read waits for a worker thread within its budget: background refreshes
    start only while at least half the guard's threads are free, else the entry expires as
    it would without them."""
    guard = RedisGuard(timeout_s=10, breaker=CircuitBreaker(3, 1.0), threads=2)
    reader, metrics = reader_with(redis_client, clock, guard=guard)
    release = threading.Event()

    async def visits() -> None:
        await reader.get(TENANT, CAMPAIGN, ACCOUNT)
        held = asyncio.ensure_future(guard.call("held", lambda: release.wait(10)))  # one of two threads
        for _ in range(500):
            if not guard.background_room:
                break
            await asyncio.sleep(0.01)
        clock.now = TTL_S * REFRESH_AFTER
        assert headline(reader.cached(TENANT, CAMPAIGN, ACCOUNT)) == "First copy"  # served, no refresh
        release.set()
        await held
        assert guard.background_room
        clock.now = TTL_S
        assert reader.cached(TENANT, CAMPAIGN, ACCOUNT) is None  # expired, to be read on this miss

    try:
        asyncio.run(visits())
    finally:
        release.set()
    assert metrics.pages.zone_cache["refresh"] == 0
