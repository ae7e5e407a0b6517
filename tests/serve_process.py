"""`welcomemat serve` as a process for tests: its environment, and waiting until it answers."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx

__all__ = ["serve_env", "wait_until_answering"]


def serve_env(home: Path, **settings: str) -> dict[str, str]:
    """This process's environment without any WELCOMEMAT_* or REDIS_URL, then `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    env.update({"WELCOMEMAT_HOME": str(home), **settings})
    return env


def wait_until_answering(process: subprocess.Popen[bytes], url: str, timeout_s: float = 30) -> httpx.Response:
    """The first answer `url` gives; fails with the process's output if it exits first, or on timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return httpx.get(url, timeout=2)
        except httpx.TransportError:
            if process.poll() is not None:
                out, err = process.communicate()
                raise AssertionError(
                    f"serve exited {process.returncode}: {(out or b'') + (err or b'')!r}"
                ) from None
            assert time.monotonic() < deadline, f"serve did not answer {url} within {timeout_s:g} s"
            time.sleep(0.1)
