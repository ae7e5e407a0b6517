"""The Redis connection a process uses: `REDIS_URL`, or the embedded server under home.

`REDIS_URL` may name one server or a Redis Cluster (`welcomemat.storage.redis_client`).
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from welcomemat.errors import StoreError
from welcomemat.settings import Settings
from welcomemat.storage.embedded_redis import EmbeddedRedis
from welcomemat.storage.redis_client import redis_from_url

__all__ = [
    "CONNECT_TIMEOUT_S",
    "SOCKET_TIMEOUT_S",
    "RedisTarget",
    "connect",
    "connect_for_blocking_reads",
    "connect_running",
    "resolve_redis",
]

CONNECT_TIMEOUT_S = 2.0  # a Redis that does not answer in 2 s is down, for our purposes
SOCKET_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class RedisTarget:
    url: str
    embedded: bool

    def describe(self) -> str:
        return f"embedded Redis at {self.url}" if self.embedded else f"Redis at {self.url}"


def resolve_redis(settings: Settings) -> RedisTarget:
    """Where Redis is: `REDIS_URL`, else the embedded server (started now if needed)."""
    if settings.redis_url:
        return RedisTarget(settings.redis_url, embedded=False)
    return RedisTarget(EmbeddedRedis().ensure_running(settings.home), embedded=True)


def connect(target: RedisTarget) -> redis.Redis:
    """A client with short timeouts; raises StoreError if the server does not answer."""
    client = redis_from_url(
        target.url, connect_timeout_s=CONNECT_TIMEOUT_S, socket_timeout_s=SOCKET_TIMEOUT_S
    )
    try:
        client.ping()
    except redis.RedisError as exc:
        raise StoreError(f"cannot reach {target.describe()}: {exc}") from exc
    return client


def connect_running(settings: Settings) -> redis.Redis | None:
    """A client of the Redis already running (`REDIS_URL`, else the embedded server if it runs).

    None when none answers: for a check not worth starting (and leaving behind) a Redis server.
    """
    if settings.redis_url:
        target = RedisTarget(settings.redis_url, embedded=False)
    else:
        status = EmbeddedRedis().status(settings.home)
        if not status.running:
            return None
        target = RedisTarget(status.url, embedded=True)
    try:
        return connect(target)
    except StoreError:
        return None


def connect_for_blocking_reads(target: RedisTarget, block_ms: int) -> redis.Redis:
    """A client for a consumer that blocks in XREADGROUP for up to `block_ms`.

    Checked like `connect` (StoreError when Redis does not answer). Its socket timeout
    outlasts the block, or a quiet stream would read as a dead server.
    """
    connect(target).close()
    return redis_from_url(
        target.url, connect_timeout_s=CONNECT_TIMEOUT_S, socket_timeout_s=SOCKET_TIMEOUT_S + block_ms / 1000
    )
