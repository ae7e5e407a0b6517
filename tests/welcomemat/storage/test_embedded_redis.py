from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from welcomemat.errors import EmbeddedRedisError
from welcomemat.storage.embedded_redis import EmbeddedRedis, socket_path_for, temporary_redis


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # exited but not yet reaped by init
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


@pytest.fixture
def embedded() -> EmbeddedRedis:
    return EmbeddedRedis(startup_timeout_s=10.0)


@pytest.fixture
def home(tmp_path: Path, embedded: EmbeddedRedis) -> Iterator[Path]:
    home = tmp_path / "wm-home"
    yield home
    pid = embedded.status(home).pid
    embedded.stop(home)  # never leave a daemonized server behind
    assert pid is None or gone(pid)


def client_for(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


def test_start_serves_on_a_unix_socket_with_aof(embedded: EmbeddedRedis, home: Path) -> None:
    url = embedded.ensure_running(home)
    assert url == f"unix://{home.resolve()}/redis.sock"
    with client_for(url) as client:
        assert client.ping()
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("port") == {"port": "0"}  # no TCP listener
    for name in ("redis.conf", "redis.pid", "redis.log", "redis.lock"):
        assert (home / name).is_file(), name
    status = embedded.status(home)
    assert status.running and status.pid is not None and status.url == url


def test_data_survives_stop_and_start(embedded: EmbeddedRedis, home: Path) -> None:
    url = embedded.ensure_running(home)
    with client_for(url) as client:
        client.set("wm:test", b"kept", ex=3600)
    pid = embedded.status(home).pid
    assert pid is not None
    assert embedded.stop(home) is True
    assert gone(pid)
    assert not embedded.status(home).running
    assert not (home / "redis.sock").exists()
    assert (home / "data" / "appendonly.aof").stat().st_size > 0

    assert embedded.ensure_running(home) == url
    assert embedded.status(home).pid != pid
    with client_for(url) as client:
        assert client.get("wm:test") == b"kept"


def test_second_call_reuses_the_running_server(embedded: EmbeddedRedis, home: Path) -> None:
    url = embedded.ensure_running(home)
    pid = embedded.status(home).pid
    assert EmbeddedRedis().ensure_running(home) == url
    assert embedded.status(home).pid == pid


def test_concurrent_callers_start_one_server(embedded: EmbeddedRedis, home: Path) -> None:
    urls: list[str] = []
    errors: list[BaseException] = []

    def call() -> None:
        try:
            urls.append(EmbeddedRedis().ensure_running(home))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(set(urls)) == 1 and len(urls) == 6
    pid = embedded.status(home).pid
    with client_for(urls[0]) as client:
        assert int(client.info("server")["process_id"]) == pid


@pytest.mark.parametrize("stale", ["dead", "reused"])
def test_stale_pidfile_and_socket_are_cleaned_up(embedded: EmbeddedRedis, home: Path, stale: str) -> None:
    home.mkdir(parents=True)
    stale_pid = dead_pid() if stale == "dead" else os.getpid()  # reused: alive, not redis
    (home / "redis.pid").write_text(f"{stale_pid}\n")
    leftover = socket.socket(socket.AF_UNIX)
    leftover.bind(str(home / "redis.sock"))  # a socket file nobody listens on
    leftover.close()

    url = embedded.ensure_running(home)
    pid = embedded.status(home).pid
    assert pid is not None and pid != stale_pid
    with client_for(url) as client:
        assert client.ping()


def test_stop_without_a_server_is_false(embedded: EmbeddedRedis, tmp_path: Path) -> None:
    assert embedded.stop(tmp_path / "never-started") is False
    (tmp_path / "stale").mkdir()
    (tmp_path / "stale" / "redis.pid").write_text(str(dead_pid()))
    assert embedded.stop(tmp_path / "stale") is False
    assert not (tmp_path / "stale" / "redis.pid").exists()


def test_long_home_path_puts_the_socket_in_a_private_temp_dir(
    embedded: EmbeddedRedis, tmp_path: Path
) -> None:
    home = tmp_path.joinpath(*(["a-rather-long-folder-name"] * 5))
    assert len(os.fsencode(home / "redis.sock")) > 107
    sock = socket_path_for(home)
    assert len(os.fsencode(sock)) <= 103
    try:
        url = embedded.ensure_running(home)
        assert url == f"unix://{sock}"
        assert (sock.parent.stat().st_mode & 0o777) == 0o700
        assert str(sock) in (home / "redis.conf").read_text()
        with client_for(url) as client:
            assert client.ping()
        assert embedded.ensure_running(home) == url  # every caller derives the same place
    finally:
        assert embedded.stop(home) is True
    assert not sock.parent.exists()


def test_home_path_with_space_and_quote(embedded: EmbeddedRedis, tmp_path: Path) -> None:
    home = tmp_path / 'odd "home" dir'
    try:
        url = embedded.ensure_running(home)
        with client_for(url) as client:
            assert client.ping()
    finally:
        embedded.stop(home)


def test_failed_start_is_a_clear_error(tmp_path: Path) -> None:
    broken = EmbeddedRedis(executable=Path("/bin/false"))
    with pytest.raises(EmbeddedRedisError, match="exited with status 1"):
        broken.ensure_running(tmp_path / "home")


def test_daemon_that_dies_reports_the_log_tail(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "data").mkdir()
    (home / "data" / "appendonly.aof").write_bytes(b"*garbage that is not an AOF\r\n")
    with pytest.raises(
        EmbeddedRedisError, match=r"exited while starting(.|\n)*last lines of(.|\n)*Bad file format"
    ):
        EmbeddedRedis(startup_timeout_s=5.0).ensure_running(home)


def test_temporary_redis_stops_on_exit(tmp_path: Path) -> None:
    with temporary_redis(tmp_path / "tmp-redis") as url:
        with client_for(url) as client:
            pid = int(client.info("server")["process_id"])
            assert client.config_get("daemonize") == {"daemonize": "no"}
    assert gone(pid)
    assert not (tmp_path / "tmp-redis" / "redis.sock").exists()


@pytest.mark.parametrize("blocker", ["home under a file", "lock is a folder"])
def test_a_home_it_cannot_write_is_a_clear_error_naming_the_settings(tmp_path: Path, blocker: str) -> None:
    if blocker == "home under a file":
        (tmp_path / "file").touch()
        home = tmp_path / "file" / "home"
    else:  # stands in for any file the embedded Redis must write and cannot
        home = tmp_path / "home"
        (home / "redis.lock").mkdir(parents=True)
    with pytest.raises(EmbeddedRedisError) as refused:
        EmbeddedRedis().ensure_running(home)
    message = str(refused.value)
    assert f"WELCOMEMAT_HOME={home}" in message and "REDIS_URL" in message and "volume" in message
