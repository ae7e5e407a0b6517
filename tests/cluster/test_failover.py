"""A master of the cluster stopped mid-run: its replica takes over, and nothing acknowledged is lost.

A cluster of its own (the session's stays whole for the other tests). One worker is part-way
through an enqueued run and the renderer is serving link visits when the master of the
campaign's slot is killed (SIGKILL), then the master of the tenant's slot (events, records)
if that is another one. Every zone set published before the kill is still current after it,
the run completes with every account published, every page answered below 500 throughout,
personal pages come back, and every page view is folded into the account records once.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import redis
from starlette.testclient import TestClient

from server.redis_guard import renderer_redis_client
from tests.cluster.local_cluster import LocalCluster
from tests.cluster.test_cluster_flows import cluster_env, wait_for_count
from tests.precompute.test_worker import (
    CAMPAIGN,
    TENANT,
    cli,
    counter,
    enqueue,
    make_accounts,
    run_hash,
    start_worker,
)
from tests.server.conftest import (
    BASE_URL,
    example_inputs,
    link_token,
    make_zone_set,
    publish_config,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from welcomemat import keys
from welcomemat.records.account_records import iter_account_records
from welcomemat.storage.redis_client import redis_from_url
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import ZoneSetStatus

ACCOUNTS = 300
PROMOTION_TIMEOUT_S = 30.0
WORKER_FINISH_TIMEOUT_S = 180  # beyond the worker's own outage budget (120 s), so that its exit says why
PERSONAL_TEXT = "Congrats on the Series A, Dymaxa"


def _rung(page: str) -> str:
    found = re.search(r'data-wm-rung="([a-z]+)"', page)
    assert found is not None
    return found.group(1)


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    """A cluster of the test's own, its ports chosen, not started yet."""
    cluster = LocalCluster(tmp_path / "cluster")
    cluster.allocate()
    try:
        yield cluster
    finally:
        cluster.close()


