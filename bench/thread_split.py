#!/usr/bin/env python3
"""Where a served request's CPU goes, thread by thread: the renderer against the reference.

    .venv/bin/python bench/thread_split.py [--paths link_first cookie] [--rounds 3] [--seconds 5]
        [--first-clicks 60000] [--reference ../shared/bench/same_work_app.py] [--workers 2]

`bench_renderer.py` gives each server's CPU per request as one figure. This one splits it by
thread (Linux's /proc: each thread's user and system CPU, its voluntary and involuntary context
switches, and the time it spent runnable but waiting for the CPU, from `schedstat`), over the
same load: one worker each, pinned to CPU 0, wrk on CPU 1 (Redis not pinned: unlike
`bench_renderer.py`, the kernel places it), the paths in alternation (renderer and reference),
the setup `bench_renderer.py`'s (its embedded Redis, published zone sets, tokens, warm-up);
`--workers 2` runs two worker processes each, unpinned, wrk too (as `bench_renderer.py
--workers 2` does). It answers whether a thread besides the event loop's (the event
writer's, the zone-set readers', the collector's) costs the requests their CPU or their
latency: its own CPU per request, and the event loop thread's involuntary switches and
waiting that it causes on the one core.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_renderer as br  # noqa: E402
import redis  # noqa: E402
from proc_stats import CLOCK_TICKS, process_tree  # noqa: E402

from welcomemat.storage.embedded_redis import temporary_redis  # noqa: E402


@dataclass(frozen=True)
class ThreadSample:
    name: str
    user_s: float
    system_s: float
    voluntary: int
    involuntary: int
    runnable_wait_s: float  # runnable, waiting for a CPU (schedstat's second field)


Samples = dict[tuple[int, int], ThreadSample]


def thread_samples(pid: int) -> Samples:
    """Every thread of `pid` and its descendants, by (process id, thread id); threads that
    end while being read are left out."""
    found: Samples = {}
    for process in process_tree(pid):
        for task in Path(f"/proc/{process}/task").glob("*"):
            try:
                name = (task / "comm").read_text().strip()
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
                status = (task / "status").read_text()
                schedstat = (task / "schedstat").read_text().split()
            except OSError:
                continue
            switches = {
                key.strip(): int(value)
                for key, _, value in (line.partition(":") for line in status.splitlines())
                if key.strip() in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")
            }
            found[(process, int(task.name))] = ThreadSample(
                name,
                int(fields[11]) / CLOCK_TICKS,
                int(fields[12]) / CLOCK_TICKS,
                switches.get("voluntary_ctxt_switches", 0),
                switches.get("nonvoluntary_ctxt_switches", 0),
                int(schedstat[1]) / 1e9,
            )
    return found


def per_request(before: Samples, after: Samples, n: int) -> list[str]:
    """One line per thread that did anything: µs of CPU (its system part), context switches and
    µs waiting for the CPU, per request."""
    lines = []
    for key, end in sorted(after.items(), key=lambda kv: -(kv[1].user_s + kv[1].system_s)):
        start = before.get(key, ThreadSample(end.name, 0.0, 0.0, 0, 0, 0.0))
        cpu = (end.user_s + end.system_s - start.user_s - start.system_s) / n * 1e6
        system = (end.system_s - start.system_s) / n * 1e6
        voluntary = (end.voluntary - start.voluntary) / n
        involuntary = (end.involuntary - start.involuntary) / n
        wait = (end.runnable_wait_s - start.runnable_wait_s) / n * 1e6
        if cpu >= 0.5 or voluntary >= 0.01 or involuntary >= 0.01:
            lines.append(
                f"    thread {key[1]:>7} {end.name:15} cpu {cpu:7.1f} us (system {system:5.1f})  "
                f"switches {voluntary:6.3f} voluntary {involuntary:6.3f} involuntary  waiting {wait:6.1f} us"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", nargs="+", default=["link_first", "cookie"], choices=br.REFERENCE_KINDS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--accounts", type=int, default=2_000)
    parser.add_argument("--first-clicks", type=int, default=60_000)
    parser.add_argument("--reference", type=Path, default=br.DEFAULT_REFERENCE)
    parser.add_argument("--workers", type=int, choices=(1, 2), default=1, help="worker processes a server")
    args = parser.parse_args()
    if not args.reference.is_file():
        parser.error(f"--reference: no file at {args.reference}")
    if args.rounds < 1 or args.seconds <= 0 or args.connections < 1 or args.first_clicks < 1:
        parser.error("--rounds, --connections and --first-clicks >= 1, --seconds > 0")
    if not br.ensure_wrk():
        raise SystemExit("wrk is needed (Debian: apt-get install wrk)")
    with tempfile.TemporaryDirectory() as tmp_name, temporary_redis(Path(tmp_name) / "redis") as url:
        tmp = Path(tmp_name)
        visitors = br.publish(redis.Redis.from_url(url), args.accounts, 64, args.first_clicks)
        ref = br.reference_tokens(args.reference, args.first_clicks)
        renderer, renderer_url = br.start_renderer(url, tmp, "fast", args.workers)
        reference = None
        try:
            page_bytes, _ = br.check_paths(renderer_url, visitors)
            reference = br.start_reference(args.reference, url, page_bytes, "fast", args.workers)
            br.check_reference(reference[1], ref, visitors, page_bytes)
            cookie = f"wm_{br.CAMPAIGN}="
            warm = [(br.PATH, {"Cookie": cookie + c}) for c in visitors.cookies[: br.FIRST_CLICK_ACCOUNTS]]
            assert asyncio.run(br.drive(int(renderer_url.rsplit(":", 1)[1]), warm * 8, 16)) == 0
            warm = [(br.PATH, {"Cookie": "wm_id=" + c}) for c in ref.cookies]
            assert asyncio.run(br.drive(int(reference[1].rsplit(":", 1)[1]), warm * 8, 16)) == 0
            servers = [
                ("renderer", renderer, renderer_url, br.loads(visitors)),
                ("reference", reference[0], reference[1], br.reference_loads(ref, visitors)),
            ]
            offsets: dict[tuple[str, str], int] = {}
            placed = (
                "one worker each on CPU 0, wrk on CPU 1, Redis unpinned"
                if args.workers == 1
                else "two workers each, unpinned, as are wrk and Redis"
            )
            print(
                f"{placed}, wrk -t1 -c{args.connections}, "
                f"{args.seconds:g} s a run; per request: each thread's CPU, context switches, and "
                "time runnable but waiting for the CPU"
            )
            for round_ in range(args.rounds):
                for path in args.paths:
                    for who, process, base, load in servers if round_ % 2 == 0 else servers[::-1]:
                        before = thread_samples(process.pid)
                        at = offsets.get((who, path), 0)
                        result = br.run_wrk(
                            base,
                            load[path],
                            args.seconds,
                            args.connections,
                            tmp,
                            at,
                            1 if args.workers == 1 else None,
                        )
                        after = thread_samples(process.pid)
                        offsets[(who, path)] = at + result.requests
                        n = max(result.requests, 1)
                        print(
                            f"round {round_ + 1} {path:11} {who:9} {result.rps:8.0f} req/s  "
                            f"p99 {result.p99_ms:6.1f} ms"
                        )
                        print("\n".join(per_request(before, after, n)), flush=True)
        finally:
            br.stop(renderer)
            if reference is not None:
                br.stop(reference[0])


if __name__ == "__main__":
    main()
