#!/usr/bin/env python3
"""What the traced servers' slow requests waited for (`bench/tail_trace`).

    .venv/bin/python bench/tail_report.py /tmp/trace

For each server the bench started with `BENCH_TRACE=/tmp/trace PYTHONPATH=bench/tail_trace`
(the renderer, the same-work reference, the bare page): its requests' time inside the process,
split into the wait for the event loop (parsed to called) and the app's own time (called to
returned), for first clicks (`wm=`) and the rest; its garbage-collector passes; how late its
event loop and its interpreter lock answered; the renderer's zone-set reads that awaited Redis
and its background refreshes; and the slowest requests with what overlapped them.

Time outside the process (the request waiting in the socket for the loop's next turn, the
kernel, the load generator) is in wrk's figures, not here: a p99 here far below wrk's says the
tail is made outside the server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else 0.0


def who(argv: list[str]) -> str:
    line = " ".join(argv)
    if "--serve-bare" in line:
        return "bare page"
    if "--serve-reference" in line:
        return "reference"
    return "renderer"


def report(path: Path, trace: dict[str, Any]) -> None:
    flat = trace["requests"]
    requests = [flat[i : i + 4] for i in range(0, len(flat), 4)]
    print(f"\n{who(trace['argv'])} (pid {path.stem}): {len(requests):,} requests")
    for label, flag in (("first clicks (wm=)", 1.0), ("other requests", 0.0)):
        rows = [r for r in requests if r[3] == flag]
        if not rows:
            continue
        total = [(r[2] - r[0]) * 1e3 for r in rows]
        waited = [(r[1] - r[0]) * 1e3 for r in rows]
        app = [(r[2] - r[1]) * 1e3 for r in rows]
        print(
            f"  {label:20s} {len(rows):>8,}  in process ms p50 {percentile(total, 0.5):6.2f} "
            f"p99 {percentile(total, 0.99):6.2f} max {max(total):6.1f} | waited for the loop p99 "
            f"{percentile(waited, 0.99):6.2f} | app p50 {percentile(app, 0.5):5.2f} "
            f"p99 {percentile(app, 0.99):5.2f} max {max(app):6.1f}"
        )
    for generation in (0, 1, 2):
        passes = [c[1] for c in trace["collections"] if c[2] == generation]
        if passes:
            print(
                f"  gc generation {generation}: {len(passes):>5} passes, {sum(passes):7.1f} ms in all, "
                f"longest {max(passes):6.2f} ms"
            )
    for label, key in (("event loop", "loop_late"), ("interpreter lock", "lock_late")):
        late = [x[1] for x in trace[key]]
        print(
            f"  {label} answered >2 ms late {len(late):,} times, >20 ms {sum(1 for x in late if x > 20):,} "
            f"times, at worst {max(late, default=0.0):.1f} ms"
        )
    reads = [r[1] for r in trace["zone_reads"]]
    if reads or trace["refreshes"]:
        print(
            f"  zone-set reads past the cache: {len(reads):,}, p99 {percentile(reads, 0.99):.1f} ms, "
            f"longest {max(reads, default=0.0):.1f} ms; background refreshes {len(trace['refreshes']):,}"
        )
    slowest = sorted(requests, key=lambda r: r[1] - r[2])[:5]
    for parsed, called, returned, wm in sorted(slowest):
        overlapping = [
            f"gc{c[2]} {c[1]:.1f} ms"
            for c in trace["collections"]
            if c[0] < returned and c[0] + c[1] / 1e3 > called
        ]
        reads_then = [
            f"zone read {r[1]:.1f} ms"
            for r in trace["zone_reads"]
            if r[0] < returned and r[0] + r[1] / 1e3 > called
        ]
        meanwhile = ", ".join(overlapping + reads_then[:3]) or "nothing recorded"
        app_ms, waited_ms = 1e3 * (returned - called), 1e3 * (called - parsed)
        kind = "wm=" if wm else "no wm="
        print(
            f"    at {called:8.3f} s: app {app_ms:6.1f} ms, waited {waited_ms:5.1f} ms, {kind}; "
            f"meanwhile: {meanwhile}"
        )


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.split("\n\n")[1])
    folder = Path(sys.argv[1])
    traces = sorted(folder.glob("*.json"))
    if not traces:
        raise SystemExit(
            f"{folder}: no traces (run the bench with BENCH_TRACE={folder} PYTHONPATH=bench/tail_trace)"
        )
    for path in traces:
        report(path, json.loads(path.read_text()))


if __name__ == "__main__":
    main()
