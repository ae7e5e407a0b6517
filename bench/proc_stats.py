"""Process figures the benchmarks read from Linux's /proc (0 elsewhere)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cpu_seconds"]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far, all its threads (0 when /proc has none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
