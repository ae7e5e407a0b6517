"""A consumer's heartbeat file: touched while its loop turns, its age read by a liveness probe.

A worker exposes no port, and pinging Redis says nothing of a loop that hangs; the file's
modification time does. It lives on a writable scratch folder (`/tmp` in the image), so a
read-only root filesystem is no obstacle; a file that cannot be written is logged once and the
worker goes on (the probe then restarts it, which is what a stuck filesystem deserves).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["HeartbeatFile", "heartbeat_age"]

# Touching more often than this buys nothing: probes look every tens of seconds.
_MIN_INTERVAL_S = 1.0


class HeartbeatFile:
    """A callable for `StreamConsumer(heartbeat=...)` that touches `path`, at most once a second."""

    def __init__(
        self, path: Path, log: Callable[[str], None], *, clock: Callable[[], float] = time.monotonic
    ):
        self.path = path
        self._log = log
        self._clock = clock
        self._last = float("-inf")
        self._failed = False

    def __call__(self) -> None:
        now = self._clock()
        if now - self._last < _MIN_INTERVAL_S:
            return
        self._last = now
        try:
            self.path.touch()
            os.utime(self.path)  # touch() leaves the time alone on some filesystems when it exists
        except OSError as exc:
            if not self._failed:
                self._log(f"cannot write the heartbeat file {self.path}: {exc.strerror or exc}")
            self._failed = True
        else:
            self._failed = False


def heartbeat_age(path: Path, now: float) -> float | None:
    """Seconds since `path` was last touched, at wall-clock time `now`; None when it is missing."""
    try:
        return max(0.0, now - path.stat().st_mtime)
    except OSError:
        return None
