from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.retry import Retry

from welcomemat import keys
from welcomemat.errors import StoredValueError, StoreError
from welcomemat.storage.redis_client import redis_from_url
from welcomemat.zones.store import PublishResult, ZoneSetChange, ZoneSetStore
from welcomemat.zones.zoneset import CitedFact, Rung, ZoneContent, ZoneSet, ZoneSetMode, ZoneSetStatus

TENANT = "acme"
CAMPAIGN = "q4-expansion"
ACCOUNT = "acct_dymaxa"


def make_zone_set(
    *,
    tenant: str = TENANT,
    campaign: str = CAMPAIGN,
    account_id: str = ACCOUNT,
    input_hash: str = "hash-0001",
    headline: str = "Sales teams like yours ramp faster",
    status: ZoneSetStatus = ZoneSetStatus.PUBLISHED,
) -> ZoneSet:
    return ZoneSet(
        tenant=tenant,
        campaign=campaign,
        account_id=account_id,
        input_hash=input_hash,
        guideline_version="g-2026.1",
        created_at=datetime(2026, 12, 1, 9, 30, tzinfo=UTC),
        valid_until=datetime(2027, 2, 24, tzinfo=UTC),
        status=status,
        mode=ZoneSetMode.DEGRADED,
        zones=(
            ZoneContent(
                zone_id="headline",
                text=f"Congrats on the Series A, Dymaxa: {headline}",
                rung=Rung.PERSONAL,
                reason="fact_funding",
                facts=(
                    CitedFact(
                        fact_id="f1",
                        source_url="https://dymaxa.com/press/series-a",
                        published_at=date(2026, 11, 26),
                    ),
                ),
            ),
            ZoneContent(
                zone_id="proof",
                text=headline,
                href="https://example.com/case/saas",
                cta_id="book-demo",
                rung=Rung.SEGMENT,
                reason="no_fresh_fact",
            ),
        ),
    )


@pytest.fixture
def store(redis_client: redis.Redis) -> ZoneSetStore:
    return ZoneSetStore(redis_client)


def all_keys(client: redis.Redis) -> list[str]:
    return sorted(k.decode() for k in client.scan_iter(count=1000))


def test_round_trip_is_equal(store: ZoneSetStore) -> None:
    zone_set = make_zone_set()
    result = store.publish(zone_set)
    assert result == PublishResult(
        version=1, changed=True, zone_set=zone_set.model_copy(update={"version": 1})
    )
    assert store.get(TENANT, CAMPAIGN, ACCOUNT) == result.zone_set
    assert store.get(TENANT, CAMPAIGN, "acct_other") is None


def test_same_input_hash_publishes_nothing_new(store: ZoneSetStore, redis_client: redis.Redis) -> None:
    first = store.publish(make_zone_set())
    again = store.publish(make_zone_set(headline="same inputs, other wording"))
    assert again == PublishResult(version=1, changed=False, zone_set=first.zone_set)
    assert redis_client.get(keys.zone_set_version_key(TENANT, CAMPAIGN, ACCOUNT)) == b"1"
    assert store.get_previous(TENANT, CAMPAIGN, ACCOUNT) is None


def test_new_input_hash_is_a_new_version_and_rollback_restores_the_old(store: ZoneSetStore) -> None:
    v1 = store.publish(make_zone_set(input_hash="hash-0001", headline="one")).zone_set
    v2 = store.publish(make_zone_set(input_hash="hash-0002", headline="two"))
    assert (v2.version, v2.changed) == (2, True)
    assert store.get(TENANT, CAMPAIGN, ACCOUNT) == v2.zone_set
    assert store.get_previous(TENANT, CAMPAIGN, ACCOUNT) == v1

    restored = store.rollback(TENANT, CAMPAIGN, ACCOUNT)
    assert restored is not None
    assert restored.version == 3  # versions never go back: caches compare them
    assert restored.model_copy(update={"version": 1}) == v1
    assert store.get(TENANT, CAMPAIGN, ACCOUNT) == restored
    # The previous slot is consumed: a second rollback does not re-serve version 2.
    assert store.rollback(TENANT, CAMPAIGN, ACCOUNT) is None
    assert store.get(TENANT, CAMPAIGN, ACCOUNT) == restored


