"""Redis clients built from a URL: one server, or a Redis Cluster. Every client the project
opens on `REDIS_URL` comes from `redis_from_url`.

URL forms:

- `redis://[user:password@]host[:port][/db]`, `rediss://...` (TLS), `unix:///path/redis.sock`:
  one server (redis-py's `Redis.from_url`).
- `redis+cluster://[user:password@]host:port[,host:port...][?option=value]`, and
  `rediss+cluster://...` (TLS): a Redis Cluster. Each `host:port` is a startup node; one is
  enough, more let a process start while one of them is down. The client discovers the other
  nodes, follows slot moves and fails over to a promoted replica. Database 0 only (Cluster has
  no other).

The cluster client is redis-py's with one failure mode closed (`_Cluster`): redis-py asks its
"default node" which arguments of a command with movable keys (XREADGROUP, XREAD) are keys, and
when that node has died nothing replaces it, so every such command fails for as long as the
process lives, although the cluster has failed over.

What may differ between the two clients is decided here, once: `run_script` runs or queues a
Lua script on a client or pipeline of either kind. Everything else the project does is the
same command API on both; the key schema (`welcomemat.keys`) keeps what one transaction,
script or multi-key command touches under one hash tag, hence in one Cluster slot.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, ClusterPipeline, RedisCluster
from redis.commands.core import Script
from redis.exceptions import ClusterDownError, RedisClusterException, SlotNotCoveredError, TryAgainError
from redis.retry import Retry

__all__ = [
    "CLUSTER_OUTAGE_ERRORS",
    "CLUSTER_SCHEMES",
    "REDIS_OUTAGE_ERRORS",
    "URL_SCHEMES",
    "ClusterUrl",
    "is_cluster_url",
    "parse_cluster_url",
    "redis_from_url",
    "run_script",
]

#: What a failover looks like from a cluster client while no node serves a slot yet (once its
#: own retries are spent): the cluster says it is down or to try again, or the client has no
#: node for the slot (`SlotNotCoveredError` is not a `RedisError`). Waited out like an outage.
CLUSTER_OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    ClusterDownError,
    TryAgainError,
    SlotNotCoveredError,
)
#: What a Redis outage looks like from redis-py: the server is gone, slow, or its socket is.
#: A Redis Cluster between a master's death and its replica's promotion is one too.
REDIS_OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    OSError,
    *CLUSTER_OUTAGE_ERRORS,
)
#: Cluster URL scheme -> the scheme of one node's URL.
CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
#: Every scheme `REDIS_URL` may start with.
URL_SCHEMES = ("redis", "rediss", "unix", *CLUSTER_SCHEMES)


@dataclass(frozen=True)
class ClusterUrl:
    """A parsed cluster URL: the node URL of its first startup node, and the others."""

    first_node_url: str
    other_nodes: tuple[tuple[str, int], ...]


def is_cluster_url(url: str) -> bool:
    return urlsplit(url).scheme in CLUSTER_SCHEMES


def parse_cluster_url(url: str) -> ClusterUrl:
    """ValueError (saying what is wrong, never the password) unless `url` is a cluster URL
    with at least one `host:port` and no database other than 0."""
    parts = urlsplit(url)
    if parts.scheme not in CLUSTER_SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(s + '://' for s in CLUSTER_SCHEMES)}")
    credentials, _, hosts = parts.netloc.rpartition("@")
    nodes: list[tuple[str, int]] = []
    for entry in hosts.split(","):
        host, _, port = entry.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"cluster node {entry.strip()!r} must be host:port")
        nodes.append((host.strip("[]"), int(port)))
    if parts.path not in ("", "/", "/0"):
        raise ValueError("a Redis Cluster has database 0 only: leave the path empty")
    if parts.fragment:
        raise ValueError("no #fragment")
    auth = f"{credentials}@" if credentials else ""
    first_host, first_port = nodes[0]
    bracketed = f"[{first_host}]" if ":" in first_host else first_host
    query = f"?{parts.query}" if parts.query else ""
    first = f"{CLUSTER_SCHEMES[parts.scheme]}://{auth}{bracketed}:{first_port}{query}"
    return ClusterUrl(first, tuple(nodes[1:]))


def redis_from_url(
    url: str,
    *,
    connect_timeout_s: float,
    socket_timeout_s: float,
    decode_responses: bool = False,
    retries: int | None = None,
    health_check_interval_s: int = 0,
) -> redis.Redis:
    """A client of the server or cluster `url` names (see the module docstring).

    `retries`: how many times a command is retried at once, without backoff, on a connection
    error (None: redis-py's default, with backoff; a cluster client also retries through slot
    moves and failovers). The result is typed `redis.Redis`: a `RedisCluster` serves the same
    command API, and where the two differ (scripts on pipelines) callers use `run_script`.
    """
    options: dict[str, Any] = {
        "decode_responses": decode_responses,
        "socket_connect_timeout": connect_timeout_s,
        "socket_timeout": socket_timeout_s,
        "health_check_interval": health_check_interval_s,
    }
    if retries is not None:
        options["retry"] = Retry(NoBackoff(), retries)
    if not is_cluster_url(url):
        return redis.Redis.from_url(url, **options)
    parsed = parse_cluster_url(url)

    def connect() -> RedisCluster:
        startup = [ClusterNode(host, port) for host, port in parsed.other_nodes]  # type: ignore[no-untyped-call]
        return _Cluster.from_url(parsed.first_node_url, startup_nodes=startup, **options)

    try:
        cluster: object = connect()
    except RedisClusterException:
        # No startup node answers: a cluster client cannot exist before one does. The process
        # starts anyway (a renderer serves the fallback, a worker waits) as with one server.
        cluster = _ClusterOnFirstUse(connect, options)
    return cast(redis.Redis, cluster)


class _Cluster(RedisCluster):
    """redis-py's cluster client, which moves off a dead default node when it asks it for keys.

    redis-py parses the keys of a command with movable keys (XREADGROUP, XREAD) by sending
    COMMAND GETKEYS to its default node. When that node is gone, the connection error comes from
    there, not from the command's own node, so redis-py neither refreshes its topology nor
    replaces the default node (it does both only when the command itself fails), and each of
    these commands fails until the process restarts: a worker stopped on two failovers in a row
    (tests/cluster/test_failover.py). Here the failure refreshes the topology and replaces the
    default node before it propagates; redis-py's own retry of the command then asks a live node.
    """

    def _get_command_keys(self, *args: Any) -> Any:
        try:
            return super()._get_command_keys(*args)  # type: ignore[no-untyped-call]
        except (redis.ConnectionError, redis.TimeoutError):
            failed = self.get_default_node()  # type: ignore[no-untyped-call]
            try:
                self.nodes_manager.initialize(last_failed_node_name=failed.name)
            except (redis.RedisError, RedisClusterException):
                pass  # no node answers now: the next command tries again
            if self.get_default_node().name == failed.name:  # type: ignore[no-untyped-call]
                self.replace_default_node()
            raise


class _ClusterOnFirstUse:
    """A Redis Cluster client made at its first use once a node answers.

    Until then every command raises `redis.ConnectionError` (an outage, which every caller
    already handles), while what callers ask of a client when they are built (its options, its
    encoder, for `register_script`) is answered without the cluster.
    """

    def __init__(self, connect: Callable[[], RedisCluster], options: dict[str, Any]) -> None:
        self._connect = connect
        self._options = options
        self._client: RedisCluster | None = None
        self._lock = threading.Lock()

    def _cluster(self) -> RedisCluster:
        with self._lock:
            if self._client is None:
                try:
                    self._client = self._connect()
                except RedisClusterException as exc:
                    raise redis.ConnectionError(str(exc)) from exc
            return self._client

    def get_connection_kwargs(self) -> dict[str, Any]:
        return dict(self._options)

    def get_encoder(self) -> Any:
        # A client that has not connected (none does before its first command) has the encoder.
        return redis.Redis(decode_responses=self._options["decode_responses"]).get_encoder()

    def register_script(self, script: str) -> Script:
        return Script(self, script)  # type: ignore[arg-type]

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def __getattr__(self, name: str) -> Any:
        if self._client is not None:
            return getattr(self._client, name)

        # A method taken now may be called later (`guard.call("ping", client.ping)`): connect then.
        def deferred(*args: Any, **kwargs: Any) -> Any:
            return getattr(self._cluster(), name)(*args, **kwargs)

        return deferred


def run_script(target: Any, script: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
    """Run `script` on a client, or queue it on a pipeline (its reply comes with `execute`).

    A Cluster pipeline refuses EVALSHA (it cannot first make sure the node that will run it
    has the script), so there the script is sent whole with EVAL, which Redis also caches.
    Its keys must share one slot, as in every Cluster script: they share a hash tag.
    """
    if isinstance(target, ClusterPipeline):
        return target.execute_command("EVAL", script.script, len(keys), *keys, *args)  # type: ignore[no-untyped-call]
    return script(keys=keys, args=args, client=target)
