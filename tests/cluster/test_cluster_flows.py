"""Every process of a deployment against a real Redis Cluster, through `REDIS_URL`'s cluster form.

Precompute enqueued and drained by two worker processes, the renderer (pages and the zones
API on a cluster client), the engagement sync, the sequencer export and the lift report: the
same commands an operator runs, on keys spread over three masters.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import redis
from starlette.testclient import TestClient

from precompute.queue import WORK_CHUNK_SIZE
from server.redis_guard import renderer_redis_client
from tests.cluster.local_cluster import LocalCluster
from tests.event_stream import event_count
from tests.outbound.test_export import run
from tests.precompute.test_worker import (
    CAMPAIGN,
    REF,
    TENANT,
    assert_drained,
    cli,
    counter,
    enqueue,
    env_for,
    make_accounts,
    run_hash,
    start_worker,
)
from tests.server.conftest import BASE_URL, PUBLIC_URL, SECRET, renderer_app, renderer_settings
from welcomemat import keys
from welcomemat.records.account_records import iter_account_records
from welcomemat.zones.store import ZoneSetStore

ACCOUNTS = 200
ZONE_COLUMNS = ["hero_headline", "hero_support", "proof", "cta", "continuation_headline"]


def cluster_env(cluster: LocalCluster, tmp_path: Path) -> dict[str, str]:
    return {
        **env_for(cluster.url, tmp_path),
        "WELCOMEMAT_SECRET": SECRET,
        "WELCOMEMAT_PUBLIC_URL": PUBLIC_URL,
    }


def wait_for_count(client: redis.Redis, run_id: str, worker: subprocess.Popen[str], name: str) -> None:
    deadline = time.monotonic() + 60
    while counter(run_hash(client, run_id), f"worker:{name}") < WORK_CHUNK_SIZE:
        assert time.monotonic() < deadline and worker.poll() is None, f"{name} did not get under way"
        time.sleep(0.005)


def two_workers_share(client: redis.Redis, run_id: str, env: dict[str, str]) -> None:
    """Two `welcomemat worker --once` processes drain the run, each at least one entry: the
    first is paused once it has counted one, until the second has counted one too."""
    first = start_worker("w1", env, "--once")
    second: subprocess.Popen[str] | None = None
    try:
        wait_for_count(client, run_id, first, "w1")
        first.send_signal(signal.SIGSTOP)
        try:
            second = start_worker("w2", env, "--once")
            wait_for_count(client, run_id, second, "w2")
        finally:
            first.send_signal(signal.SIGCONT)
        for worker in (first, second):
            _, errors = worker.communicate(timeout=120)
            assert worker.returncode == 0, errors
    finally:
        for worker in (first, second):
            if worker is not None and worker.poll() is None:
                worker.kill()
                worker.communicate()


def test_precompute_renderer_sync_export_and_lift_run_on_the_cluster(
    redis_cluster: LocalCluster, cluster_client: redis.Redis, tmp_path: Path
) -> None:
    env = cluster_env(redis_cluster, tmp_path)
    record = enqueue(make_accounts(tmp_path / "accounts.jsonl", ACCOUNTS), env)
    run_id = record["run_id"]
    two_workers_share(cluster_client, run_id, env)

    final = run_hash(cluster_client, run_id)
    assert final["status"] == "complete"
    assert counter(final, "processed") == ACCOUNTS == counter(final, "published")
    assert counter(final, "worker:w1") + counter(final, "worker:w2") == ACCOUNTS
    assert "failed" not in final and "dead_lettered" not in final
    assert_drained(cluster_client)
    status = cli("precompute-status", REF, env=env)
    assert status.returncode == 0 and f"complete, {ACCOUNTS}/{ACCOUNTS} accounts processed" in status.stdout

    # SCAN reads every master; the campaign's, the tenant's and the id owner's keys are on two or more.
    store = ZoneSetStore(cluster_client)
    assert len(set(store.iter_account_ids(TENANT, CAMPAIGN))) == ACCOUNTS
    masters = {
        redis_cluster.master_of(k).port
        for k in (
            keys.campaign_prefix(TENANT, CAMPAIGN),
            keys.tenant_prefix(TENANT),
            keys.campaign_owner_key(CAMPAIGN),
        )
    }
    assert len(masters) > 1, "the test data should span masters"

    exported = run("export", CAMPAIGN, "--format", "jsonl", redis_url=redis_cluster.url, home=tmp_path)
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    assert len(rows) > 100 and {row["arm"] for row in rows} == {"personal", "holdout"}
    assert {row["rung"] for row in rows} >= {"personal", "segment"}

    # The lift report's population is the published accounts; the export also lists those
    # waiting for review (their fallback rows, `status` pending_review).
    published_rows = [row for row in rows if row["status"] == "ok"]
    visited = published_rows[:30]
    app = renderer_app(renderer_settings(), redis_client=renderer_redis_client(redis_cluster.url))
    with TestClient(app, base_url=BASE_URL, client=("198.51.100.9", 40000)) as client:
        for row in visited:
            token = parse_qs(urlsplit(row["page_url"]).query)["wm"][0]
            served = client.get("/v1/zones", params={"campaign": CAMPAIGN, "wm": token})
            assert served.status_code == 200
            zones = served.json()["zones"]
            assert {z: zones[z]["text"] for z in ZONE_COLUMNS} == {z: row[z] for z in ZONE_COLUMNS}
            page = client.get(f"/c/{CAMPAIGN}", params={"wm": token})
            assert page.status_code == 200
            rungs = {z["rung"] for z in zones.values()}
            best = next(r for r in ("personal", "segment", "default") if r in rungs)
            assert f'data-wm-rung="{best}"' in page.text
    deadline = time.monotonic() + 10
    while event_count(cluster_client, TENANT) < len(visited) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert event_count(cluster_client, TENANT) >= len(visited)

    synced = cli("sync", "--once", env=env)
    assert synced.returncode == 0, synced.stderr
    records = {r.account_id: r for r in iter_account_records(cluster_client, TENANT)}
    views = Counter(row["account_id"] for row in visited)
    for account, count in views.items():
        assert records[account].engagement[CAMPAIGN].views == count, "each page view folded once"

    lift = run("report", "lift", CAMPAIGN, "--json", redis_url=redis_cluster.url, home=tmp_path)
    assert lift.returncode == 0, lift.stderr
    arms = json.loads(lift.stdout)["arms"]
    assert sum(a["reached"] for a in arms) == len(views)
    assert sum(a["visits"] for a in arms) == len(visited)
    assert sum(a["accounts"] for a in arms) == len({row["account_id"] for row in published_rows})
