"""`welcomemat erase` of an account id: an unknown one is refused (exit 1, nothing written) unless
`--force`; a known one is erased, and erasing it again says `nothing left` (exit 0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import redis

from tests.corpora import REPO_ROOT
from tests.server.conftest import (
    CAMPAIGN,
    PERSONAL_ACCOUNT,
    TENANT,
    example_inputs,
    make_zone_set,
    publish_config,
)
from welcomemat import keys
from welcomemat.records.erasure import account_field
from welcomemat.zones.store import ZoneSetStore

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
# Ids an operator might type for PERSONAL_ACCOUNT, or ids of nothing at all.
UNKNOWN_IDS = ["ACCT_DYMAXA", "acct_dymaxa2", "acct-dymaxa", "acct_dymax", "acct_00001"]


def erase(*args: str, redis_url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(tmp_path / "home")}
    return subprocess.run(
        [WELCOMEMAT, "erase", *args, "--tenant", TENANT, "--by", "dpo"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def snapshot(client: redis.Redis) -> dict[bytes, bytes | None]:
    """Every key and its serialized value: equal snapshots, nothing written."""
    return {key: client.dump(key) for key in sorted(client.scan_iter(count=1000))}


def test_an_unknown_account_id_is_refused_and_nothing_written_unless_forced(
    redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """Issue 25: an unknown id printed the success of a repeat and wrote a suppression mark."""
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    ZoneSetStore(redis_client).publish(make_zone_set(PERSONAL_ACCOUNT))
    before = snapshot(redis_client)
    for unknown in UNKNOWN_IDS:
        for extra in ((), ("--json",)):
            refused = erase(unknown, *extra, redis_url=redis_url, tmp_path=tmp_path)
            assert refused.returncode == 1, refused.stderr
            assert f"account {unknown} of {TENANT} is unknown" in refused.stderr
            assert "nothing was written" in refused.stderr and "--force" in refused.stderr
            assert refused.stdout == ""
    assert snapshot(redis_client) == before  # no mark, no audit entry, nothing

    forced = erase("acct_later", "--force", "--json", redis_url=redis_url, tmp_path=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["total"] == 0
    assert redis_client.hexists(keys.erasures_key(TENANT), account_field("acct_later"))

    erased = erase(PERSONAL_ACCOUNT, redis_url=redis_url, tmp_path=tmp_path)
    assert erased.returncode == 0, erased.stderr
    assert erased.stdout.startswith(f"erased account {PERSONAL_ACCOUNT} of {TENANT}: 1 zone sets")
    assert not redis_client.exists(keys.zone_set_key(TENANT, CAMPAIGN, PERSONAL_ACCOUNT))
    mark = redis_client.hget(keys.erasures_key(TENANT), account_field(PERSONAL_ACCOUNT))
    # Erased before, so known: a repeat is no error; it keeps the mark and says so.
    again = erase(PERSONAL_ACCOUNT, redis_url=redis_url, tmp_path=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"erased account {PERSONAL_ACCOUNT} of {TENANT}: nothing left"
    assert redis_client.hget(keys.erasures_key(TENANT), account_field(PERSONAL_ACCOUNT)) == mark


def test_force_goes_with_an_erasure_only(redis_client: redis.Redis, redis_url: str, tmp_path: Path) -> None:
    result = erase("acct_x", "--readmit", "--force", "--reason", "r", redis_url=redis_url, tmp_path=tmp_path)
    assert result.returncode == 2
    assert "--force goes with an erasure" in result.stderr
