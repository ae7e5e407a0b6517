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
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
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
from tests.server.conftest import BASE_URL, link_token, renderer_app, renderer_settings
from welcomemat import keys
from welcomemat.records import iter_account_records
from welcomemat.redis_client import redis_from_url
from welcomemat.store import ZoneSetStore
from welcomemat.zoneset import ZoneSetStatus

ACCOUNTS = 300
PROMOTION_TIMEOUT_S = 30.0


def _rung(page: str) -> str:
    found = re.search(r'data-wm-rung="([a-z]+)"', page)
    assert found is not None
    return found.group(1)


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "cluster")
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


def test_a_master_killed_mid_run_loses_nothing_and_pages_never_fail(
    own_cluster: LocalCluster, tmp_path: Path
) -> None:
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

        _, errors = worker.communicate(timeout=120)
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
