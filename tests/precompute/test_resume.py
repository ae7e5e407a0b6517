"""A precompute run killed mid-way, then `--resume`: every account published, none twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis

from tests.corpora import REPO_ROOT
from tests.example_accounts import write_example_accounts
from welcomemat import keys
from welcomemat.store import ZoneSetStore

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
COUNT = 3000


def journal_states(client: redis.Redis) -> dict[str, str]:
    raw = client.hgetall(keys.journal_key("acme", "q4-pipeline"))
    return {k.decode(): json.loads(v)["state"] for k, v in raw.items()}  # type: ignore[union-attr]


def test_kill_mid_run_then_resume_finishes_without_duplicates(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    accounts = tmp_path / "accounts.jsonl"
    write_example_accounts(accounts, COUNT)
    env = {**os.environ, "REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(tmp_path / "home")}
    command = [WELCOMEMAT, "precompute", "examples/campaign.yaml", str(accounts), "--json"]
    proc = subprocess.Popen(
        command, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    published_before = 0
    while time.monotonic() < deadline and proc.poll() is None:
        published_before = sum(1 for s in journal_states(redis_client).values() if s == "published")
        if published_before >= 300:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    states = journal_states(redis_client)
    done = sum(1 for s in states.values() if s == "published")
    assert 300 <= done < COUNT, f"the kill landed mid-run ({done} of {COUNT} journalled published)"
    assert sum(1 for s in states.values() if s == "accepted") == COUNT - done

    resumed = subprocess.run(
        [*command, "--resume"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode in (0, 1), resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["resumed"] == done
    assert report["published"] + report["unchanged"] + report["resumed"] == COUNT
    assert report["published"] <= COUNT - done
    assert set(journal_states(redis_client).values()) == {"published"}
    store = ZoneSetStore(redis_client)
    ids = sorted(store.iter_account_ids("acme", "q4-pipeline"))
    assert len(ids) == COUNT
    versions = {zs.version for zs in store.get_many("acme", "q4-pipeline", ids).values() if zs}
    assert versions == {1}, "an account was published twice"
