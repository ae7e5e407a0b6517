#!/usr/bin/env python3
"""How long a visitor whose account's zone set is not cached waits, while the worker is busy.

    .venv/bin/python bench/bench_miss_latency.py [--rounds 3] [--seconds 6] [--accounts 20000]
        [--checkout PATH ...] [--switch-interval-ms MS ...] [--idle]

A send's peak is first clicks to accounts nobody read lately: each one's zone set is read
from Redis on a worker thread (`server.redis_guard`) while the event loop serves everyone
else. This serves `welcomemat serve` (one worker, CPU 0, production settings, as
`bench_renderer.py` does) under wrk's load of returning visitors (64 connections, 32 cached
accounts, CPU 1) and, beside it, one more connection that alternates a visitor of an account
never read (a zone-set miss) and a returning one (a hit), 20 ms apart. It prints wrk's req/s
and p99, and the probe's latencies: what a miss costs beyond a hit is the read's turns of the
busy event loop. `--idle` leaves wrk out (the read's own time).

`--checkout` compares code: each path (a worktree of another commit, say) is put first on the
served process's `PYTHONPATH`, alternating with this checkout round by round.
`--switch-interval-ms` compares this checkout served with other interpreter switch intervals
(`bench/switches`): how long the reading thread may wait for the interpreter lock.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_renderer as br  # noqa: E402
import redis  # noqa: E402

from welcomemat.storage.embedded_redis import temporary_redis  # noqa: E402

PACE_S = 0.02
HOT_ACCOUNTS = 32


@dataclass
class Run:
    rps: float
    p99_ms: float
    misses: list[float]
    hits: list[float]


async def _get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int, cookie: str) -> float:
    request = f"GET {br.PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: wm_{br.CAMPAIGN}={cookie}\r\n\r\n"
    started = time.perf_counter()
    writer.write(request.encode())
    head = await reader.readuntil(b"\r\n\r\n")
    if int(head.split(b" ", 2)[1]) != 200:
        raise SystemExit(f"the probe's request answered {head.split(b' ', 2)[1].decode()}")
    length = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
    await reader.readexactly(int(length.group(1)) if length else 0)
    return (time.perf_counter() - started) * 1000


async def _probe(
    port: int, fresh: list[str], hot: list[str], seconds: float
) -> tuple[list[float], list[float]]:
    """A miss, then a hit, PACE_S apart, until `seconds` pass or the fresh accounts run out."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    misses: list[float] = []
    hits: list[float] = []
    stop_at = time.monotonic() + seconds
    try:
        for n, cookie in enumerate(fresh):
            if time.monotonic() >= stop_at:
                break
            misses.append(await _get(reader, writer, port, cookie))
            await asyncio.sleep(PACE_S)
            hits.append(await _get(reader, writer, port, hot[n % len(hot)]))
            await asyncio.sleep(PACE_S)
    finally:
        writer.close()
    return misses, hits


def _one_run(
    redis_url: str,
    home: Path,
    code: tuple[str | None, dict[str, str]],
    visitors: br.Visitors,
    fresh: list[str],
    args: argparse.Namespace,
) -> Run:
    pythonpath, env = code
    process, base = br.start_renderer(
        redis_url, home, extra_env={**env, "PYTHONPATH": pythonpath} if pythonpath else env
    )
    load = br.loads(visitors)["cookie"]
    try:
        br.run_wrk(base, load, 2, args.connections, home)  # warm: the hot accounts cached
        port = int(base.rsplit(":", 1)[1])
        result: list[br.Result] = []
        wrk = threading.Thread(
            target=lambda: result.append(br.run_wrk(base, load, args.seconds, args.connections, home))
        )
        if not args.idle:
            wrk.start()
            time.sleep(0.5)  # wrk's connections open and busy
        hot = visitors.cookies[:HOT_ACCOUNTS]
        misses, hits = asyncio.run(_probe(port, fresh, hot, args.seconds - 1.5))
        if not args.idle:
            wrk.join()
        rps, p99 = (result[0].rps, result[0].p99_ms) if result else (0.0, 0.0)
        return Run(rps, p99, sorted(misses), sorted(hits))
    finally:
        br.stop(process)