def test_rollback_without_history_is_none(store: ZoneSetStore) -> None:
    assert store.rollback(TENANT, CAMPAIGN, ACCOUNT) is None
    store.publish(make_zone_set())
    assert store.rollback(TENANT, CAMPAIGN, ACCOUNT) is None


def test_status_change_is_a_new_version_with_the_same_content(store: ZoneSetStore) -> None:
    pending = store.publish(make_zone_set(status=ZoneSetStatus.PENDING_REVIEW)).zone_set
    stale = store.set_status(TENANT, CAMPAIGN, ACCOUNT, ZoneSetStatus.PUBLISHED, expected_version=7)
    assert stale == PublishResult(1, False, pending)

    approved = store.set_status(TENANT, CAMPAIGN, ACCOUNT, ZoneSetStatus.PUBLISHED, expected_version=1)
    assert approved is not None and (approved.version, approved.changed) == (2, True)
    assert approved.zone_set == pending.model_copy(update={"version": 2, "status": ZoneSetStatus.PUBLISHED})
    assert store.get(TENANT, CAMPAIGN, ACCOUNT) == approved.zone_set
    assert store.get_previous(TENANT, CAMPAIGN, ACCOUNT) is None  # same content: no rollback target

    unchanged = store.set_status(TENANT, CAMPAIGN, ACCOUNT, ZoneSetStatus.PUBLISHED)
    assert unchanged == PublishResult(2, False, approved.zone_set)
    assert store.set_status(TENANT, CAMPAIGN, "acct_none", ZoneSetStatus.REJECTED) is None


def test_same_hash_with_another_status_is_published(store: ZoneSetStore) -> None:
    store.publish(make_zone_set(status=ZoneSetStatus.PENDING_REVIEW))
    result = store.publish(make_zone_set(status=ZoneSetStatus.PUBLISHED))
    assert (result.version, result.changed) == (2, True)


def test_get_many_reads_in_one_call(store: ZoneSetStore) -> None:
    a = store.publish(make_zone_set(account_id="acct_a")).zone_set
    b = store.publish(make_zone_set(account_id="acct_b", input_hash="hash-bbbb")).zone_set
    assert store.get_many(TENANT, CAMPAIGN, ["acct_a", "acct_b", "acct_c", "acct_a"]) == {
        "acct_a": a,
        "acct_b": b,
        "acct_c": None,
    }
    assert store.get_many(TENANT, CAMPAIGN, []) == {}


def test_iter_account_ids_lists_current_sets_only(store: ZoneSetStore) -> None:
    ids = {f"acct_{i:04d}" for i in range(1200)}
    for account_id in ids:
        store.publish(make_zone_set(account_id=account_id))
    store.publish(make_zone_set(account_id="acct_0001", input_hash="hash-9999"))  # adds zs_prev, zs_ver
    store.publish(make_zone_set(campaign="other-campaign", account_id="acct_elsewhere"))
    listed = list(store.iter_account_ids(TENANT, CAMPAIGN))
    assert sorted(listed) == sorted(ids)
    with pytest.raises(ValueError):
        store.iter_account_ids(TENANT, "bad:campaign")


def test_changes_are_announced(store: ZoneSetStore) -> None:
    pubsub = store.subscribe_changes(TENANT, CAMPAIGN)
    try:
        store.publish(make_zone_set(input_hash="hash-0001"))
        store.publish(make_zone_set(input_hash="hash-0001"))  # unchanged: no message
        store.publish(make_zone_set(input_hash="hash-0002"))
        store.set_status(TENANT, CAMPAIGN, ACCOUNT, ZoneSetStatus.REJECTED)
        store.rollback(TENANT, CAMPAIGN, ACCOUNT)
        store.publish(make_zone_set(campaign="other-campaign"))  # another channel
        messages = [_next_message(pubsub) for _ in range(4)]
        assert pubsub.get_message(timeout=0.2) is None
    finally:
        pubsub.close()
    assert [m["channel"] for m in messages] == [b"wm:1:{acme:q4-expansion}:changes"] * 4
    assert [json.loads(m["data"]) for m in messages] == [
        {"tenant": TENANT, "campaign": CAMPAIGN, "account_id": ACCOUNT, "version": v} for v in (1, 2, 3, 4)
    ]
    assert ZoneSetChange.model_validate_json(messages[0]["data"]).version == 1


