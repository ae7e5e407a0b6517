"""`pytest -n 2` (pytest-xdist): workers collect the same tests in the same order, draw server
ports from ranges of their own, and never share a Redis database (docs/testing.md)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from redis.connection import parse_url

from tests.conftest import url_for_worker
from tests.corpora import REPO_ROOT
from tests.ports import worker_slice


def test_each_worker_draws_ports_from_its_own_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    slices = []
    for worker in ("gw0", "gw1", "gw2"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        slices.append(set(worker_slice(20_000, 32_768)))
    assert all(len(ports) == 4_256 for ports in slices)
    assert not (slices[0] & slices[1]) and not (slices[1] & slices[2]) and not (slices[0] & slices[2])
    assert set.union(*slices) <= set(range(20_000, 32_768))


def test_outside_xdist_every_port_of_the_range_may_be_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    assert worker_slice(20_000, 32_768) == range(20_000, 32_768)


@pytest.mark.parametrize(
    "url", ["redis://127.0.0.1:6379", "redis://127.0.0.1:6379/2", "unix:///tmp/redis.sock?socket_timeout=5"]
)
def test_each_worker_gets_its_own_database_of_a_named_server(url: str) -> None:
    base = int(parse_url(url).get("db") or 0)
    databases = [parse_url(url_for_worker(url, index))["db"] for index in range(4)]
    assert databases == [base, base + 1, base + 2, base + 3]
    assert parse_url(url_for_worker(url, 1)).get("socket_timeout") == parse_url(url).get("socket_timeout")


def test_a_named_cluster_is_refused_under_xdist() -> None:
    with pytest.raises(ValueError, match="Redis Cluster"):
        url_for_worker("redis+cluster://127.0.0.1:7000,127.0.0.1:7001", 1)


def collected(hash_seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


# Each xdist worker is a Python process with its own hash seed; a parametrize list built from a
# set would come out in another order, and xdist refuses to run when workers disagree.
@pytest.mark.subprocess
def test_collection_order_does_not_depend_on_the_hash_seed() -> None:
    first, second = collected("1"), collected("2")
    assert len(first) > 1_000
    assert first == second
