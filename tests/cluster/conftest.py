"""The Redis Cluster the tests in this folder run against, one per session.

Three masters and three replicas of Debian's `redis-server` on free loopback ports, joined
with `redis-cli --cluster create` (`tests/cluster/local_cluster.py`). Missing programs fail
these tests, naming `scripts/install-test-deps.sh`: CI installs them, so a skip would only
hide that nothing ran.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from tests.cluster.local_cluster import INSTALL_HINT, REDIS_CLI, REDIS_SERVER, LocalCluster
from welcomemat.storage.redis_client import redis_from_url


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    missing = [p for p in (REDIS_SERVER, REDIS_CLI) if not os.access(p, os.X_OK)]
    if missing:
        pytest.fail(f"{', '.join(missing)} missing: {INSTALL_HINT}", pytrace=False)
    cluster = LocalCluster(tmp_path_factory.mktemp("cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def cluster_client(redis_cluster: LocalCluster) -> Iterator[redis.Redis]:
    """A cluster client (bytes replies) through `REDIS_URL`'s cluster form, every master emptied."""
    client = redis_from_url(redis_cluster.url, connect_timeout_s=2.0, socket_timeout_s=5.0)
    client.flushdb()
    try:
        yield client
    finally:
        client.close()
