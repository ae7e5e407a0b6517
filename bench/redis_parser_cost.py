#!/usr/bin/env python3
"""The client's CPU per Redis call, replies parsed by hiredis (C) or by redis-py's Python parser.

    .venv/bin/python bench/redis_parser_cost.py [--rounds 5]

The renderer reads a zone set on a cache miss (a GET of ~1.5 KB) in a worker thread that holds
the interpreter lock while it parses; precompute publishes in pipelines; the sync reads stream
entries. Each call below runs against an embedded Redis with each parser (`parser_class`, both
in one process), alternating; the figure is the calling thread's CPU per call (`thread_time`),
the fastest of `--rounds` passes. `redis[hiredis]` is a dependency since 2026-12-04.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
from redis._parsers import _HiredisParser, _RESP2Parser  # noqa: E402

from welcomemat.storage.embedded_redis import temporary_redis  # noqa: E402

PARSERS = {"hiredis": _HiredisParser, "python": _RESP2Parser}


def calls(client: redis.Redis) -> dict[str, tuple[Callable[[], object], int]]:
    def pipeline() -> None:
        pipe = client.pipeline(transaction=False)
        for _ in range(32):
            pipe.get("bench:zone_set")
        pipe.execute()

    return {
        "GET of 1.5 KB (a zone-set read)": (lambda: client.get("bench:zone_set"), 5_000),
        "pipeline of 32 such GETs": (pipeline, 300),
        "XRANGE of 200 entries of 15 fields": (lambda: client.xrange("bench:stream", count=200), 100),
        "XRANGE of 4 batch entries of 50": (lambda: client.xrange("bench:batches", count=200), 1_000),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
        setup = redis.Redis.from_url(url)
        setup.set("bench:zone_set", "x" * 1500)
        for _ in range(200):
            setup.xadd("bench:stream", {f"field{j}": f"value {j}" for j in range(15)})
        for _ in range(4):
            setup.xadd("bench:batches", {"events.v1": "[" + ",".join(['["e","view","acme"]'] * 50) + "]"})
        clients = {name: redis.Redis.from_url(url, parser_class=cls) for name, cls in PARSERS.items()}
        best: dict[tuple[str, str], float] = {}
        for _ in range(args.rounds):
            for name, client in clients.items():
                for label, (call, n) in calls(client).items():
                    started = time.thread_time()
                    for _ in range(n):
                        call()
                    cost = (time.thread_time() - started) / n * 1e6
                    best[(name, label)] = min(best.get((name, label), cost), cost)
        print(f"{'call':<36} {'hiredis us':>11} {'python us':>10} {'python/hiredis':>15}")
        for label in calls(clients["hiredis"]):
            fast, slow = best[("hiredis", label)], best[("python", label)]
            print(f"{label:<36} {fast:>11.1f} {slow:>10.1f} {slow / fast:>15.1f}")


if __name__ == "__main__":
    main()