def _quantile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(len(values) * q))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--accounts", type=int, default=20_000, help="personal zone sets published")
    parser.add_argument("--checkout", nargs="*", type=Path, default=[], help="other code to compare")
    parser.add_argument(
        "--switch-interval-ms", nargs="*", type=float, default=[], help="other switch intervals to compare"
    )
    parser.add_argument("--idle", action="store_true", help="no wrk load: a miss's own time")
    args = parser.parse_args()
    if args.seconds < 3 or args.rounds < 1 or args.connections < 1:
        parser.error("--seconds must be at least 3, --rounds and --connections at least 1")
    for path in args.checkout:
        if not (path / "server" / "redis_guard.py").is_file():
            parser.error(f"--checkout {path}: not a Welcomemat checkout (no server/redis_guard.py)")
    if any(ms <= 0 for ms in args.switch_interval_ms):
        parser.error("--switch-interval-ms: each interval must be above 0")
    if not br.ensure_wrk():  # the warm-up runs it, idle or not
        raise SystemExit("wrk is needed (scripts/install-test-deps.sh installs it)")
    Code = tuple[str, tuple[str | None, dict[str, str]]]
    codes: list[Code] = [("this checkout", (None, {}))]
    codes += [(str(path), (str(path.resolve()), {})) for path in args.checkout]
    switches = str(ROOT / "bench" / "switches")
    codes += [
        (f"switch interval {ms:g} ms", (switches, {"WELCOMEMAT_BENCH_SWITCH_INTERVAL_MS": str(ms)}))
        for ms in args.switch_interval_ms
    ]
    per_probe = int((args.seconds - 1.5) / (2 * PACE_S)) + 1
    needed = HOT_ACCOUNTS + per_probe * args.rounds * len(codes)
    if args.accounts < needed:
        parser.error(f"--accounts must be at least {needed} for these rounds (each miss a new account)")
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
        visitors = br.publish(redis.Redis.from_url(url), args.accounts, HOT_ACCOUNTS)
        fresh = iter(visitors.cookies[HOT_ACCOUNTS:])
        runs: dict[str, list[Run]] = {label: [] for label, _ in codes}
        print(
            f"{'round':>5} {'code':24} {'wrk req/s':>9} {'p99':>7} | {'misses':>6} {'p50':>7} {'p90':>7} "
            f"{'max':>7} | {'hit p50':>7} {'max':>7}  (ms)"
        )
        for number in range(args.rounds):
            for label, code in codes if number % 2 == 0 else codes[::-1]:
                home = Path(tempfile.mkdtemp(prefix="home-", dir=tmp))
                accounts = [next(fresh) for _ in range(per_probe)]
                run = _one_run(url, home, code, visitors, accounts, args)
                runs[label].append(run)
                print(
                    f"{number:5} {label[-24:]:24} {run.rps:9.0f} {run.p99_ms:7.1f} | {len(run.misses):6} "
                    f"{statistics.median(run.misses):7.2f} {_quantile(run.misses, 0.9):7.2f} "
                    f"{run.misses[-1]:7.2f} | {statistics.median(run.hits):7.2f} {run.hits[-1]:7.2f}",
                    flush=True,
                )
        print("medians of the rounds (the worst of any round for max):")
        for label, done in runs.items():
            print(
                f"  {label}: wrk {statistics.median(r.rps for r in done):.0f} req/s, "
                f"p99 {statistics.median(r.p99_ms for r in done):.1f} ms; "
                f"miss p50 {statistics.median(statistics.median(r.misses) for r in done):.2f}, "
                f"p90 {statistics.median(_quantile(r.misses, 0.9) for r in done):.2f}, "
                f"max {max(r.misses[-1] for r in done):.2f} ms; "
                f"hit p50 {statistics.median(statistics.median(r.hits) for r in done):.2f} ms"
            )


if __name__ == "__main__":
    main()