def _next_message(pubsub: redis.client.PubSub) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        message = pubsub.get_message(timeout=0.5)
        if message is not None:
            return dict(message)
    raise AssertionError("no change message within 5 s")


def test_concurrent_publishes_get_distinct_versions(redis_url: str, redis_client: redis.Redis) -> None:
    threads_n, per_thread = 8, 6
    results: list[PublishResult] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(threads_n)

    def worker(t: int) -> None:
        client = redis_from_url(redis_url, connect_timeout_s=5.0, socket_timeout_s=30.0)
        try:
            store = ZoneSetStore(client)
            start.wait()
            for i in range(per_thread):
                result = store.publish(make_zone_set(input_hash=f"hash-{t:02d}-{i:02d}", headline=f"{t}/{i}"))
                with lock:
                    results.append(result)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    total = threads_n * per_thread
    assert all(r.changed for r in results)
    assert sorted(r.version for r in results) == list(range(1, total + 1))

    store = ZoneSetStore(redis_client)
    current = store.get(TENANT, CAMPAIGN, ACCOUNT)
    previous = store.get_previous(TENANT, CAMPAIGN, ACCOUNT)
    by_version = {r.version: r.zone_set for r in results}
    assert current == by_version[total]
    assert previous == by_version[total - 1]
    assert redis_client.get(keys.zone_set_version_key(TENANT, CAMPAIGN, ACCOUNT)) == str(total).encode()


def test_every_written_key_has_a_ttl(store: ZoneSetStore, redis_client: redis.Redis) -> None:
    store.publish(make_zone_set(input_hash="hash-0001"))
    store.publish(make_zone_set(input_hash="hash-0002"))
    store.set_status(TENANT, CAMPAIGN, ACCOUNT, ZoneSetStatus.PENDING_REVIEW)
    store.publish(make_zone_set(input_hash="hash-0003"))
    store.rollback(TENANT, CAMPAIGN, ACCOUNT)
    store.publish(make_zone_set(input_hash="hash-0004"))
    written = all_keys(redis_client)
    assert written == sorted(
        [
            keys.zone_set_key(TENANT, CAMPAIGN, ACCOUNT),
            keys.previous_zone_set_key(TENANT, CAMPAIGN, ACCOUNT),
            keys.zone_set_version_key(TENANT, CAMPAIGN, ACCOUNT),
            # the campaign overview's index, written with the zone set
            keys.overview_ids_key(TENANT, CAMPAIGN),
            keys.overview_rows_key(TENANT, CAMPAIGN),
            keys.overview_tags_key(TENANT, CAMPAIGN),
            keys.overview_counts_key(TENANT, CAMPAIGN),
        ]
    )
    for key in written:
        assert redis_client.ttl(key) > 0, key
    assert redis_client.ttl(keys.zone_set_key(TENANT, CAMPAIGN, ACCOUNT)) > keys.ZONE_SET_TTL_S - 60
    assert (
        redis_client.ttl(keys.previous_zone_set_key(TENANT, CAMPAIGN, ACCOUNT))
        <= keys.PREVIOUS_ZONE_SET_TTL_S
    )


@pytest.mark.parametrize(
    "raw",
    [b"not json", b'{"tenant": "acme"}', b"\xff\xfe", json.dumps({"x": 1}).encode()],
)
def test_corrupt_value_names_the_key(store: ZoneSetStore, redis_client: redis.Redis, raw: bytes) -> None:
    key = keys.zone_set_key(TENANT, CAMPAIGN, ACCOUNT)
    redis_client.set(key, raw, ex=60)
    with pytest.raises(StoredValueError) as caught:
        store.get(TENANT, CAMPAIGN, ACCOUNT)
    assert caught.value.key == key
    assert key in str(caught.value)
    with pytest.raises(StoredValueError):
        store.get_many(TENANT, CAMPAIGN, [ACCOUNT])
    with pytest.raises(StoredValueError):
        store.publish(make_zone_set())


