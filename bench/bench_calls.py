#!/usr/bin/env python3
"""Python function calls per request on the renderer's paths: a count, not a time.

    .venv/bin/python bench/bench_calls.py [--requests 1000] [--top 8] [--json FILE] [--time [--rounds 5]]
        [--erasures 0]

Wall-clock figures move with whatever else the machine runs; the number of Python function
calls a request makes does not. Run in two checkouts (before and after a refactor), this
says whether the request path does more work, and where: it is the check that a change of
structure did not add work per request. Setup is `bench_renderer.py`'s (its embedded Redis,
example campaign, published zone sets and tokens); the apps are driven in-process through
ASGI (no socket, no server), after a warm-up, with a profiler counting the calls made on
the event loop's thread. The event writer's thread is stopped, and what it would write is
written between passes (`writer_held`): only the request path is counted and timed.

Paths, as in `bench_renderer.py`: `cookie` (landing page, returning visitor, cached),
`first` (the same with the returning-visitor cache off: a first view), `zones`
(`/v1/zones` with a link token, cached payload), `miss` (a different account each request:
Redis read and render), and the arrivals: `link_first` (a link token never seen before on
each request, zone sets cached), `link_again` (the same 32 links again, no cookie),
`qr` (`/q/<token>`, every token new), `ip` (a trusted proxy's `X-Forwarded-For` in an
account's range), `anonymous`. `--erasures N`: N erased subjects, none a visitor, on the
tenant's erasure list first (`bench_renderer.erase_others`), so tokens are checked against it.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_renderer as br  # noqa: E402
import redis  # noqa: E402

from server.app import create_app  # noqa: E402
from server.redis_guard import renderer_redis_client  # noqa: E402
from server.tuning import RendererTuning  # noqa: E402
from welcomemat.settings import Settings  # noqa: E402
from welcomemat.storage.embedded_redis import temporary_redis  # noqa: E402

ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]
PATHS = ("cookie", "first", "zones", "miss", "link_first", "link_again", "qr", "ip", "ip_new", "anonymous")
WARM_UP = 64


async def lifespan(app: ASGIApp, queue: asyncio.Queue[dict[str, str]], started: asyncio.Event) -> None:
    async def receive() -> dict[str, str]:
        return await queue.get()

    async def send(message: dict[str, str]) -> None:
        started.set()

    await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)


def bench_app(url: str, tuning: RendererTuning | None = None) -> ASGIApp:
    """The renderer as the in-process benches build it: `bench_renderer.py`'s secret, host and
    trusted proxy, the Redis at `url`."""
    settings = Settings.from_env(
        {
            "WELCOMEMAT_SECRET": br.SECRET,
            "REDIS_URL": url,
            "WELCOMEMAT_ALLOWED_HOSTS": "127.0.0.1",
            "WELCOMEMAT_TRUSTED_PROXIES": br.TRUSTED_PROXY,
        }
    )
    return create_app(settings, redis_client=renderer_redis_client(url), tuning=tuning)


async def start(app: ASGIApp) -> tuple[asyncio.Queue[dict[str, str]], asyncio.Task[None]]:
    """`app` started (its lifespan); to stop it, put `{"type": "lifespan.shutdown"}` on the
    queue and await the task."""
    queue: asyncio.Queue[dict[str, str]] = asyncio.Queue()
    started = asyncio.Event()
    task = asyncio.create_task(lifespan(app, queue, started))
    await queue.put({"type": "lifespan.startup"})
    await started.wait()
    return queue, task


def writer_held(app: ASGIApp) -> Callable[[], None]:
    """Stops the app's event writer thread; returns what writes the events queued since (call it
    between timed passes, outside them).

    In a served process the event loop lets go of the interpreter lock on every turn (uvloop
    polls its sockets without it), and a writer thread waiting for the lock takes it then. Driven
    in process the loop never polls: a waiting writer gets the lock only when a piece of the
    request lets go of it (zlib, a system call) or at the 5 ms switch interval, and each such
    hand-over (two futex calls, two context switches) was counted as that piece's CPU: ~8 µs of
    the ~11 that inflating a QR token seemed to cost a scan in process (bench/README.md). With
    the writer stopped, a pass measures the request path's own work; the writer's CPU is
    measured served (`thread_split.py`). A pass holds its events until `drain`: one of more
    requests than the queue's bound (`RendererTuning.event_queue_max`, 10,000) drops the rest,
    counted, as a served renderer would."""
    events = app.state.renderer.events  # type: ignore[attr-defined]
    events.close()

    def drain() -> None:
        while events.flush_once():
            pass

    return drain


async def request(app: ASGIApp, target: str, headers: dict[str, str]) -> int:
    path, _, query = target.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "headers": [(b"host", b"127.0.0.1")] + [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 80),
        "root_path": "",
        "state": {},
    }
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    await app(scope, receive, send)
    return status[0]


async def measure(
    url: str, requests: int, rounds: int = 0, erasures: int = 0
) -> tuple[dict[str, collections.Counter[str]], dict[str, list[float]]]:
    """Calls per request of each path; with `rounds`, also the event loop thread's CPU per
    request of `rounds` unprofiled passes per path (in microseconds, sorted). `erasures`: that
    many subjects, none a visitor, on the tenant's erasure list first."""
    visitors = br.publish(redis.Redis.from_url(url), 2_000, 64, (2 + rounds) * requests + WARM_UP)
    if erasures:
        br.erase_others(redis.Redis.from_url(url), visitors, erasures)
    tunings = {
        "cookie": RendererTuning(),
        "first": RendererTuning(known_visitor_entries=0),
        "miss": RendererTuning(zone_cache_entries=1, render_cache_entries=1),
    }
    apps: dict[str, ASGIApp] = {name: bench_app(url, tuning) for name, tuning in tunings.items()}
    for path in ("zones", "link_first", "link_again", "qr", "ip", "ip_new", "anonymous"):
        apps[path] = apps["cookie"]
    queues: dict[str, asyncio.Queue[dict[str, str]]] = {}
    tasks = []
    drains = []
    for name in tunings:
        queues[name], task = await start(apps[name])
        tasks.append(task)
        drains.append(writer_held(apps[name]))
    cookie = f"wm_{br.CAMPAIGN}="
    loads = br.loads(visitors)
    loads["first"] = loads["cookie"]
    loads["miss"] = br.Request(br.PATH, visitors.cookies, "Cookie", cookie)
    # the first-click accounts' zone sets and pages loaded, as bench_renderer.py does
    for account_cookie in visitors.cookies[: br.FIRST_CLICK_ACCOUNTS]:
        await request(apps["cookie"], br.PATH, {"Cookie": cookie + account_cookie})
    sent = dict.fromkeys(PATHS, 0)

    async def drive(path: str, n: int) -> None:
        load = loads[path]
        for _ in range(n):
            target, headers = load.target(load.pool[sent[path] % len(load.pool)])
            sent[path] += 1
            status = await request(apps[path], target, headers)
            if status != (303 if path == "qr" else 200):
                raise SystemExit(f"{path}: {target} answered {status}")

    def drain() -> None:
        for each in drains:
            each()

    for path in PATHS:
        await drive(path, WARM_UP)
        drain()
    loop_thread = threading.get_ident()
    counts: dict[str, collections.Counter[str]] = {}
    for path in PATHS:
        counter: collections.Counter[str] = collections.Counter()

        def count(
            frame: FrameType, event: str, arg: object, counter: collections.Counter[str] = counter
        ) -> None:
            if event == "call" and threading.get_ident() == loop_thread:
                code = frame.f_code
                counter["/".join(Path(code.co_filename).parts[-2:]) + ":" + code.co_name] += 1

        sys.setprofile(count)
        try:
            await drive(path, requests)
        finally:
            sys.setprofile(None)
        counts[path] = counter
        drain()
    # The event loop thread's CPU (the request path; not the event writer's thread), per pass.
    # Passes alternate between the paths; the fastest pass is the least disturbed by other work
    # on the machine. First clicks and QR scans go on with tokens never seen before.
    # Not `miss`: its accounts are remembered as returning visitors after its first pass.
    times: dict[str, list[float]] = {path: [] for path in PATHS if path != "miss"}
    for _ in range(rounds):
        for path in times:
            started = time.thread_time()
            await drive(path, requests)
            times[path].append((time.thread_time() - started) / requests * 1e6)
            drain()
    for values in times.values():
        values.sort()
    for name in tunings:
        await queues[name].put({"type": "lifespan.shutdown"})
    await asyncio.gather(*tasks)
    return counts, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1_000, help="measured requests per path")
    parser.add_argument("--top", type=int, default=8, help="functions listed per path (most called)")
    parser.add_argument("--json", type=Path, help="also write every count here (to compare checkouts)")
    parser.add_argument(
        "--time",
        action="store_true",
        help="also the request path's CPU per request: fastest and median of --rounds unprofiled passes",
    )
    parser.add_argument("--rounds", type=int, default=5, help="timed passes per path (with --time)")
    parser.add_argument(
        "--erasures", type=int, default=0, help="erased subjects on the tenant's list (none a visitor)"
    )
    args = parser.parse_args()
    if args.requests < 1 or args.rounds < 1 or args.top < 0 or args.erasures < 0:
        parser.error("--requests and --rounds at least 1, --top and --erasures 0 or more")
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
        rounds = args.rounds if args.time else 0
        counts, times = asyncio.run(measure(url, args.requests, rounds, args.erasures))
    print(f"Python function calls per request on the event loop's thread ({args.requests} requests a path)")
    timed = args.time and args.rounds > 0
    print(f"{'path':10} {'calls/request':>14}" + (f" {'cpu us min':>11} {'median':>7}" if timed else ""))
    for path in PATHS:
        cpu = ""
        if timed:
            spent = times.get(path)
            cpu = f" {spent[0]:11.1f} {spent[len(spent) // 2]:7.1f}" if spent else f" {'-':>11} {'-':>7}"
        print(f"{path:10} {sum(counts[path].values()) / args.requests:14.2f}{cpu}")
    for path in PATHS:
        print(f"\n{path}: the most called")
        for name, n in counts[path].most_common(args.top):
            print(f"  {n / args.requests:7.2f}  {name}")
    if args.json:
        args.json.write_text(json.dumps({p: dict(c) for p, c in counts.items()}, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