def test_a_master_killed_mid_run_loses_nothing_and_pages_never_fail(
    own_cluster: LocalCluster, tmp_path: Path
) -> None:
    own_cluster.start()
    client = redis_from_url(own_cluster.url, connect_timeout_s=2.0, socket_timeout_s=5.0)
    env = cluster_env(own_cluster, tmp_path)
    run_id = enqueue(make_accounts(tmp_path / "accounts.jsonl", ACCOUNTS), env)["run_id"]
    worker = start_worker("w1", env, "--once", "--claim-idle-ms", "500")
    views: dict[str, int] = {}
    statuses: list[int] = []
    try:
        wait_for_count(client, run_id, worker, "w1")
        store = ZoneSetStore(client)
        before = {
            a: z
            for a, z in store.get_many(
                TENANT, CAMPAIGN, list(store.iter_account_ids(TENANT, CAMPAIGN))
            ).items()
            if z
        }
        assert before, "some zone sets were published before the kill"
        shown = sorted(a for a, z in before.items() if z.status is ZoneSetStatus.PUBLISHED)[:5]
        tokens = {a: link_token(a) for a in shown}

        app = renderer_app(renderer_settings(), redis_client=renderer_redis_client(own_cluster.url))
        with TestClient(app, base_url=BASE_URL, client=("198.51.100.9", 40000)) as http:

            def visit_all() -> list[str]:
                texts = []
                for account, token in tokens.items():
                    page = http.get(f"/c/{CAMPAIGN}", params={"wm": token})
                    statuses.append(page.status_code)
                    assert page.status_code < 500, page.text
                    views[account] = views.get(account, 0) + 1
                    texts.append(page.text)
                return texts

            served_before = [_rung(t) for t in visit_all()]
            at_kill = counter(run_hash(client, run_id), "processed")
            stopped = (keys.zone_set_key(TENANT, CAMPAIGN, shown[0]), keys.events_stream_key(TENANT))
            assert own_cluster.master_of(stopped[0]) != own_cluster.master_of(stopped[1])
            for key in stopped:
                master = own_cluster.master_of(key)
                own_cluster.stop_node(master)
                deadline = time.monotonic() + PROMOTION_TIMEOUT_S
                while True:  # traffic all through the failover
                    visit_all()
                    try:
                        own_cluster.wait_promoted(key, 0.0)
                        break
                    except RuntimeError:
                        assert time.monotonic() < deadline, "no replica took over"
            # The same pages as before come back once the renderer's breaker lets Redis in again.
            deadline = time.monotonic() + 30
            while [_rung(t) for t in visit_all()] != served_before:
                assert time.monotonic() < deadline, "the renderer did not come back to its pages"
                time.sleep(0.2)

        try:
            _, errors = worker.communicate(timeout=WORKER_FINISH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            worker.kill()
            _, errors = worker.communicate()
            pytest.fail(
                f"the worker did not finish within {WORKER_FINISH_TIMEOUT_S} s of the failovers:\n{errors}"
            )
        assert worker.returncode == 0, errors
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.communicate()

    assert set(statuses) <= {200}, statuses
    after = store.get_many(TENANT, CAMPAIGN, list(before))
    for account, zone_set in before.items():
        kept = after[account]
        assert kept is not None and kept.version >= zone_set.version, f"{account}'s zone set was lost"
    final = run_hash(client, run_id)
    assert final["status"] == "complete" and counter(final, "processed") == ACCOUNTS
    assert len(set(store.iter_account_ids(TENANT, CAMPAIGN))) == ACCOUNTS
    assert at_kill < ACCOUNTS, "the master was stopped mid-run"

    synced = cli("sync", "--once", env=env)
    assert synced.returncode == 0, synced.stderr
    records = {r.account_id: r for r in iter_account_records(client, TENANT)}
    folded = {a: records[a].engagement[CAMPAIGN].views for a in views}
    assert folded == views, "every page view folded once"


def test_a_dead_default_node_does_not_stop_the_commands_whose_keys_redis_parses(
    own_cluster: LocalCluster,
) -> None:
    """redis-py asks its default node which arguments of XREAD or XREADGROUP are keys. When that
    node has died and a replica took over, a read of a stream on a live master still succeeds
    within a few tries (without the fix, every try failed for the life of the process)."""
    own_cluster.start()
    client = cast(Any, redis_from_url(own_cluster.url, connect_timeout_s=2.0, socket_timeout_s=5.0))
    default_port = client.get_default_node().port
    dead = next(node for node in own_cluster.masters() if node.port == default_port)
    names = [f"stream-{n}" for n in range(200)]
    live_key = next(k for k in names if own_cluster.master_of(k).port != default_port)
    dead_key = next(k for k in names if own_cluster.master_of(k).port == default_port)
    client.xadd(live_key, {"n": "1"})
    own_cluster.wait_replicas_synced(PROMOTION_TIMEOUT_S)
    own_cluster.stop_node(dead)
    own_cluster.wait_promoted(dead_key, PROMOTION_TIMEOUT_S)
    read = None
    for _ in range(3):
        try:
            read = client.xread({live_key: "0"})
            break
        except redis.ConnectionError:
            continue
    assert read and read[0][1][0][1] == {b"n": b"1"}, "XREAD of a live master's stream failed on every try"
    assert client.get_default_node().port != default_port
    client.close()


def test_a_renderer_started_before_its_cluster_serves_the_plain_page_then_the_personal_one(
    own_cluster: LocalCluster,
) -> None:
    """No node answers when the renderer starts: it starts anyway and answers 200 (the plain
    page) and readiness 503, as with one server down; once the cluster is up and the campaign
    published, the same renderer serves the personal page."""
    tuning = tuning_for_tests(breaker_reset_s=0.3, watcher_backoff_max_s=0.5, campaign_index_ttl_s=0.2)
    app = renderer_app(
        renderer_settings(), redis_client=renderer_redis_client(own_cluster.url), tuning=tuning
    )
    params = {"wm": link_token()}
    with TestClient(app, base_url=BASE_URL, client=("198.51.100.9", 40000)) as http:
        down = http.get(f"/c/{CAMPAIGN}", params=params)
        assert down.status_code == 200 and 'data-wm-rung="personal"' not in down.text
        assert http.get("/readyz").status_code == 503

        own_cluster.start()
        writer = redis_from_url(own_cluster.url, connect_timeout_s=2.0, socket_timeout_s=5.0)
        campaign, zone_contracts = example_inputs()
        publish_config(writer, campaign, zone_contracts)
        ZoneSetStore(writer).publish(make_zone_set(texts={"hero_headline": PERSONAL_TEXT}))
        deadline = time.monotonic() + 20
        while PERSONAL_TEXT not in (page := http.get(f"/c/{CAMPAIGN}", params=params)).text:
            assert page.status_code == 200
            assert time.monotonic() < deadline, "the renderer never reached the cluster"
            time.sleep(0.1)
        assert http.get("/readyz").status_code == 200
