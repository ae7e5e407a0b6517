#!/usr/bin/env python3
"""Two candidates for a round's long tail, round by round: Redis's AOF rewrites and the
virtual CPUs' steal time.

    .venv/bin/python bench/tail_candidates.py [--path link_first] [--rounds 8] [--seconds 5]
        [--accounts 100000] [--first-clicks 200000] [--rewrite-every 2] [--workers 1]

`bench_renderer.py`'s setup (its embedded Redis pinned to CPU 1 beside wrk, the published
zone sets and tokens) and one renderer worker on CPU 0, then `--rounds` wrk runs of one path.
Each round prints wrk's req/s, p50 and p99 beside what else happened on the machine meanwhile:
the Redis forks (an AOF rewrite is one: the embedded Redis rewrites its file when it has
doubled, and the child, pinned where Redis is, runs beside wrk for as long as writing the data
takes) and each CPU's steal time from `/proc/stat` (time the hypervisor ran something else).
`--rewrite-every N` starts a rewrite 1 s into every Nth round (`BGREWRITEAOF`), so rounds with
and without one alternate on the same machine; 0 leaves Redis to rewrite when it will.
`--workers 2` runs two worker processes and wrk unpinned, Redis still on CPU 1, as
`bench_renderer.py --workers 2` does.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_renderer as br  # noqa: E402
import redis  # noqa: E402
from proc_stats import steal_seconds  # noqa: E402

from server.identify import MEMO_ENTRIES  # noqa: E402
from welcomemat.storage.embedded_redis import temporary_redis  # noqa: E402

_PATHS = ("link_first", "qr", "cookie", "link_again", "ip", "ip_new", "anonymous")


def rewriting(client: redis.Redis) -> bool:
    return bool(client.info("persistence")["aof_rewrite_in_progress"])


def start_rewrite(client: redis.Redis) -> None:
    try:
        client.bgrewriteaof()
    except redis.RedisError as exc:  # one already running, say: the round says what happened
        print(f"BGREWRITEAOF: {exc}", file=sys.stderr)


def wait_rewrite(client: redis.Redis, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while rewriting(client) and time.monotonic() < deadline:
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", choices=_PATHS, default="link_first")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--accounts", type=int, default=100_000, help="personal zone sets published")
    parser.add_argument("--first-clicks", type=int, default=200_000, help="distinct link and QR tokens")
    parser.add_argument(
        "--rewrite-every", type=int, default=2, help="start an AOF rewrite in every Nth round (0: never)"
    )
    parser.add_argument("--workers", type=int, default=1, help="worker processes (2: they and wrk unpinned)")
    args = parser.parse_args()
    too_few = args.rounds < 1 or args.connections < 1 or args.first_clicks < 1 or args.workers < 1
    if too_few or args.seconds <= 0 or args.accounts < br.FIRST_CLICK_ACCOUNTS:
        parser.error(
            "--rounds, --connections, --first-clicks and --workers >= 1, --seconds > 0 and "
            f"--accounts >= {br.FIRST_CLICK_ACCOUNTS}"
        )
    if args.rewrite_every < 0:
        parser.error("--rewrite-every: 0 or more")
    if not br.ensure_wrk():
        raise SystemExit("wrk is needed (Debian: apt-get install wrk)")
    with tempfile.TemporaryDirectory() as tmp_name, temporary_redis(Path(tmp_name) / "redis") as url:
        tmp = Path(tmp_name)
        client = redis.Redis.from_url(url)
        if br.pinned(1):
            pid = str(client.info("server")["process_id"])
            subprocess.run(["taskset", "-pc", "1", pid], check=True, capture_output=True)
        visitors = br.publish(client, args.accounts, 64, args.first_clicks)
        wait_rewrite(client)  # publishing's own rewrites, before the first round
        renderer, base = br.start_renderer(url, tmp, "fast", args.workers)
        try:
            br.check_paths(base, visitors)
            load = br.loads(visitors)[args.path]
            every = args.rewrite_every
            rewrites = (
                "no AOF rewrite started"
                if every == 0
                else f"an AOF rewrite started 1 s into round {every}, {2 * every}, ..."
            )
            placed = (
                f"one worker on CPU 0, wrk -t1 -c{args.connections} and Redis on CPU 1"
                if args.workers == 1
                else f"{args.workers} workers and wrk -t1 -c{args.connections} unpinned, Redis on CPU 1"
            )
            print(f"{args.path}: {placed}, {args.seconds:g} s a round; {rewrites}")
            offset = 0
            for round_ in range(args.rounds):
                start_one = args.rewrite_every > 0 and round_ % args.rewrite_every == args.rewrite_every - 1
                timer = threading.Timer(1.0, start_rewrite, (client,)) if start_one else None
                forks_before, steal_before = br.redis_forks(client), steal_seconds()
                started = time.monotonic()
                if timer is not None:
                    timer.start()
                wrk_cpu = 1 if args.workers == 1 else None
                result = br.run_wrk(base, load, args.seconds, args.connections, tmp, offset, wrk_cpu)
                elapsed = time.monotonic() - started
                steal_after = steal_seconds()
                if timer is not None:
                    timer.join()
                wait_rewrite(client)
                offset += result.requests
                steal = " ".join(
                    f"{cpu} {100 * (steal_after[cpu] - seconds) / elapsed:4.1f}%"
                    for cpu, seconds in steal_before.items()
                    if cpu in steal_after
                )
                print(
                    f"round {round_ + 1:>2}: {result.rps:8.0f} req/s  p50 {result.p50_ms:6.2f} ms  "
                    f"p99 {result.p99_ms:7.2f} ms  Redis forks +{br.redis_forks(client) - forks_before}  "
                    f"steal {steal or 'n/a'}",
                    flush=True,
                )
            pool = len(load.pool)
            if args.path in ("link_first", "qr") and offset > pool:
                # A token back after `pool` others: verified again if the memo let it go.
                what = "verified anew, as first ones" if pool > MEMO_ENTRIES else "remembered: not first ones"
                print(
                    f"note: {offset:,} requests walked past the {pool:,} tokens (--first-clicks); "
                    f"the tokens that came back were {what} (the renderer remembers {MEMO_ENTRIES:,})"
                )
        finally:
            br.stop(renderer)


if __name__ == "__main__":
    main()
