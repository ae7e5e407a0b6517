"""The worker's heartbeat: its loop touches a file while it turns, idle or waiting out Redis; a
liveness probe (`welcomemat worker --check-alive`) reads the file's age."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.ports import free_port
from tests.welcomemat.streams.streams_consumer import RecordingHandler
from welcomemat.streams.consumer import StreamConsumer
from welcomemat.streams.handler import ConsumerOptions
from welcomemat.streams.heartbeat import HeartbeatFile, heartbeat_age

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")


def test_a_heartbeat_touches_its_file_at_most_once_a_second(tmp_path: Path) -> None:
    path, now = tmp_path / "alive", [100.0]
    beat = HeartbeatFile(path, print, clock=lambda: now[0])
    beat()
    assert heartbeat_age(path, time.time()) is not None
    os.utime(path, (1, 1))
    now[0] += 0.5
    beat()  # within the second: left alone
    assert path.stat().st_mtime == 1
    now[0] += 1.0
    beat()
    age = heartbeat_age(path, time.time())
    assert age is not None and age < 60


def test_an_unwritable_heartbeat_is_logged_once_and_the_loop_goes_on(tmp_path: Path) -> None:
    lines: list[str] = []
    now = [0.0]
    beat = HeartbeatFile(tmp_path / "missing-folder" / "alive", lines.append, clock=lambda: now[0])
    for _ in range(3):
        beat()
        now[0] += 2
    assert len(lines) == 1 and "missing-folder" in lines[0]


def test_a_missing_file_has_no_age_and_an_old_one_its_age(tmp_path: Path) -> None:
    assert heartbeat_age(tmp_path / "none", 1000.0) is None
    (tmp_path / "old").touch()
    os.utime(tmp_path / "old", (400, 400))
    assert heartbeat_age(tmp_path / "old", 1000.0) == 600


def _beats_while_running(client: redis.Redis) -> int:
    beats: list[float] = []
    consumer = StreamConsumer(
        client,
        RecordingHandler(client),
        ConsumerOptions(name="c1", once=False, batch=10, block_ms=50, claim_idle_ms=200, backoff_cap_s=0.1),
        log=lambda line: None,
        heartbeat=lambda: beats.append(time.monotonic()),
    )
    thread = threading.Thread(target=consumer.run)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while len(beats) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        consumer.stop()
        thread.join(30)
    return len(beats)


def test_an_idle_consumer_beats(redis_client: redis.Redis) -> None:
    assert _beats_while_running(redis_client) >= 5


def test_a_consumer_waiting_out_a_redis_outage_still_beats() -> None:
    # Nothing listens on this port: every call fails (at once: no client-side retries), and the
    # consumer waits it out, alive.
    down = redis.Redis(
        port=free_port(), socket_connect_timeout=0.2, socket_timeout=0.2, retry=Retry(NoBackoff(), 0)
    )
    assert _beats_while_running(down) >= 5


def _check(heartbeat: Path | None, *extra: str) -> subprocess.CompletedProcess[str]:
    args = [WELCOMEMAT, "worker", "--check-alive", *extra]
    if heartbeat is not None:
        args += ["--heartbeat-file", str(heartbeat)]
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    return subprocess.run(args, capture_output=True, text=True, timeout=60, env=env, check=False)


def test_check_alive_answers_by_the_heartbeats_age(tmp_path: Path) -> None:
    path = tmp_path / "alive"
    missing = _check(path)
    assert missing.returncode == 1 and "no heartbeat" in missing.stderr
    path.touch()
    assert _check(path).returncode == 0
    os.utime(path, (time.time() - 700, time.time() - 700))
    stale = _check(path)
    assert stale.returncode == 1 and "stuck" in stale.stderr
    assert _check(path, "--max-age", "900").returncode == 0
    no_path = _check(None)
    assert no_path.returncode == 2 and "--heartbeat-file" in no_path.stderr
