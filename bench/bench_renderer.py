#!/usr/bin/env python3
"""Renderer throughput against a bare Starlette page of the same size, at 64 connections.

    .venv/bin/python bench/bench_renderer.py [--seconds 4] [--rounds 5] [--connections 64]

Starts its own embedded Redis in a temp folder, publishes the example campaign and 2,000
personal zone sets, then serves three apps, each in its own uvicorn process (one worker,
no access log, same settings):

- bare: a Starlette app answering `/c/{campaign}` with a constant HTML page as large as the
  personalised one (the ceiling: routing, one response, nothing else);
- personal: the renderer, visitor identified by cookie, zone set and page cached (the steady
  state of an email campaign's traffic), page view queued for the event stream;
- miss: the renderer with a one-entry zone-set and page cache, each request a different
  account: cookie check, Redis read, Jinja2 render, view event (the cold path).

Load comes from `wrk` (Debian's package), else an httpx async generator (slower: its own
CPU use depresses every figure; ratios remain comparable). With two or more CPUs and
`taskset`, the server under test is pinned to CPU 0, and wrk (one thread) and Redis to
CPU 1 (in production Redis is another machine), so neither steals the server's core. The
apps are measured in alternation, `--rounds` times; ratios are taken within each round,
and medians reported.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from welcomemat import keys  # noqa: E402
from welcomemat.campaign import load_campaign  # noqa: E402
from welcomemat.embedded_redis import temporary_redis  # noqa: E402
from welcomemat.zone_contract import load_zone_contracts  # noqa: E402

SECRET = "bench-secret-0123456789abcdefghijklmnopqrstuvwxyz"
TENANT, CAMPAIGN = "acme", "q4-pipeline"
ACCOUNTS = 2000
PATH = f"/c/{CAMPAIGN}"


# -- the server processes -------------------------------------------------------------------------


def serve(kind: str, port: int, redis_url: str, page_bytes: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    if kind == "bare":
        body = "<!doctype html><html><body>" + "x" * max(0, page_bytes - 41) + "</body></html>"

        async def page(request: object) -> HTMLResponse:
            return HTMLResponse(body)

        app = Starlette(routes=[Route("/c/{campaign}", page)])
    else:
        from server.app import create_app
        from server.redis_guard import renderer_redis_client
        from server.tuning import RendererTuning
        from welcomemat.settings import Settings

        tuning = (
            RendererTuning()
            if kind == "personal"
            else RendererTuning(zone_cache_entries=1, render_cache_entries=1)
        )
        settings = Settings.from_env(
            {"WELCOMEMAT_SECRET": SECRET, "REDIS_URL": redis_url, "WELCOMEMAT_ALLOWED_HOSTS": "127.0.0.1"}
        )
        app = create_app(settings, redis_client=renderer_redis_client(redis_url), tuning=tuning)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, proxy_headers=False)


# -- setup ------------------------------------------------------------------------------------------


def publish(client: redis.Redis) -> list[str]:
    """The example campaign and ACCOUNTS personal zone sets; returns one cookie value per account."""
    from datetime import UTC, date, datetime, timedelta

    from welcomemat.arms import Arm, assign_arm
    from welcomemat.store import ZoneSetStore
    from welcomemat.tokens import DEFAULT_COOKIE_TTL_S, TokenKind, TokenSigner
    from welcomemat.zoneset import CitedFact, Rung, ZoneContent, ZoneSet, ZoneSetMode

    zones = dict(load_zone_contracts(ROOT / "zones"))
    campaign = load_campaign(ROOT / "examples" / "campaign.yaml", zones)
    config = {
        "campaign": campaign.model_dump(mode="json"),
        "zones": {k: v.model_dump(mode="json") for k, v in zones.items()},
    }
    client.set(keys.campaign_config_key(TENANT, CAMPAIGN), json.dumps(config))
    client.hset(keys.campaigns_index_key(), f"{TENANT}/{CAMPAIGN}", CAMPAIGN)
    signer = TokenSigner([SECRET])
    store = ZoneSetStore(client)
    cookies: list[str] = []
    zone_sets = []
    n = 0
    while len(cookies) < ACCOUNTS:
        account = f"acct_{n:05d}"
        n += 1
        if assign_arm(TENANT, CAMPAIGN, account, campaign.holdout_fraction) is not Arm.PERSONAL:
            continue
        zone_sets.append(
            ZoneSet(
                tenant=TENANT,
                campaign=CAMPAIGN,
                account_id=account,
                segment="saas-mid",
                input_hash=f"bench-{account}",
                guideline_version=campaign.guideline_version,
                created_at=datetime.now(UTC),
                valid_until=datetime.now(UTC) + timedelta(days=7),
                mode=ZoneSetMode.DEGRADED,
                zones=(
                    ZoneContent(
                        zone_id="hero_headline",
                        text=f"Congrats on the Series A, {account}",
                        rung=Rung.PERSONAL,
                        reason="personal:funding",
                        facts=(
                            CitedFact(
                                fact_id="f1",
                                source_url="https://example.com/a",
                                published_at=date(2026, 11, 26),
                            ),
                        ),
                    ),
                ),
            )
        )
        token = signer.sign(
            TokenKind.COOKIE, tenant=TENANT, campaign=CAMPAIGN, account=account, ttl_s=DEFAULT_COOKIE_TTL_S
        )
        cookies.append(token)
    store.publish_many(zone_sets)
    return cookies


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pinned(cpu: int) -> list[str]:
    """A `taskset` prefix when pinning is possible (2+ CPUs), else nothing."""
    if (os.cpu_count() or 1) >= 2 and shutil.which("taskset"):
        return ["taskset", "-c", str(cpu)]
    return []


def start(kind: str, redis_url: str, page_bytes: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [
            *pinned(0),
            sys.executable,
            __file__,
            "--serve",
            kind,
            "--port",
            str(port),
            "--redis",
            redis_url,
            "--page-bytes",
            str(page_bytes),
        ],
        cwd=ROOT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            httpx.get(base + "/healthz", timeout=1)
            return process, base
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{kind} server did not start") from None
            time.sleep(0.1)


# -- load ------------------------------------------------------------------------------------------


@dataclass
class Result:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int


def _ms(value: str, unit: str) -> float:
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def run_wrk(url: str, cookies: list[str], seconds: float, connections: int, workdir: Path) -> Result:
    script = workdir / "cookies.lua"
    lines = ",\n".join(f'"{c}"' for c in cookies)
    script.write_text(
        f"local cookies = {{\n{lines}\n}}\nlocal i = 0\n"
        "request = function()\n  i = i % #cookies + 1\n"
        f'  return wrk.format("GET", "{PATH}", {{["Cookie"] = "wm_{CAMPAIGN}=" .. cookies[i]}})\nend\n'
    )
    out = subprocess.run(
        [
            *pinned(1),
            "wrk",
            f"-t{1 if pinned(1) else 2}",
            f"-c{connections}",
            f"-d{max(1, round(seconds))}s",
            "--latency",
            "-s",
            str(script),
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    bad = int(errors.group(1)) if errors else 0
    if socket_errors:
        bad += sum(int(g) for g in socket_errors.groups())
    return Result(rps, _ms(*p50.groups()), _ms(*p99.groups()), bad)  # type: ignore[union-attr]


async def run_httpx(url: str, cookies: list[str], seconds: float, connections: int) -> Result:
    latencies: list[float] = []
    errors = 0
    end = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=10) as client:

        async def worker(offset: int) -> None:
            nonlocal errors
            i = offset
            while time.monotonic() < end:
                i = (i + connections) % len(cookies)
                started = time.perf_counter()
                response = await client.get(PATH, headers={"Cookie": f"wm_{CAMPAIGN}={cookies[i]}"})
                latencies.append(time.perf_counter() - started)
                errors += response.status_code != 200

        await asyncio.gather(*(worker(n) for n in range(connections)))
    latencies.sort()
    return Result(
        len(latencies) / seconds,
        latencies[len(latencies) // 2] * 1000,
        latencies[int(len(latencies) * 0.99)] * 1000,
        errors,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--serve", choices=["bare", "personal", "miss"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--redis", help=argparse.SUPPRESS)
    parser.add_argument("--page-bytes", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, args.redis, args.page_bytes)
        return

    use_wrk = shutil.which("wrk") is not None
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as redis_url:
        client = redis.Redis.from_url(redis_url)
        if pinned(1):
            redis_pid = str(client.info("server")["process_id"])
            subprocess.run(["taskset", "-pc", "1", redis_pid], check=True, capture_output=True)
        cookies = publish(client)
        processes: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
        try:
            processes["personal"] = start("personal", redis_url, 0)
            sample = httpx.get(
                processes["personal"][1] + PATH, headers={"Cookie": f"wm_{CAMPAIGN}={cookies[0]}"}
            )
            assert sample.status_code == 200 and 'data-wm-rung="personal"' in sample.text, sample.text[:300]
            page_bytes = len(sample.content)
            processes["bare"] = start("bare", redis_url, page_bytes)
            processes["miss"] = start("miss", redis_url, page_bytes)
            assert abs(len(httpx.get(processes["bare"][1] + PATH).content) - page_bytes) <= 1
            results: dict[str, list[Result]] = {k: [] for k in ("bare", "personal", "miss")}
            for _ in range(args.rounds):
                for kind in ("bare", "personal", "miss"):
                    # personal: a handful of accounts, all cached; miss: every request a new account.
                    pool = cookies[:32] if kind == "personal" else cookies
                    if kind == "bare":
                        pool = cookies[:1]
                    url = processes[kind][1]
                    if use_wrk:
                        result = run_wrk(url, pool, args.seconds, args.connections, Path(tmp))
                    else:
                        result = asyncio.run(run_httpx(url, pool, args.seconds, args.connections))
                    results[kind].append(result)
            events = client.xlen(keys.events_stream_key(TENANT))
        finally:
            for process, _ in processes.values():
                process.terminate()
                process.wait(10)

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    print(
        f"load: {'wrk' if use_wrk else 'httpx (wrk not installed)'}, {args.connections} connections, "
        f"{'server on CPU 0, wrk and Redis on CPU 1' if pinned(0) else 'unpinned'}, "
        f"{args.seconds:g} s x {args.rounds} rounds alternating; page {page_bytes} bytes; "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}"
    )
    print("medians over rounds; each ratio is taken within a round (against that round's bare run)")
    print(
        f"{'app':<34} {'req/s':>9} {'x bare':>7} {'p50 ms':>8} {'p99 ms':>8} {'p99 x bare':>10} {'errors':>6}"
    )
    labels = {
        "bare": "bare Starlette, constant page",
        "personal": "personal page (cookie, cached)",
        "miss": "cache miss (Redis read + render)",
    }
    bare = results["bare"]
    for kind in ("bare", "personal", "miss"):
        runs = results[kind]
        rps_ratio = median([r.rps / b.rps for r, b in zip(runs, bare, strict=True)])
        p99_ratio = median([r.p99_ms / b.p99_ms for r, b in zip(runs, bare, strict=True)])
        print(
            f"{labels[kind]:<34} {median([r.rps for r in runs]):>9.0f} {rps_ratio:>7.2f} "
            f"{median([r.p50_ms for r in runs]):>8.2f} {median([r.p99_ms for r in runs]):>8.2f} "
            f"{p99_ratio:>10.2f} {sum(r.errors for r in runs):>6}"
        )
    print(f"view events written to the stream during the run: {events}")


if __name__ == "__main__":
    main()
