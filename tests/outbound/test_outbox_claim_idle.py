"""`welcomemat sync --claim-idle-ms` applies to the CRM outbox, not only to the events stream.

A sender that read changes and stopped before delivering them leaves them pending in the
outbox group; the next `sync` takes them over once they have been idle `--claim-idle-ms`.
Real Redis, the real console script, a real receiver on loopback.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import redis

from tests.corpora import REPO_ROOT
from tests.outbound.sync_helpers import TENANT, emit, make_events
from tests.outbound.test_webhook import (
    SECRET,
    WELCOMEMAT,
    Receiver,
    crm_view_of_redis,
    serve,
    sync_with_outbox,
)
from welcomemat import keys

ACCOUNTS = 5
IDLE_MS = 200


def _left_pending_by_a_dead_sender(client: redis.Redis) -> None:
    """Changes queued for every account, then read by a sender that stopped before sending any."""
    client.hset(keys.campaigns_index_key(), f"{TENANT}/q4-expansion", "q4-expansion")
    emit(client, make_events(60, accounts=ACCOUNTS))
    sync_with_outbox(client)
    outbox = keys.webhook_outbox_key(TENANT)
    client.xgroup_create(outbox, keys.WEBHOOK_CONSUMER_GROUP, id="0")
    client.xreadgroup(keys.WEBHOOK_CONSUMER_GROUP, "dead", {outbox: ">"})
    time.sleep(2 * IDLE_MS / 1000)  # idle past the small setting, far from the 60 s default


def _sync_once(redis_url: str, tmp_path: Path, url: str, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "WELCOMEMAT_HOME": str(tmp_path / "home"),
        "WELCOMEMAT_CRM_WEBHOOK_URL": url,
        "WELCOMEMAT_CRM_WEBHOOK_SECRET": SECRET,
    }
    return subprocess.run(
        [WELCOMEMAT, "sync", "--once", "--block-ms", "50", "--consumer", "next", *flags],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_outbox_is_claimed_after_the_configured_idle_time(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    _left_pending_by_a_dead_sender(redis_client)
    receiver = Receiver()
    with serve(receiver) as url:
        done = _sync_once(redis_url, tmp_path, url, "--claim-idle-ms", str(IDLE_MS))
    assert done.returncode == 0, done.stderr
    assert f"{ACCOUNTS} changes delivered" in done.stdout
    assert redis_client.xlen(keys.webhook_outbox_key(TENANT)) == 0
    assert receiver.state == crm_view_of_redis(redis_client)


def test_without_the_setting_the_dead_senders_changes_wait_for_the_default(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    _left_pending_by_a_dead_sender(redis_client)
    receiver = Receiver()
    with serve(receiver) as url:
        done = _sync_once(redis_url, tmp_path, url)
    assert done.returncode == 0, done.stderr
    assert "0 changes delivered" in done.stdout
    assert redis_client.xlen(keys.webhook_outbox_key(TENANT)) == ACCOUNTS
    assert receiver.requests == 0
