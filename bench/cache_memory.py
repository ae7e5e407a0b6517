#!/usr/bin/env python3
"""What a renderer's memory holds per distinct visitor, by the code that allocated it.

    .venv/bin/python bench/cache_memory.py [--visitors 3000]

`bench_renderer.py`'s zone sets and tokens on its own embedded Redis, one app with the
production cache sizes driven in process through ASGI (`bench_calls.py`'s helpers): each
visitor a landing page by cookie and a `/v1/zones` by link token, as in `bench_renderer.py
--skip-throughput`. tracemalloc counts what is still allocated afterwards, each block given
to the innermost frame in this repository's `server/` or `welcomemat/`; divided by the
visitors, that is each cache's bytes per entry while no cache is full yet (keep `--visitors`
under the smallest limit in `server/tuning.py`; the zone-set cache's TTL is an hour here, as
tracing makes a run slow). RSS is `bench_renderer.py`'s to measure.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
import bench_calls as bc  # noqa: E402
import bench_renderer as br  # noqa: E402

from server.tuning import RendererTuning  # noqa: E402
from welcomemat.storage.embedded_redis import temporary_redis  # noqa: E402

OURS = (str(ROOT / "server") + "/", str(ROOT / "welcomemat") + "/")
WARM_UP = 16
# Production sizes; no zone set expires during the (traced, slow) run.
TUNING = RendererTuning(zone_cache_ttl_s=3600.0)


async def measure(url: str, visitors: int, top: int) -> None:
    published = br.publish(redis.Redis.from_url(url), visitors + WARM_UP, visitors + WARM_UP, 0)
    app = bc.bench_app(url, TUNING)
    queue, task = await bc.start(app)
    cookie = f"wm_{br.CAMPAIGN}="

    async def visit(i: int) -> None:
        for target, headers in (
            (br.PATH, {"Cookie": cookie + published.cookies[i]}),
            (br.ZONES_PATH + published.links[i], {"Origin": br.ORIGIN}),
        ):
            if await bc.request(app, target, headers) != 200:
                raise SystemExit(f"{target} was not answered 200")

    for i in range(WARM_UP):  # imports, templates, the campaign's config
        await visit(i)
    tracemalloc.start(16)
    began = time.monotonic()
    for i in range(WARM_UP, WARM_UP + visitors):
        await visit(i)
    took = time.monotonic() - began
    await asyncio.sleep(0.5)  # the event writer's last batch
    snapshot = tracemalloc.take_snapshot()
    tracemalloc.stop()
    where: collections.Counter[str] = collections.Counter()
    for stat in snapshot.statistics("traceback"):
        site = next(
            (
                f"{Path(f.filename).relative_to(ROOT)}:{f.lineno}"
                for f in reversed(stat.traceback)
                if f.filename.startswith(OURS)
            ),
            "elsewhere",
        )
        where[site] += stat.size
    total = sum(where.values())
    print(f"{visitors:,} distinct visitors (a cookie page, a /v1/zones each) in {took:.0f} s")
    print(f"{total / 2**20:.1f} MiB held after them")
    print(f"{'allocated at':<44} {'MiB':>7} {'bytes/visitor':>13}")
    for site, size in where.most_common(top):
        print(f"{site:<44} {size / 2**20:7.2f} {size / visitors:13.0f}")
    await queue.put({"type": "lifespan.shutdown"})
    await task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--visitors", type=int, default=3_000)
    parser.add_argument("--top", type=int, default=12, help="allocation sites listed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
        asyncio.run(measure(url, args.visitors, args.top))


if __name__ == "__main__":
    main()
