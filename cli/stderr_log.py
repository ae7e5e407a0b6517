"""The log lines of a long-running command (`welcomemat sync`, `welcomemat worker`) on stderr.

The consumers (`outbound.sync.Syncer`, `precompute.worker.Worker`, the outbox senders, the
seller-alert producer) take their log as a callback and leave the terminal alone; the
command passes one of these, so each line says which process wrote it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

__all__ = ["stderr_log"]


def stderr_log(prefix: str) -> Callable[[str], None]:
    """Each line on stderr as `PREFIX: line`, flushed at once (a follower runs for days)."""

    def log(line: str) -> None:
        print(f"{prefix}: {line}", file=sys.stderr, flush=True)

    return log
