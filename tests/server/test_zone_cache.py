"""The zone-set cache: LRU bound, TTL, invalidation, and no stale value put back after one."""

from __future__ import annotations

from server.zone_cache import REFRESH_AFTER, ZoneSetCache
from tests.server.conftest import make_zone_set

KEY = ("acme", "q4-pipeline", "acct_1")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def versioned(version: int) -> object:
    return make_zone_set("acct_1").model_copy(update={"version": version})


def test_hit_miss_and_ttl() -> None:
    clock = Clock()
    cache = ZoneSetCache(10, ttl_s=30, clock=clock)
    assert cache.get(KEY) == (False, None)
    zs = versioned(1)
    cache.put(KEY, zs, cache.begin_fetch(KEY))  # type: ignore[arg-type]
    assert cache.get(KEY) == (True, zs)
    clock.now = 31
    assert cache.get(KEY) == (False, None)


def test_absence_is_cached_too() -> None:
    cache = ZoneSetCache(10, ttl_s=30)
    cache.put(KEY, None, cache.begin_fetch(KEY))
    assert cache.get(KEY) == (True, None)


def test_lru_bound_evicts_the_least_recently_used() -> None:
    cache = ZoneSetCache(2, ttl_s=30)
    keys = [("t", "c", f"a{i}") for i in range(3)]
    for key in keys[:2]:
        cache.put(key, None, cache.begin_fetch(key))
    cache.get(keys[0])  # a0 is now more recent than a1
    cache.put(keys[2], None, cache.begin_fetch(keys[2]))
    assert len(cache) == 2
    assert cache.get(keys[1])[0] is False and cache.get(keys[0])[0] and cache.get(keys[2])[0]


def test_invalidate_drops_the_entry() -> None:
    cache = ZoneSetCache(10, ttl_s=30)
    cache.put(KEY, versioned(1), cache.begin_fetch(KEY))  # type: ignore[arg-type]
    assert cache.invalidate(KEY, 2) is True
    assert cache.get(KEY) == (False, None)
    assert cache.invalidate(KEY, 3) is False


def test_a_read_older_than_an_invalidation_is_not_stored() -> None:
    cache = ZoneSetCache(10, ttl_s=30)
    ticket = cache.begin_fetch(KEY)
    cache.invalidate(KEY, 2)  # version 2 announced while version 1 was being read
    assert cache.put(KEY, versioned(1), ticket) is False  # type: ignore[arg-type]
    assert cache.get(KEY) == (False, None)
    ticket = cache.begin_fetch(KEY)
    cache.invalidate(KEY, 2)
    assert cache.put(KEY, versioned(2), ticket) is True  # type: ignore[arg-type]


def test_clear_campaign_forgets_entries_and_reads_in_flight() -> None:
    cache = ZoneSetCache(10, ttl_s=30)
    cache.put(KEY, None, cache.begin_fetch(KEY))
    other = ("acme", "other", "acct_1")
    cache.put(other, None, cache.begin_fetch(other))
    in_flight = ("acme", "q4-pipeline", "acct_2")
    ticket = cache.begin_fetch(in_flight)
    cache.clear_campaign("acme", "q4-pipeline")
    assert cache.get(KEY)[0] is False
    assert cache.get(other)[0] is True
    assert cache.put(in_flight, None, ticket) is False
    assert cache.put(in_flight, None, cache.begin_fetch(in_flight)) is True


def test_entries_whose_time_is_up_make_way_without_reaching_the_limit() -> None:
    """Memory follows the visitors of the last TTL: a steady trickle of new accounts keeps
    the cache near what one TTL brings, far under its limit."""
    clock = Clock()
    cache = ZoneSetCache(1_000, ttl_s=30, clock=clock)
    for i in range(300):
        clock.now = float(i)  # one new account a second
        key = ("acme", "q4-pipeline", f"acct_{i}")
        cache.put(key, None, cache.begin_fetch(key))
    assert len(cache) <= 31


def test_an_entry_read_late_in_its_life_asks_once_for_a_refresh() -> None:
    """Past `REFRESH_AFTER` of the TTL, the first read says "refresh" and still hits; later
    reads do not ask again; the refreshed entry lives a whole TTL from its `put`."""
    clock = Clock()
    cache = ZoneSetCache(10, ttl_s=30, clock=clock)
    zs = versioned(1)
    cache.put(KEY, zs, cache.begin_fetch(KEY))  # type: ignore[arg-type]
    clock.now = 30 * REFRESH_AFTER - 0.01
    assert cache.lookup(KEY) == (True, zs, False)
    clock.now = 30 * REFRESH_AFTER
    assert cache.lookup(KEY) == (True, zs, True)
    assert cache.lookup(KEY) == (True, zs, False)  # one refresh per entry
    assert cache.get(KEY) == (True, zs)
    fresh = versioned(1)
    cache.put(KEY, fresh, cache.begin_fetch(KEY))  # type: ignore[arg-type]
    clock.now = 30 * REFRESH_AFTER + 29.9  # past the first entry's expiry, inside the refreshed one's
    assert cache.lookup(KEY) == (True, fresh, True)
    clock.now += 0.2
    assert cache.lookup(KEY) == (False, None, False)


def test_a_refresh_older_than_an_invalidation_is_not_stored() -> None:
    """A refresh is a fetch like a miss's: a version announced meanwhile wins."""
    clock = Clock()
    cache = ZoneSetCache(10, ttl_s=30, clock=clock)
    cache.put(KEY, versioned(1), cache.begin_fetch(KEY))  # type: ignore[arg-type]
    clock.now = 25
    assert cache.lookup(KEY)[2]
    ticket = cache.begin_fetch(KEY)
    cache.invalidate(KEY, 2)
    assert cache.put(KEY, versioned(1), ticket) is False  # type: ignore[arg-type]
    assert cache.lookup(KEY) == (False, None, False)
