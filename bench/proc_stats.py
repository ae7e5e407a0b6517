"""Process figures the benchmarks read from Linux's /proc (0 elsewhere)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "CLOCK_TICKS",
    "cpu_seconds",
    "process_tree",
    "steal_seconds",
    "tree_cpu_seconds",
    "tree_wait_seconds",
]

#: /proc's clock ticks a second (its CPU times are counted in them).
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far, all its threads (0 when /proc has none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


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


def tree_wait_seconds(pid: int) -> float:
    """Seconds the threads of a process and its children have spent runnable but not running,
    waiting for a CPU (each task's `schedstat`, second field); threads gone meanwhile are not
    counted, so compare it over a span in which they live (a server's run)."""
    total = 0
    for process in process_tree(pid):
        for schedstat in Path(f"/proc/{process}/task").glob("*/schedstat"):
            try:
                total += int(schedstat.read_text().split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return total / 1e9


def steal_seconds() -> dict[str, float]:
    """Each CPU's steal time so far (`/proc/stat`, the eighth value after the name: time the
    hypervisor ran something else); {} off Linux."""
    found: dict[str, float] = {}
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        fields = line.split()
        if fields and fields[0].startswith("cpu") and fields[0] != "cpu" and len(fields) > 8:
            found[fields[0]] = int(fields[8]) / CLOCK_TICKS
    return found
