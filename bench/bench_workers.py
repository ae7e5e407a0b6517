#!/usr/bin/env python3
"""Distributed precompute: accounts/second with one `welcomemat worker` process vs two.

    .venv/bin/python bench/bench_workers.py [--accounts 5000] [--repeat 3]

Starts its own embedded Redis in a temp folder (never touches yours). For each measurement
the database is emptied, the same freshly generated accounts are enqueued (offline
provider), and N `welcomemat worker --once` processes drain the stream. Measured in the
same run:

- baseline: one worker process;
- two worker processes on the same stream (each worker is CPU-bound: on a 2-core machine
  the ideal ratio is 2.0, less whatever Redis and the OS take);
- for orientation, a local run (`PrecomputeRun.run`, no stream) in this process;
- the machine's own ceiling: how much more work two CPU-bound Python processes get done
  than one (2.0 on two free cores; less on hyperthreads, a CPU quota or a busy host).

Two rates per row: `wall/s` counts from starting the workers to the last acknowledgement
(interpreter start-up included, what an operator sees); `steady/s` from the first
acknowledgement to the last (start-up excluded). The ratio uses the steady rates. The
setups are measured interleaved, `--repeat` times each, and the best is kept (as `timeit`
does): on a shared machine, slower repeats measure the neighbours.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.queue import enqueue_run
from precompute.run import PrecomputeRun
from welcomemat import keys
from welcomemat.campaign.contract import load_campaign
from welcomemat.records.accounts import read_accounts
from welcomemat.storage.embedded_redis import temporary_redis
from welcomemat.zones.contract import load_zone_contracts

ROOT = Path(__file__).resolve().parents[1]
WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
_POLL_S = 0.005


def generator() -> Any:
    spec = importlib.util.spec_from_file_location("make_accounts", ROOT / "examples" / "make_accounts.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def new_run(client: redis.Redis) -> PrecomputeRun:
    zones = dict(load_zone_contracts(ROOT / "zones"))
    campaign = load_campaign(ROOT / "examples" / "campaign.yaml", zones)
    return PrecomputeRun(
        client=client,
        campaign=campaign,
        zones=zones,
        policy=build_policy(campaign, None),
        provider=OfflineComposer(),
    )


def measure_workers(client: redis.Redis, url: str, accounts_path: Path, workers: int) -> tuple[float, float]:
    """(wall accounts/s, steady accounts/s) of `workers` processes draining one enqueued run."""
    client.flushdb()
    run = new_run(client)
    read = read_accounts(accounts_path)
    record = enqueue_run(
        run,
        read.accounts,
        accounts_file=str(accounts_path),
        rows_read=read.lines_read,
        malformed=[],
        provider_options={"concurrency": 1},
    )
    run_key = keys.run_key(record.tenant, record.campaign, record.run_id)
    env = {**os.environ, "REDIS_URL": url}
    command = [WELCOMEMAT, "worker", "--once", "--campaign", f"{record.tenant}/{record.campaign}"]
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [*command, "--name", f"bench-{i}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for i in range(workers)
    ]
    first_at, first_done = None, 0
    while True:
        done = int(client.hget(run_key, "processed") or 0)  # type: ignore[arg-type]
        now = time.perf_counter()
        if first_at is None and done:
            first_at, first_done = now, done
        if done >= record.total:
            break
        if all(p.poll() is not None for p in procs):
            raise SystemExit(f"workers exited with {done} of {record.total} accounts processed")
        time.sleep(_POLL_S)
    for proc in procs:
        proc.wait(timeout=60)
    assert first_at is not None
    wall = record.total / (now - started)
    steady = (record.total - first_done) / (now - first_at) if now > first_at else wall
    return wall, steady


def _spin(seconds: float) -> int:
    """Pure-Python CPU work for about `seconds`; returns the loops done."""
    loops, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(10_000):
            loops += 1
    return loops


def machine_ceiling(seconds: float = 2.0) -> float:
    """Loops two spinning processes do together, over what one does alone."""
    code = f"import bench_workers as b; print(b._spin({seconds}))"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}

    def spin(n: int) -> int:
        procs = [
            subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
            for _ in range(n)
        ]
        return sum(int(p.communicate()[0]) for p in procs)

    return spin(2) / spin(1)


def measure_local(client: redis.Redis, accounts_path: Path) -> float:
    client.flushdb()
    report = new_run(client).run(accounts_path)
    return report.accounts / report.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--accounts", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3, help="measurements per setup; the best is kept")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
        client = redis.Redis.from_url(url)
        accounts_path = Path(tmp) / "accounts.jsonl"
        generator().write(accounts_path, __import__("datetime").date.today(), args.accounts)
        print(f"{args.accounts} accounts, offline provider, {os.cpu_count()} cores")
        print(f"{'setup':<28} {'wall/s':>8} {'steady/s':>9} {'x baseline':>10}")
        setups = {"baseline: 1 worker process": 1, "2 worker processes": 2}
        runs: dict[str, list[tuple[float, float]]] = {label: [] for label in setups}
        for _ in range(args.repeat):
            for label, workers in setups.items():
                runs[label].append(measure_workers(client, url, accounts_path, workers))
        best = {label: (max(w for w, _ in got), max(s for _, s in got)) for label, got in runs.items()}
        base = best["baseline: 1 worker process"][1]
        for label, (wall, steady) in best.items():
            print(f"{label:<28} {wall:8.0f} {steady:9.0f} {steady / base:10.2f}")
        local = max(measure_local(client, accounts_path) for _ in range(args.repeat))
        print(f"{'local run (no stream)':<28} {local:8.0f} {'':>9} {local / base:10.2f}")
        two = best["2 worker processes"][1]
        ceiling = machine_ceiling()
        print(f"two/one (steady): {two / base:.2f}; the machine's own two/one ceiling: {ceiling:.2f}")


if __name__ == "__main__":
    main()
