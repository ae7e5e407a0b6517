"""Distributed runs: `precompute --enqueue`, `worker`, `precompute-status`, against a real Redis.

The subprocess tests run the CLI as an operator does; the in-process ones drive the
queue and the worker directly where a scenario needs exact control of who holds what.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import redis

from precompute.hashing import account_input_hash
from precompute.policy import build_policy
from precompute.providers.base import GenerationRequest, GenerationResult
from precompute.providers.offline import OfflineComposer
from precompute.published_config import load_campaign_config
from precompute.queue import RunRecord, WorkEntry, enqueue_run, read_progress
from precompute.run import PrecomputeRun
from precompute.worker import Worker, WorkerOptions
from tests.corpora import REPO_ROOT
from welcomemat import keys
from welcomemat.campaign.contract import load_campaign
from welcomemat.records.accounts import read_accounts
from welcomemat.records.audit import read_entries
from welcomemat.zones.contract import load_zone_contracts
from welcomemat.zones.store import ZoneSetStore

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
TENANT, CAMPAIGN = "acme", "q4-pipeline"
REF = f"{TENANT}/{CAMPAIGN}"
GROUP = keys.WORK_CONSUMER_GROUP


def make_accounts(path: Path, count: int) -> Path:
    """The example accounts, dated from today so their signals are fresh whenever tests run."""
    spec = importlib.util.spec_from_file_location(
        "make_accounts", REPO_ROOT / "examples" / "make_accounts.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write(path, date.today(), count)
    return path


def env_for(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(tmp_path / "home")}


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [WELCOMEMAT, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def enqueue(accounts: Path, env: dict[str, str]) -> dict[str, Any]:
    done = cli("precompute", "examples/campaign.yaml", str(accounts), "--enqueue", "--json", env=env)
    assert done.returncode == 0, done.stderr
    record: dict[str, Any] = json.loads(done.stdout)
    return record


def start_worker(name: str, env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [WELCOMEMAT, "worker", "--campaign", REF, "--name", name, "--block-ms", "100", *extra],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def pending_of(client: redis.Redis, consumer: str) -> int:
    stream = keys.work_stream_key(TENANT, CAMPAIGN)
    consumers: list[dict[str, Any]] = client.xinfo_consumers(stream, GROUP)  # type: ignore[assignment]
    return sum(int(c["pending"]) for c in consumers if c["name"].decode() == consumer)


def run_hash(client: redis.Redis, run_id: str) -> dict[str, str]:
    raw: dict[bytes, bytes] = client.hgetall(keys.run_key(TENANT, CAMPAIGN, run_id))  # type: ignore[assignment]
    return {k.decode(): v.decode() for k, v in raw.items()}


def counter(fields: dict[str, str], name: str) -> int:
    """A run counter (absent until something adds to it)."""
    return int(fields.get(name, 0))


def journal_states(client: redis.Redis) -> dict[str, dict[str, Any]]:
    raw: dict[bytes, bytes] = client.hgetall(keys.journal_key(TENANT, CAMPAIGN))  # type: ignore[assignment]
    return {k.decode(): json.loads(v) for k, v in raw.items()}


def assert_drained(client: redis.Redis) -> None:
    stream = keys.work_stream_key(TENANT, CAMPAIGN)
    assert client.xpending(stream, GROUP)["pending"] == 0  # type: ignore[index]
    assert client.xlen(stream) == 0, "acknowledged entries are deleted"


def assert_every_key_expires(client: redis.Redis) -> None:
    for key in client.scan_iter(match="wm:*", count=1000):
        assert client.ttl(key) > 0, f"{key!r} has no TTL"


# -- two workers, one killed ---------------------------------------------------------------------


def test_two_workers_one_killed_mid_run_every_account_published_once(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    count = 1200
    env = env_for(redis_url, tmp_path)
    record = enqueue(make_accounts(tmp_path / "accounts.jsonl", count), env)
    run_id = record["run_id"]
    assert record["total"] == count and record["entries"] == count // 50
    assert run_hash(redis_client, run_id)["status"] == "queued"

    claim = ("--once", "--claim-idle-ms", "500")
    victim = start_worker("victim", env, *claim)
    survivor: subprocess.Popen[str] | None = None
    try:
        # The survivor joins once the victim is under way, so that both really share the run.
        deadline = time.monotonic() + 60
        while counter(run_hash(redis_client, run_id), "worker:victim") < 50:
            assert time.monotonic() < deadline and victim.poll() is None, "the victim did not start"
            time.sleep(0.005)
        survivor = start_worker("survivor", env, *claim)
        # Freeze the victim once it has acknowledged a few entries and holds one in hand, and kill
        # it only while frozen: what it holds is then certain, not a race.
        deadline = time.monotonic() + 60
        held = 0
        while time.monotonic() < deadline and victim.poll() is None:
            if counter(run_hash(redis_client, run_id), "worker:victim") >= 100:
                victim.send_signal(signal.SIGSTOP)
                held = pending_of(redis_client, "victim")
                if held:
                    victim.send_signal(signal.SIGKILL)
                    break
                victim.send_signal(signal.SIGCONT)
            time.sleep(0.005)
        victim.communicate(timeout=10)
        at_kill = run_hash(redis_client, run_id)
        assert held == 1, "the victim died holding an unacknowledged entry"
        done = counter(at_kill, "processed")
        assert 100 <= done < count, f"the kill landed mid-run ({done} of {count})"

        _, errors = survivor.communicate(timeout=120)
        assert survivor.returncode == 0, errors
    finally:
        for proc in (victim, survivor):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()
    claimed = int(re.search(r"(\d+) claimed back", errors).group(1))  # type: ignore[union-attr]
    assert claimed >= 1, errors
    assert pending_of(redis_client, "victim") == 0

    final = run_hash(redis_client, run_id)
    assert final["status"] == "complete" and "finished_at" in final
    assert counter(final, "processed") == count == counter(final, "total")
    # The victim may have published its last entry before dying: the survivor then finds those
    # zone sets current and counts them unchanged. Every account is counted once either way.
    assert counter(final, "published") + counter(final, "unchanged") == count
    assert counter(final, "worker:victim") + counter(final, "worker:survivor") == count
    assert "failed" not in final and "dead_lettered" not in final
    assert_drained(redis_client)

    store = ZoneSetStore(redis_client)
    ids = sorted(store.iter_account_ids(TENANT, CAMPAIGN))
    assert len(ids) == count
    versions = {zs.version for zs in store.get_many(TENANT, CAMPAIGN, ids).values() if zs}
    assert versions == {1}, "an account was published twice"
    assert {j["state"] for j in journal_states(redis_client).values()} == {"published"}
    assert not redis_client.hexists(keys.active_runs_key(), f"{REF}/{run_id}")
    assert redis_client.zcard(keys.review_sample_key(TENANT, CAMPAIGN)) > 0
    assert json.loads(redis_client.get(keys.run_report_key(TENANT, CAMPAIGN)))["accounts"] == count  # type: ignore[arg-type]
    assert_every_key_expires(redis_client)

    status = cli("precompute-status", REF, env=env)
    assert status.returncode == 0, status.stderr
    assert f"complete, {count}/{count} accounts processed" in status.stdout
    assert re.search(r"QA verdict: GO", status.stdout), status.stdout
    by_json = json.loads(cli("precompute-status", CAMPAIGN, "--run", run_id, "--json", env=env).stdout)
    assert by_json["report"]["accounts"] == count and by_json["report"]["verdict"] in ("GO", "GO WITH FIXES")


# -- dead letters --------------------------------------------------------------------------------


def test_poisoned_entry_is_dead_lettered_and_the_rest_unaffected(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    env = env_for(redis_url, tmp_path)
    record = enqueue(make_accounts(tmp_path / "accounts.jsonl", 120), env)
    run_id = record["run_id"]
    stream = keys.work_stream_key(TENANT, CAMPAIGN)
    entries: list[tuple[bytes, dict[bytes, bytes]]] = redis_client.xrange(stream)  # type: ignore[assignment]
    assert len(entries) == 3
    first_id, first = entries[0]
    poisoned_ids = first[b"ids"].decode().split(",")
    # The same run, sequence and ids, but records that are not JSON: it fails on every delivery.
    redis_client.xdel(stream, first_id)
    redis_client.xadd(stream, {**first, b"accounts": b"[{not json"})  # type: ignore[dict-item]

    started = time.monotonic()
    worker = cli(
        "worker", "--campaign", CAMPAIGN, "--once", "--claim-idle-ms", "200", "--max-deliveries", "3", env=env
    )
    assert worker.returncode == 0, worker.stderr
    assert time.monotonic() - started < 30
    assert "1 dead-lettered" in worker.stderr and "delivery 3 of 3" in worker.stderr
    assert re.search(r"^worker \S+: entry \S+ of .+ \(delivery 3 of 3\)", worker.stderr, flags=re.MULTILINE)

    dead: list[tuple[bytes, dict[bytes, bytes]]] = redis_client.xrange(  # type: ignore[assignment]
        keys.dead_letter_stream_key(TENANT, CAMPAIGN)
    )
    assert len(dead) == 1
    fields = dead[0][1]
    assert fields[b"deliveries"] == b"3" and b"does not decode" in fields[b"error"]
    assert fields[b"ids"] == first[b"ids"] and fields[b"run"] == run_id.encode()

    journal = journal_states(redis_client)
    assert {journal[i]["state"] for i in poisoned_ids} == {"failed"}
    assert all("dead-lettered after 3 deliveries" in journal[i]["reason"] for i in poisoned_ids)
    rest = set(journal) - set(poisoned_ids)
    assert len(rest) == 70 and {journal[i]["state"] for i in rest} == {"published"}

    store = ZoneSetStore(redis_client)
    assert set(store.iter_account_ids(TENANT, CAMPAIGN)) == rest
    final = run_hash(redis_client, run_id)
    assert final["status"] == "complete"
    assert (final["processed"], final["published"], final["failed"], final["dead_lettered"]) == (
        "120",
        "70",
        "50",
        "1",
    )
    assert_drained(redis_client)
    assert_every_key_expires(redis_client)

    status = cli("precompute-status", REF, env=env)
    assert status.returncode == 1, "failed accounts make the run's exit status 1"
    assert "1 dead-lettered" in status.stdout and "failed 50" in status.stdout


def test_sigterm_finishes_and_exits_cleanly(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    env = env_for(redis_url, tmp_path)
    worker = start_worker("idle", env)
    try:
        deadline = time.monotonic() + 30
        while not redis_client.exists(keys.work_stream_key(TENANT, CAMPAIGN)):  # started: group created
            assert time.monotonic() < deadline and worker.poll() is None, "the worker did not start"
            time.sleep(0.02)
        worker.send_signal(signal.SIGTERM)
        _, errors = worker.communicate(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.communicate()
    assert worker.returncode == 0, errors
    assert "stopped; 0 entries" in errors
    assert redis_client.ttl(keys.work_stream_key(TENANT, CAMPAIGN)) > 0


def test_status_of_a_campaign_without_runs_is_a_clear_error(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    done = cli("precompute-status", REF, env=env_for(redis_url, tmp_path))
    assert done.returncode == 2
    assert "no enqueued run of acme/q4-pipeline" in done.stderr


# -- in process: idempotence, round trips --------------------------------------------------------


@pytest.fixture
def local_run(redis_client: redis.Redis) -> PrecomputeRun:
    zones = dict(load_zone_contracts(REPO_ROOT / "zones"))
    campaign = load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones)
    return PrecomputeRun(
        client=redis_client,
        campaign=campaign,
        zones=zones,
        policy=build_policy(campaign, None),
        provider=OfflineComposer(),
    )


def enqueue_local(run: PrecomputeRun, tmp_path: Path, *, accounts: int, concurrency: int) -> RunRecord:
    """`accounts` generated accounts enqueued as one run, for workers of `concurrency` threads."""
    read = read_accounts(make_accounts(tmp_path / "accounts.jsonl", accounts))
    return enqueue_run(
        run,
        read.accounts,
        accounts_file="accounts.jsonl",
        rows_read=read.lines_read,
        malformed=[],
        provider_options={"concurrency": concurrency},
    )


def test_published_config_and_entries_rebuild_the_same_inputs(
    tmp_path: Path, redis_client: redis.Redis, local_run: PrecomputeRun
) -> None:
    accounts = read_accounts(make_accounts(tmp_path / "accounts.jsonl", 60)).accounts
    local_run.prepare(accounts)
    loaded = load_campaign_config(redis_client, TENANT, CAMPAIGN)
    assert loaded is not None
    campaign, zones, policy = loaded
    assert policy == local_run.policy
    rebuilt = PrecomputeRun(
        client=redis_client, campaign=campaign, zones=zones, policy=policy, provider=OfflineComposer()
    )
    assert rebuilt.fingerprint == local_run.fingerprint

    entry = WorkEntry(
        run_id="r1", seq=0, account_ids=tuple(a.account_id for a in accounts), accounts=tuple(accounts)
    )
    fields = {k.encode(): v.encode() for k, v in entry.to_fields().items()}
    again = WorkEntry.from_fields("stream", "1-0", fields)
    for before, after in zip(accounts, again.accounts, strict=True):
        assert account_input_hash(local_run.fingerprint, before) == account_input_hash(
            local_run.fingerprint, after
        )


def test_processing_the_same_entry_twice_changes_nothing(
    tmp_path: Path, redis_client: redis.Redis, local_run: PrecomputeRun
) -> None:
    record = enqueue_local(local_run, tmp_path, accounts=100, concurrency=1)
    stream = keys.work_stream_key(TENANT, CAMPAIGN)
    # A slow worker takes the first entry and stalls; the other claims it back and finishes the run.
    reply: Any = redis_client.xreadgroup(GROUP, "slow", {stream: ">"}, count=1)
    entry_id, fields = reply[0][1][0]

    def factory(name: str, options: object) -> OfflineComposer:
        return OfflineComposer()

    fast = Worker(
        redis_client,
        factory,
        WorkerOptions(name="fast", campaign=(TENANT, CAMPAIGN), block_ms=20, claim_idle_ms=50, once=True),
        log=lambda line: None,
    )
    stats = fast.run()
    assert stats.claimed == 1 and stats.entries == record.entries and stats.runs_completed == 1

    def snapshot() -> dict[bytes, bytes | None]:
        names = sorted(redis_client.scan_iter(match=f"{keys.campaign_prefix(TENANT, CAMPAIGN)}:zs*"))
        return dict(zip(names, redis_client.mget(names), strict=True))  # type: ignore[arg-type]

    zone_sets, counters = snapshot(), run_hash(redis_client, record.run_id)
    assert len(zone_sets) == 2 * 100  # current + version counter per account, no previous versions

    slow = Worker(
        redis_client, factory, WorkerOptions(name="slow", campaign=(TENANT, CAMPAIGN)), log=lambda line: None
    )
    slow.handle(TENANT, CAMPAIGN, entry_id.decode(), fields)  # the stalled worker wakes up and finishes
    assert snapshot() == zone_sets, "a second processing wrote something"
    assert run_hash(redis_client, record.run_id) == counters, "a second processing was counted"
    assert slow.stats.entries == 0 and slow.stats.failed_attempts == 0

    # The same accounts through the run's code path again: all unchanged, nothing published.
    again = local_run.new_report()
    local_run.process(WorkEntry.from_fields(stream, entry_id.decode(), fields).accounts, again)
    assert (again.published, again.unchanged, again.accounts) == (0, 50, 50)
    progress = read_progress(redis_client, TENANT, CAMPAIGN, record.run_id)
    assert progress is not None and progress.complete
    assert progress.to_report().published == 100 and progress.pending_entries == 0
    # One audit entry per version published, by the worker that published it: none for the repeats.
    published = read_entries(redis_client, TENANT)
    assert len(published) == 100 and {(e.action.value, e.actor) for e in published} == {
        ("publish", "worker:fast")
    }


def test_a_concurrent_worker_reuses_its_threads_and_leaves_none_behind(
    tmp_path: Path, redis_client: redis.Redis, local_run: PrecomputeRun
) -> None:
    record = enqueue_local(local_run, tmp_path, accounts=160, concurrency=4)
    assert record.entries > 1
    seen: set[threading.Thread] = set()  # the objects: an ident can be reused by a new thread

    class Recording(OfflineComposer):
        def generate(self, request: GenerationRequest) -> GenerationResult:
            seen.add(threading.current_thread())
            return super().generate(request)

    worker = Worker(
        redis_client,
        lambda name, options: Recording(),
        WorkerOptions(name="w", campaign=(TENANT, CAMPAIGN), block_ms=20, once=True),
        log=lambda line: None,
    )
    stats = worker.run()

    assert stats.entries == record.entries and stats.runs_completed == 1
    progress = read_progress(redis_client, TENANT, CAMPAIGN, record.run_id)
    assert progress is not None and progress.to_report().published == 160
    # Every entry of the run was assembled on the same few threads, not on new ones per entry,
    assert 1 < len(seen) <= 4
    # and once the worker returns, none of them is left running.
    assert not [t for t in threading.enumerate() if t.name.startswith("assemble")]