def test_value_under_another_accounts_key_is_refused(store: ZoneSetStore, redis_client: redis.Redis) -> None:
    other = make_zone_set(tenant="globex").model_dump_json().encode()
    key = keys.zone_set_key(TENANT, CAMPAIGN, ACCOUNT)
    redis_client.set(key, other, ex=60)
    with pytest.raises(StoredValueError, match="belongs to globex"):
        store.get(TENANT, CAMPAIGN, ACCOUNT)


def test_corrupt_counter_is_named(store: ZoneSetStore, redis_client: redis.Redis) -> None:
    key = keys.zone_set_version_key(TENANT, CAMPAIGN, ACCOUNT)
    redis_client.set(key, b"seven", ex=60)
    with pytest.raises(StoredValueError) as caught:
        store.publish(make_zone_set())
    assert caught.value.key == key


def test_lost_counter_does_not_reuse_versions(store: ZoneSetStore, redis_client: redis.Redis) -> None:
    store.publish(make_zone_set(input_hash="hash-0001"))
    store.publish(make_zone_set(input_hash="hash-0002"))
    redis_client.delete(keys.zone_set_version_key(TENANT, CAMPAIGN, ACCOUNT))
    assert store.publish(make_zone_set(input_hash="hash-0003")).version == 3


def test_unreachable_redis_is_a_store_error(tmp_path: Path) -> None:
    client = redis.Redis(unix_socket_path=str(tmp_path / "nothing.sock"), retry=Retry(NoBackoff(), 0))
    store = ZoneSetStore(client)
    calls: list[Callable[[], object]] = [
        lambda: store.get(TENANT, CAMPAIGN, ACCOUNT),
        lambda: store.get_many(TENANT, CAMPAIGN, [ACCOUNT]),
        lambda: store.publish(make_zone_set()),
        lambda: store.rollback(TENANT, CAMPAIGN, ACCOUNT),
        lambda: store.set_status(TENANT, CAMPAIGN, ACCOUNT, ZoneSetStatus.REJECTED),
        lambda: list(store.iter_account_ids(TENANT, CAMPAIGN)),
        lambda: store.subscribe_changes(TENANT, CAMPAIGN),
    ]
    for call in calls:
        with pytest.raises(StoreError) as caught:
            call()
        assert not isinstance(caught.value, StoredValueError)
        assert isinstance(caught.value.__cause__, redis.RedisError)


def test_client_decoding_responses_is_refused(redis_url: str) -> None:
    client = redis_from_url(redis_url, connect_timeout_s=5.0, socket_timeout_s=30.0, decode_responses=True)
    with pytest.raises(ValueError, match="decode_responses=False"):
        ZoneSetStore(client)
    client.close()


def test_tenants_never_share_keys(store: ZoneSetStore, redis_client: redis.Redis) -> None:
    store.publish(make_zone_set(tenant="acme"))
    store.publish(make_zone_set(tenant="acme", input_hash="hash-0002"))
    acme_keys = set(all_keys(redis_client))
    store.publish(make_zone_set(tenant="globex"))
    store.publish(make_zone_set(tenant="globex", input_hash="hash-0002"))
    globex_keys = set(all_keys(redis_client)) - acme_keys
    assert len(globex_keys) == 3 + 4 and not acme_keys & globex_keys  # + the overview index
    assert all(k.startswith("wm:1:{globex:") for k in globex_keys)
    assert store.get("acme", CAMPAIGN, ACCOUNT) != store.get("globex", CAMPAIGN, ACCOUNT)
    assert store.get("globex", CAMPAIGN, ACCOUNT) is not None
    assert list(store.iter_account_ids("acme", CAMPAIGN)) == [ACCOUNT]
    # Ids cannot hold ':', so no tenant/campaign pair can spell another's hash tag.
    assert keys.campaign_prefix("a.b", "c") != keys.campaign_prefix("a", "b.c")


