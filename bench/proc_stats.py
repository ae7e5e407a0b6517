"""Process figures the benchmarks read from Linux's /proc (0 elsewhere)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cpu_seconds", "process_tree", "tree_cpu_seconds"]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far, all its threads (0 when /proc has none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """`pid` and its children (a server's supervisor and its workers), as /proc lists them now."""
    found = [pid]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def tree_cpu_seconds(pid: int) -> float:
    """`cpu_seconds` of a process and its children (a server's supervisor and its workers)."""
    return sum(cpu_seconds(process) for process in process_tree(pid))
