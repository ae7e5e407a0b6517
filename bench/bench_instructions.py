#!/usr/bin/env python3
"""Machine instructions per request on the renderer's arrival paths, counted by callgrind.

    .venv/bin/python bench/bench_instructions.py [--paths link_first qr cookie ip anonymous]
        [--requests 500 2500] [--checkout DIR]

A time per request moves with whatever else the machine runs (on a shared machine, by ±15%
from one run to the next); the instructions a request executes do not. Each path runs twice
under `valgrind --tool=callgrind`, with few and with many requests, from the same setup
(`bench_calls.py`'s: embedded Redis, the example campaign, 1,000 zone sets, tokens, IP
ranges; the app driven in process through ASGI, the event writer's thread included; hash
seed fixed), so the difference divided by the extra requests is what one request costs,
setup and start-up cancelled out. `--checkout DIR` counts another checkout of the project
(its packages put first on the path) with this one's script: run it on the commit before a
change and on the change itself.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("link_first", "qr", "cookie", "ip", "ip_new", "anonymous", "link_again")
WARM_UP = 500
_COLLECTED = re.compile(r"Collected : (\d+)")


def drive(path: str, requests: int, pool: int, checkout: Path) -> None:
    """Set up and serve `requests` requests of `path` (after a warm-up): the counted program.
    The project's packages come from `checkout`, the bench's helpers from this one."""
    sys.path[:0] = [str(checkout), str(ROOT / "bench")]
    # The project's top-level packages imported from `checkout` first: the bench helpers put
    # their own checkout at the front of the path, and a package's modules then come from
    # wherever the package itself was found.
    for package in ("welcomemat", "server", "precompute", "outbound", "cli", "templates"):
        found = Path(next(iter(importlib.import_module(package).__path__))).resolve().parent
        if found != checkout.resolve():
            raise SystemExit(f"{package} was imported from {found}, not {checkout}")
    import bench_calls as bc
    import bench_renderer as br
    import redis

    from welcomemat.storage.embedded_redis import temporary_redis

    async def serve(url: str) -> None:
        visitors = br.publish(redis.Redis.from_url(url), 1_000, 64, pool)  # the same setup for any count
        app = bc.bench_app(url)
        queue, lifespan = await bc.start(app)
        cookie = f"wm_{br.CAMPAIGN}="
        for account_cookie in visitors.cookies[: br.FIRST_CLICK_ACCOUNTS]:
            await bc.request(app, br.PATH, {"Cookie": cookie + account_cookie})
        load = br.loads(visitors)[path]
        for n in range(WARM_UP + requests):
            target, headers = load.target(load.pool[n % len(load.pool)])
            status = await bc.request(app, target, headers)
            if status != (303 if path == "qr" else 200):
                raise SystemExit(f"{path}: {target} answered {status}")
            if n % 50 == 0:
                await asyncio.sleep(0.001)  # the event writer's thread writes, as under load
        await asyncio.sleep(0.3)
        await queue.put({"type": "lifespan.shutdown"})
        await lifespan

    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
        asyncio.run(serve(url))


def count(path: str, requests: int, pool: int, checkout: Path) -> int:
    """Instructions the whole program executed (callgrind's total)."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--drive",
        path,
        str(requests),
        str(pool),
        str(checkout),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{path} x {requests}: valgrind exited {done.returncode}\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    if sys.argv[1:2] == ["--drive"]:
        drive(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS[:5]))
    parser.add_argument("--requests", nargs=2, type=int, default=[500, 2_500], metavar=("FEW", "MANY"))
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the project checkout counted")
    args = parser.parse_args()
    few, many = sorted(args.requests)
    if few == many or few < 1:
        parser.error("--requests: two different positive counts")
    if not (args.checkout / "server" / "app.py").is_file():
        parser.error(f"--checkout: {args.checkout} is not a checkout of this project (no server/app.py)")
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (Debian: apt-get install valgrind)")
    pool = WARM_UP + many  # first clicks and scans: every token new, in both runs
    print(f"instructions per request: (count at {many} - count at {few}) / {many - few}; {args.checkout}")
    for path in args.paths:
        per_request = (count(path, many, pool, args.checkout) - count(path, few, pool, args.checkout)) / (
            many - few
        )
        print(f"{path:12} {per_request:12,.0f}", flush=True)


if __name__ == "__main__":
    main()