def test_a_campaigns_keys_share_one_cluster_slot() -> None:
    campaign_keys = [
        builder(TENANT, CAMPAIGN, account_id)
        for builder in (keys.zone_set_key, keys.previous_zone_set_key, keys.zone_set_version_key)
        for account_id in ("acct_dymaxa", "acct_a", "acct_zzz_9")
    ]
    campaign_keys += [keys.journal_key(TENANT, CAMPAIGN), keys.changes_channel(TENANT, CAMPAIGN)]
    slots = {key_slot(k.encode()) for k in campaign_keys}
    assert slots == {key_slot(b"acme:q4-expansion")}
    tenant_keys = [keys.events_stream_key(TENANT), keys.account_record_key(TENANT, ACCOUNT)]
    assert {key_slot(k.encode()) for k in tenant_keys} == {key_slot(b"acme")}


def test_stored_json_is_the_model_dump(store: ZoneSetStore, redis_client: redis.Redis) -> None:
    published = store.publish(make_zone_set()).zone_set
    raw = redis_client.get(keys.zone_set_key(TENANT, CAMPAIGN, ACCOUNT))
    assert raw == published.model_dump_json().encode()


def test_publish_many_matches_publish_one_by_one(store: ZoneSetStore, redis_client: redis.Redis) -> None:
    ids = [f"acct_{n}" for n in range(6)]
    store.publish(make_zone_set(account_id="acct_0", input_hash="old-0000"))  # will move to previous
    store.publish(make_zone_set(account_id="acct_1", input_hash="same-0001"))  # unchanged
    pubsub = store.subscribe_changes(TENANT, CAMPAIGN)
    try:
        batch = [
            make_zone_set(account_id=a, input_hash="same-0001" if a == "acct_1" else f"new-{a}") for a in ids
        ]
        results = store.publish_many(batch)
        assert [(r.version, r.changed) for r in results] == [(2, True), (1, False)] + [(1, True)] * 4
        for account_id, result in zip(ids, results, strict=True):
            stored = store.get(TENANT, CAMPAIGN, account_id)
            assert stored == result.zone_set and stored.version == result.version
        previous = store.get_previous(TENANT, CAMPAIGN, "acct_0")
        assert previous is not None and previous.input_hash == "old-0000"
        messages = []
        while (m := pubsub.get_message(timeout=0.5)) is not None:
            messages.append(json.loads(m["data"]))
        assert sorted((m["account_id"], m["version"]) for m in messages) == sorted(
            [("acct_0", 2)] + [(a, 1) for a in ids[2:]]
        )
        for account_id in ids:
            for key in (
                keys.zone_set_key(TENANT, CAMPAIGN, account_id),
                keys.zone_set_version_key(TENANT, CAMPAIGN, account_id),
            ):
                assert redis_client.ttl(key) > 0
    finally:
        pubsub.close()


def test_publish_many_falls_back_when_an_account_changed_meanwhile(store: ZoneSetStore) -> None:
    seen = store.get_many(TENANT, CAMPAIGN, [ACCOUNT])  # read: nothing published yet
    store.publish(make_zone_set(input_hash="someone-else"))  # another writer gets there first
    (result,) = store.publish_many([make_zone_set(input_hash="mine-0001")], current=seen)
    assert result.changed and result.version == 2
    previous = store.get_previous(TENANT, CAMPAIGN, ACCOUNT)
    assert previous is not None and previous.input_hash == "someone-else"


def test_publish_many_over_a_corrupt_value_raises_like_publish(
    store: ZoneSetStore, redis_client: redis.Redis
) -> None:
    redis_client.set(keys.zone_set_key(TENANT, CAMPAIGN, ACCOUNT), b"{not json")
    with pytest.raises(StoredValueError):
        store.publish_many([make_zone_set()], current={ACCOUNT: None})
