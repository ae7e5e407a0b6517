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

from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.report import RunReport
from precompute.run import PrecomputeRun
from tests.corpora import REPO_ROOT
from tests.example_accounts import write_example_accounts
from welcomemat import keys
from welcomemat.campaign.contract import load_campaign
from welcomemat.zones.contract import load_zone_contracts
from welcomemat.zones.store import ZoneSetStore

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


def test_resume_journals_an_account_published_just_before_its_journal_entry(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    """Killed between writing a zone set and its journal entry: --resume keeps it and says so."""
    zones = dict(load_zone_contracts(REPO_ROOT / "zones"))
    campaign = load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones)
    accounts = write_example_accounts(tmp_path / "accounts.jsonl", 40)

    def run(*, resume: bool) -> RunReport:
        return PrecomputeRun(
            client=redis_client,
            campaign=campaign,
            zones=zones,
            policy=build_policy(campaign, None),
            provider=OfflineComposer(),
            resume=resume,
        ).run(accounts)

    first = run(resume=False)
    assert first.published == 40
    journal = keys.journal_key("acme", "q4-pipeline")
    caught = sorted(journal_states(redis_client))[:5]
    for account_id in caught:  # as the kill left them: zone set written, journal still `accepted`
        redis_client.hset(journal, account_id, json.dumps({"state": "accepted", "at": "2026-11-30T00:00:00"}))

    again = run(resume=True)

    assert again.resumed == 35 and again.unchanged == 5 and again.published == 0
    assert set(journal_states(redis_client).values()) == {"published"}
    entries = redis_client.hmget(journal, caught)
    assert all(json.loads(e)["version"] == 1 for e in entries if e is not None)  # type: ignore[arg-type]
