#!/usr/bin/env python3
"""What the renderer does per request that the same-work reference does not, each piece
measured by switching it off in the served process.

    .venv/bin/python bench/bench_extra_work.py [--rounds 3] [--seconds 4]
        [--paths cookie link_first qr] [--without events clicks events,clicks thread]

The reference (`../shared/bench/same_work_app.py`) writes one event per request too, but from
its event loop, and signs no click token: a hosted page of the renderer signs one per CTA on
every view, so that a click on it is counted for the view, zone and CTA. `thread` is not work
left out but the other way of writing the events: from the event loop, as the reference does,
instead of the renderer's writer thread (`bench/switches/sitecustomize.py`). Setup is
`bench_renderer.py`'s (embedded Redis, example campaign, 1,000 zone sets, first-click tokens
never seen before); one worker on CPU 0, wrk and Redis on CPU 1. For each round, each
variant's server is started (`welcomemat serve`, with `bench/switches` on its `PYTHONPATH` and
`WELCOMEMAT_BENCH_WITHOUT` naming what is off) and every path is run; the table gives, per
path and variant, the median req/s, the server's CPU per request and its difference from the
full renderer's (the cost of the switched-off work), and p99.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_renderer as br  # noqa: E402
import httpx  # noqa: E402
import redis  # noqa: E402
from proc_stats import tree_cpu_seconds  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from welcomemat import keys  # noqa: E402
from welcomemat.storage.embedded_redis import temporary_redis  # noqa: E402

SWITCHES = ROOT / "bench" / "switches"
PATHS = ("cookie", "link_again", "link_first", "qr", "ip", "anonymous")
SWITCH_NAMES = ("events", "clicks", "thread")  # what bench/switches/sitecustomize.py knows how to turn off


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=["cookie", "link_first", "qr"])
    parser.add_argument("--without", nargs="+", default=["events", "clicks", "events,clicks"])
    parser.add_argument("--first-clicks", type=int, default=300_000)
    args = parser.parse_args()
    if args.rounds < 1 or args.seconds < 1 or args.first_clicks < 1:
        parser.error("--rounds, --seconds and --first-clicks at least 1")
    for variant in args.without:
        unknown = [name for name in variant.split(",") if name not in SWITCH_NAMES]
        if unknown or not variant:
            parser.error(
                f"--without {variant!r}: name one or more of {', '.join(SWITCH_NAMES)}, comma-separated"
            )
    if not br.ensure_wrk():
        parser.error("wrk is needed (Debian: apt-get install wrk)")
    variants = ["", *args.without]
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    walked: dict[tuple[str, str], int] = {}
    events: dict[str, int] = {}
    requests: dict[str, int] = {}
    dropped: dict[tuple[str, str], float] = {}
    stream = keys.events_stream_key(br.TENANT)
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
        client = redis.Redis.from_url(url)
        if br.pinned(1):
            pid = str(client.info("server")["process_id"])
            subprocess.run(["taskset", "-pc", "1", pid], check=True, capture_output=True)
        visitors = br.publish(client, 1000, 32, args.first_clicks)
        loads = br.loads(visitors)
        # Each variant walks its own stretch of the first-click pools: no token is seen twice.
        stretch = args.first_clicks // len(variants)
        for _ in range(args.rounds):
            for index, variant in enumerate(variants):
                pythonpath = os.pathsep.join(filter(None, [str(SWITCHES), os.environ.get("PYTHONPATH")]))
                process, base = br.start_renderer(
                    url,
                    Path(tmp),
                    extra_env={"PYTHONPATH": pythonpath, "WELCOMEMAT_BENCH_WITHOUT": variant},
                )
                last = client.xrevrange(stream, count=1)
                served = 0
                try:
                    br.check_paths(base, visitors)
                    for path in args.paths:
                        offset = index * stretch + walked.get((variant, path), 0)
                        before = tree_cpu_seconds(process.pid)
                        run = br.run_wrk(base, loads[path], args.seconds, 64, Path(tmp), offset, 1)
                        cpu_us = (tree_cpu_seconds(process.pid) - before) / max(run.requests, 1) * 1e6
                        walked[(variant, path)] = walked.get((variant, path), 0) + run.requests
                        results.setdefault((variant, path), []).append((run.rps, cpu_us, run.p99_ms))
                        served += run.requests
                    for reason, count in dropped_events(base).items():
                        key = (variant, reason)
                        dropped[key] = dropped.get(key, 0) + count
                finally:
                    br.stop(process)
                # What the server wrote (after its last flush at shutdown), so that a variant that
                # writes its events another way shows it still writes them all.
                after = last[0][0].decode() if last else "0-0"
                events[variant] = events.get(variant, 0) + br.stream_count(client, stream, after)[1]
                requests[variant] = requests.get(variant, 0) + served
    setup = f"medians of {args.rounds} rounds of {args.seconds} s"
    print(f"one worker (CPU 0), wrk -t1 -c64 and Redis on CPU 1; {setup}")
    print(f"{'path':12s} {'without':16s} {'req/s':>8s} {'cpu us':>7s} {'saved us':>8s} {'p99 ms':>7s}")
    for path in args.paths:
        full_cpu = statistics.median(c for _, c, _ in results[("", path)])
        for variant in variants:
            rows = results[(variant, path)]
            rps, cpu, p99 = (statistics.median(r[i] for r in rows) for i in range(3))
            saved = "" if not variant else f"{full_cpu - cpu:8.1f}"
            print(f"{path:12s} {variant or '(nothing)':16s} {rps:8.0f} {cpu:7.1f} {saved:>8s} {p99:7.1f}")
    print("events written a request served, every path and round:")
    for variant in variants:
        lost = ", ".join(f"{reason} {n:,.0f}" for (v, reason), n in sorted(dropped.items()) if v == variant)
        rate = events[variant] / max(requests[variant], 1)
        print(f"  {variant or '(nothing)':16s} {rate:.3f}{'  dropped: ' + lost if lost else ''}")


def dropped_events(base: str) -> dict[str, float]:
    """The server's events dropped so far, by reason (its `/metrics`): what a variant that
    writes fewer events than it served lost them to."""
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(httpx.get(f"{base}/metrics", timeout=10).text):
        if family.name == "welcomemat_events_dropped":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    reason = sample.labels["reason"]
                    counts[reason] = counts.get(reason, 0) + sample.value
    return counts


if __name__ == "__main__":
    main()
