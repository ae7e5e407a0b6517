"""The renderer on a read-only filesystem, as a hardened container runs it (`--read-only`): with
REDIS_URL it never writes WELCOMEMAT_HOME; without it, the embedded Redis refuses in one line that
names both settings, never with a traceback.

The read-only folder is a real read-only bind mount in a mount namespace of its own (`unshare`,
as root, the way the tests run here and in CI).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import httpx
import redis

from tests.ports import free_port
from tests.serve_process import serve_env, wait_until_answering
from tests.server.conftest import CAMPAIGN, SECRET, example_inputs, publish_config

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")


def _read_only(home: Path, command: list[str]) -> list[str]:
    """`command` run with `home` mounted read-only (EROFS on any write, root or not)."""
    script = f"mount --bind {shlex.quote(str(home))} {shlex.quote(str(home))} && "
    script += f"mount -o remount,bind,ro {shlex.quote(str(home))} && exec {shlex.join(command)}"
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = serve_env(home, WELCOMEMAT_SECRET=SECRET, **extra)
    env.pop("HOME", None)  # an arbitrary UID often has none
    return env


def test_without_redis_url_a_read_only_home_is_refused_in_one_clear_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    probe = subprocess.run(_read_only(home, ["touch", str(home / "x")]), capture_output=True, text=True)
    assert "Read-only file system" in probe.stderr, probe.stderr  # the mount is really read-only
    done = subprocess.run(
        _read_only(home, [WELCOMEMAT, "serve", "--port", str(free_port())]),
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert f"WELCOMEMAT_HOME={home}" in done.stderr and "REDIS_URL" in done.stderr
    assert "Read-only file system" in done.stderr


def test_with_redis_url_the_renderer_serves_from_a_read_only_home(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    home = tmp_path / "home"
    home.mkdir()
    port = free_port()
    process = subprocess.Popen(
        _read_only(home, [WELCOMEMAT, "serve", "--port", str(port)]),
        env=_env(home, REDIS_URL=redis_url),
        cwd=home,  # relative paths resolve in the read-only folder too
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        page = wait_until_answering(process, f"http://127.0.0.1:{port}/c/{CAMPAIGN}")
        assert page.status_code == 200 and 'data-wm-zone="hero_headline"' in page.text
        assert httpx.get(f"http://localhost:{port}/healthz", timeout=2).status_code == 200
    finally:
        process.terminate()
        out = process.communicate(timeout=20)[0].decode()
    assert "Traceback" not in out
    assert list(home.iterdir()) == []
