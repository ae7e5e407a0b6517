"""`welcomemat serve --workers 2 --reuse-port`: a listening socket per worker, connections spread."""

from __future__ import annotations

import os
import pickle
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

import pytest
import redis

from cli.worker_sockets import worker_listener
from tests.corpora import REPO_ROOT
from tests.ports import free_port
from tests.serve_process import serve_env, wait_until_answering
from tests.server.conftest import CAMPAIGN, SECRET, example_inputs, publish_config

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_REUSEPORT spreads on Linux")

LISTEN, ESTABLISHED = "0A", "01"


def tcp_sockets(port: int, state: str) -> set[int]:
    """Inodes of this machine's IPv4 TCP sockets in `state` whose local port is `port` (/proc/net/tcp)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port and fields[3] == state:
            found.add(int(fields[9]))
    return found


def socket_inodes(pid: int) -> set[int]:
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(int(target[8:-1]))
    return found


def children(pid: int) -> list[int]:
    """The processes `pid` started (its main thread's; uvicorn's supervisor spawns from it)."""
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def workers_listening(supervisor: int, port: int) -> dict[int, set[int]]:
    """Each worker of `supervisor` (uvicorn's spawned processes) -> the listening sockets on
    `port` it holds. uvicorn's spawn start method runs a resource tracker beside the workers:
    it holds no socket, so it is left out."""
    listening = tcp_sockets(port, LISTEN)
    held = {pid: socket_inodes(pid) & listening for pid in children(supervisor)}
    return {pid: inodes for pid, inodes in held.items() if inodes}


class Servers:
    """`welcomemat serve --workers 2` processes on the test's Redis, stopped after the test."""

    def __init__(self, home: Path, redis_url: str) -> None:
        self.home, self.redis_url = home, redis_url
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, *flags: str) -> tuple[subprocess.Popen[bytes], int]:
        """A server on a free port, once both its workers listen."""
        port = free_port()
        env = serve_env(
            self.home, REDIS_URL=self.redis_url, WELCOMEMAT_SECRET=SECRET, WELCOMEMAT_LOG_LEVEL="WARNING"
        )
        process = subprocess.Popen(
            [WELCOMEMAT, "serve", "--port", str(port), "--workers", "2", "--no-access-log", *flags],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.started.append(process)
        wait_until_answering(process, f"http://127.0.0.1:{port}/c/{CAMPAIGN}")
        assert len(wait_for_listeners(process.pid, port, 2)) == 2, "two workers did not start listening"
        return process, port

    def stop_all(self) -> None:
        for process in self.started:
            if process.returncode is None:
                process.terminate()
                try:
                    process.communicate(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.communicate()


@pytest.fixture
def servers(tmp_path: Path, redis_url: str, redis_client: redis.Redis) -> Iterator[Servers]:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    started = Servers(tmp_path, redis_url)
    try:
        yield started
    finally:
        started.stop_all()


def wait_for_listeners(supervisor: int, port: int, count: int) -> dict[int, set[int]]:
    deadline = time.monotonic() + 30
    while True:
        held = workers_listening(supervisor, port)
        if len(held) == count or time.monotonic() > deadline:
            return held
        time.sleep(0.1)


def open_connections(port: int, count: int) -> list[socket.socket]:
    """`count` keep-alive connections, opened together (a proxy's pool), each answered once."""
    connections = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(count)]
    for connection in connections:
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    for connection in connections:
        assert connection.recv(4096).startswith(b"HTTP/1.1 200")
    return connections


def test_two_workers_listen_on_a_socket_each_and_the_kernel_spreads_connections(servers: Servers) -> None:
    process, port = servers.start("--reuse-port")
    held = workers_listening(process.pid, port)
    assert len(held) == 2, held
    first, second = held.values()
    assert first.isdisjoint(second)  # two sockets, not one shared
    connections = open_connections(port, 64)
    try:
        established = tcp_sockets(port, ESTABLISHED)
        served = {pid: len(socket_inodes(pid) & established) for pid in held}
        assert sum(served.values()) == 64
        # By a hash of each connection's addresses: both workers get a share (all 64 on one
        # worker, or fewer than 8 on either, is a chance below one in a billion).
        assert min(served.values()) >= 8, served
    finally:
        for connection in connections:
            connection.close()


def test_a_worker_that_dies_is_replaced_by_one_with_its_own_socket(servers: Servers) -> None:
    process, port = servers.start("--reuse-port")
    held = workers_listening(process.pid, port)
    victim = next(iter(held))
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while True:  # uvicorn's supervisor starts another worker; it binds the address itself
        now = workers_listening(process.pid, port)
        if len(now) == 2 and victim not in now and len(set().union(*now.values())) == 2:
            break
        assert time.monotonic() < deadline, f"no replacement listening: {now}"
        time.sleep(0.2)
    connections = open_connections(port, 64)
    for connection in connections:
        connection.close()


def test_by_default_the_workers_share_one_socket(servers: Servers) -> None:
    process, port = servers.start()
    held = workers_listening(process.pid, port)
    assert len(held) == 2 and len(set().union(*held.values())) == 1, held
    process.terminate()
    out, _ = process.communicate(timeout=15)
    assert "(2 worker(s), one shared socket," in out.decode()


def test_serve_says_it_listens_on_a_socket_a_worker(servers: Servers) -> None:
    process, _ = servers.start("--reuse-port")
    process.terminate()
    out, _ = process.communicate(timeout=15)
    assert "(2 worker(s), a socket each, httptools + uvloop)" in out.decode()


def test_an_address_in_use_is_refused_before_any_worker_starts(tmp_path: Path, redis_url: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = subprocess.run(
            [WELCOMEMAT, "serve", "--port", str(port), "--workers", "2", "--reuse-port"],
            cwd=REPO_ROOT,
            env=serve_env(tmp_path, REDIS_URL=redis_url, WELCOMEMAT_SECRET=SECRET),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1
    assert f"welcomemat: cannot listen on 127.0.0.1:{port}: Address already in use" in result.stderr
    assert "Traceback" not in result.stderr and "Started server process" not in result.stderr


def test_the_supervisors_socket_holds_the_address_and_pickles_as_a_workers_own() -> None:
    listener = worker_listener("127.0.0.1", free_port())
    try:
        address = listener.getsockname()
        # What uvicorn's supervisor hands a spawned worker: another socket, the same address.
        own = pickle.loads(ForkingPickler.dumps(listener))
        try:
            assert type(own) is socket.socket and own.fileno() != listener.fileno()
            assert own.getsockname() == address
            assert own.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
            own.listen()
            # The worker's socket listens; the supervisor's is bound, not listening: it is given
            # no connection.
            assert tcp_sockets(address[1], LISTEN) == {os.fstat(own.fileno()).st_ino}
        finally:
            own.close()
        # Another server (SO_REUSEADDR, as most set, without SO_REUSEPORT) is refused the port
        # while the supervisor holds it, though no worker listens.
        with pytest.raises(OSError, match="in use"), socket.create_server(address):
            pass
    finally:
        listener.close()


def test_a_port_of_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="fixed port"):
        worker_listener("127.0.0.1", 0)
