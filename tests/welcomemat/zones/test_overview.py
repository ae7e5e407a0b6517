"""The campaign overview: its index follows every zone set write, and its pages are exact."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.welcomemat.zones.test_store import CAMPAIGN, TENANT, make_zone_set
from welcomemat import keys
from welcomemat.arms import Arm, assign_arm
from welcomemat.errors import InputError
from welcomemat.records.audit import Auditor, Via
from welcomemat.records.subject_requests import Subject, erase
from welcomemat.zones.overview import MAX_PAGE_SIZE, OverviewPage, OverviewQuery, read_overview
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneContent, ZoneSet, ZoneSetMode, ZoneSetStatus

HOLDOUT = 0.25
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def zone_set(
    account: str, *, status: ZoneSetStatus, rung: Rung, variant: str | None, version_hash: str
) -> ZoneSet:
    reason = {
        Rung.PERSONAL: "personal:funding",
        Rung.SEGMENT: "no_fresh_fact",
        Rung.DEFAULT: "unknown_segment",
    }
    return ZoneSet(
        tenant=TENANT,
        campaign=CAMPAIGN,
        account_id=account,
        segment="saas-mid",
        input_hash=version_hash,
        guideline_version="g-2026.1",
        created_at=NOW,
        status=status,
        mode=ZoneSetMode.DEGRADED,
        variant=variant,
        experiment="exp1" if variant else None,
        zones=(ZoneContent(zone_id="headline", text="Hello", rung=rung, reason=reason[rung]),),
    )


def page(client: redis.Redis, **params: str) -> OverviewPage:
    return read_overview(
        client, TENANT, CAMPAIGN, OverviewQuery.from_params(params), holdout_fraction=HOLDOUT
    )


def walk(client: redis.Redis, **params: str) -> list[str]:
    """Every account id of a forward walk, page by page."""
    seen: list[str] = []
    after: str | None = None
    for _ in range(10_000):
        found = page(client, **params, **({"after": after} if after else {}))
        seen += [r.account_id for r in found.rows]
        if found.next_after is None:
            return seen
        after = found.next_after
    raise AssertionError("the walk did not end")


def walk_back(client: redis.Redis, **params: str) -> list[str]:
    """Every account id of a backward walk from past the last id."""
    seen: list[str] = []
    before = "zzzz"
    for _ in range(10_000):
        found = page(client, **params, before=before)
        seen = [r.account_id for r in found.rows] + seen
        if found.prev_before is None:
            return seen
        before = found.prev_before
    raise AssertionError("the walk did not end")


@pytest.fixture
def store(redis_client: redis.Redis) -> ZoneSetStore:
    return ZoneSetStore(redis_client)


def test_a_publish_writes_the_row_and_a_rollback_restores_the_one_before(
    store: ZoneSetStore, redis_client: redis.Redis
) -> None:
    store.publish(make_zone_set(input_hash="hash-0001"))
    store.publish(make_zone_set(input_hash="hash-0002", status=ZoneSetStatus.PENDING_REVIEW))
    (row,) = page(redis_client).rows
    assert (row.account_id, row.version, row.status) == ("acct_dymaxa", 2, "pending_review")
    assert [(z.zone_id, z.rung, z.reason) for z in row.zones] == [
        ("headline", "personal", "fact_funding"),
        ("proof", "segment", "no_fresh_fact"),
    ]
    assert page(redis_client, status="pending_review").matched == 1
    assert page(redis_client, status="published").rows == []

    store.rollback(TENANT, CAMPAIGN, "acct_dymaxa")
    (row,) = page(redis_client).rows
    assert (row.version, row.status) == (3, "published")
    assert page(redis_client).counts["status"] == {"published": 1}
    store.set_status(TENANT, CAMPAIGN, "acct_dymaxa", ZoneSetStatus.REJECTED)
    assert [r.status for r in page(redis_client).rows] == ["rejected"]
    assert page(redis_client).counts["status"] == {"rejected": 1}


def test_a_batch_publish_writes_the_rows_in_its_script(
    store: ZoneSetStore, redis_client: redis.Redis
) -> None:
    sets = [make_zone_set(account_id=f"acct_{i:03d}") for i in range(40)]
    store.publish_many(sets)
    found = page(redis_client, limit="100")
    assert [r.account_id for r in found.rows] == [f"acct_{i:03d}" for i in range(40)]
    assert {r.version for r in found.rows} == {1}
    assert found.total == found.matched == 40
    store.publish_many([make_zone_set(account_id="acct_007", input_hash="hash-0002")])
    assert [r.version for r in page(redis_client, q="acct_007").rows] == [2]


def test_an_erased_account_leaves_the_overview(store: ZoneSetStore, redis_client: redis.Redis) -> None:
    store.publish_many([make_zone_set(account_id=a) for a in ("acct_a", "acct_b")])
    auditor = Auditor("dpo", Via.CLI, lambda: NOW)
    erase(redis_client, Subject(TENANT, "acct_a"), auditor=auditor, reason="request", campaigns=[CAMPAIGN])
    found = page(redis_client)
    assert [r.account_id for r in found.rows] == ["acct_b"]
    assert found.total == 1 and found.counts["status"] == {"published": 1}
    assert not any(
        b"acct_a" in m for m in redis_client.zrange(keys.overview_tags_key(TENANT, CAMPAIGN), 0, -1)
    )


def test_accounts_published_before_the_index_appear_after_a_rebuild(
    store: ZoneSetStore, redis_client: redis.Redis
) -> None:
    store.publish_many([make_zone_set(account_id=f"acct_{i}") for i in range(5)])
    for key in (
        keys.overview_ids_key(TENANT, CAMPAIGN),
        keys.overview_rows_key(TENANT, CAMPAIGN),
        keys.overview_tags_key(TENANT, CAMPAIGN),
        keys.overview_counts_key(TENANT, CAMPAIGN),
    ):
        redis_client.delete(key)
    assert [r.account_id for r in page(redis_client).rows] == [f"acct_{i}" for i in range(5)]
    for key in redis_client.scan_iter(match=f"{keys.campaign_prefix(TENANT, CAMPAIGN)}:ov:*"):
        assert redis_client.ttl(key) > 0


def test_a_row_whose_zone_set_expired_is_dropped(store: ZoneSetStore, redis_client: redis.Redis) -> None:
    store.publish_many([make_zone_set(account_id=a) for a in ("acct_a", "acct_b")])
    redis_client.delete(keys.zone_set_key(TENANT, CAMPAIGN, "acct_a"))
    assert [r.account_id for r in page(redis_client).rows] == ["acct_b"]
    assert page(redis_client).total == 1


def test_last_visit_comes_from_the_account_record(store: ZoneSetStore, redis_client: redis.Redis) -> None:
    store.publish(make_zone_set())
    redis_client.hset(keys.account_record_key(TENANT, "acct_dymaxa"), f"e:{CAMPAIGN}:last", "1764672000000")
    assert [r.last_visit_ms for r in page(redis_client).rows] == [1764672000000]


_IDS = st.text(alphabet="abc01", min_size=1, max_size=4).map(lambda s: f"a{s}")
_POPULATION = st.dictionaries(
    _IDS,
    st.tuples(
        st.sampled_from(list(ZoneSetStatus)),
        st.sampled_from(list(Rung)),
        st.sampled_from([None, "v1", "v2"]),
    ),
    max_size=60,
)


@pytest.fixture
def population_client(redis_client: redis.Redis) -> Iterator[redis.Redis]:
    yield redis_client


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(population=_POPULATION, size=st.integers(1, 7), data=st.data())
def test_paging_visits_every_account_once_and_filters_are_exact(
    population_client: redis.Redis,
    population: dict[str, tuple[ZoneSetStatus, Rung, str | None]],
    size: int,
    data: st.DataObject,
) -> None:
    client = population_client
    client.flushdb()
    sets = [
        zone_set(a, status=s, rung=r, variant=v, version_hash="hash-0001")
        for a, (s, r, v) in population.items()
    ]
    ZoneSetStore(client).publish_many(sets)
    everyone = sorted(population)
    assert walk(client, limit=str(size)) == everyone
    assert walk_back(client, limit=str(size)) == everyone

    status = data.draw(st.sampled_from([None, *ZoneSetStatus]))
    rung = data.draw(st.sampled_from([None, *Rung]))
    variant = data.draw(st.sampled_from([None, "v1", "-"]))
    arm = data.draw(st.sampled_from([None, *Arm]))
    prefix = data.draw(st.sampled_from(["", "a", "ab", "a0c", "b"]))
    expected = [
        a
        for a in everyone
        if a.startswith(prefix)
        and (status is None or population[a][0] is status)
        and (rung is None or population[a][1] is rung)
        and (variant is None or (population[a][2] or "-") == variant)
        and (arm is None or assign_arm(TENANT, CAMPAIGN, a, HOLDOUT) is arm)
    ]
    params = {
        "q": prefix,
        "status": status.value if status else "",
        "rung": rung.value if rung else "",
        "variant": variant or "",
        "arm": arm.value if arm else "",
        "limit": str(size),
    }
    assert walk(client, **params) == expected
    first = page(client, **params)
    if first.matched is not None:
        assert first.matched == len(expected)
    assert sum(first.counts["status"].values()) == len(population)


PARAMS = ["q", "status", "rung", "reason", "variant", "arm", "after", "before", "limit"]


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["q", "status", "rung", "reason", "variant", "arm", "after", "before", "limit"]),
        st.text(max_size=80),
    )
)
def test_query_values_are_checked_before_any_key_is_built(params: dict[str, str]) -> None:
    try:
        query = OverviewQuery.from_params(params)
    except InputError as exc:
        assert exc.field in params
        return
    assert 1 <= query.limit <= MAX_PAGE_SIZE
    for value in (query.prefix, query.reason or "", query.after or "", query.before or ""):
        assert all(c.isascii() and (c.isalnum() or c in "_.-") for c in value)


@pytest.mark.parametrize(
    "params",
    [
        {"limit": "0"},
        {"limit": str(MAX_PAGE_SIZE + 1)},
        {"limit": "ten"},
        {"status": "live"},
        {"rung": "*"},
        {"arm": "holdout "},
        {"reason": "a:b"},
        {"variant": "{x}"},
        {"q": "acct*"},
        {"after": "a]b"},
        {"after": "a", "before": "b"},
    ],
)
def test_hostile_values_are_refused_naming_the_parameter(params: dict[str, str]) -> None:
    with pytest.raises(InputError) as caught:
        OverviewQuery.from_params(params)
    assert caught.value.field in params
