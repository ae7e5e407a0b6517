#!/usr/bin/env python3
"""Renderer throughput against a bare Starlette page of the same size, at 64 connections;
the snippet's gzipped size; the renderer's memory with 100,000 zone sets published.

    .venv/bin/python bench/bench_renderer.py [--seconds 4] [--rounds 5] [--connections 64]
        [--accounts 100000] [--distinct 20000] [--memory-steps 3] [--skip-memory | --skip-throughput]

Starts its own embedded Redis in a temp folder and publishes the example campaign and
`--accounts` personal zone sets (five zones each, written with `ZoneSetStore.publish_many`
in batches of 1,000: precompute, at ~1,100-1,350 accounts/s, would take 75-90 s), then
starts five uvicorn processes (one worker each, no access log, same settings) and
measures five loads in alternation:

- bare: a Starlette app answering `/c/{campaign}` with a constant HTML page as large as the
  personalised one (the ceiling: routing, one response, nothing else);
- headers: the same constant page behind the renderer's security middleware, with the
  page's own headers: what the HTTP layer charges for the header set every renderer page
  carries (CSP with a nonce, nosniff, referrer policy, no-store), before any renderer work;
- personal: the renderer, visitor identified by cookie, zone set and page cached (the steady
  state of an email campaign's traffic), page view queued for the event stream; a visitor
  seen before, so answered from the returning-visitor cache (`server.known_visitors`);
- first: the same, in a renderer with the returning-visitor cache off: every view takes the
  full path (token memo, arm, zone-set cache, variant, page cache), as a visitor's first
  view does;
- zones: the same renderer process answering `GET /v1/zones?campaign=…&wm=<link token>`
  with an `Origin` header, as the snippet asks cross-origin (no cookie), payload cached
  (the same link tokens again: returning visitors);
- miss: the renderer with a one-entry zone-set and page cache, each request a different
  account: cookie check, Redis read, Jinja2 render, view event (the cold path).

Load comes from `wrk` (Debian's package; the bench runs `apt-get install -y wrk` when it
is missing and it may, else says how), else an httpx async generator (slower: its own CPU
use depresses every figure; ratios remain comparable). With two or more CPUs and
`taskset`, the server under test is pinned to CPU 0, and wrk (one thread) and Redis to
CPU 1 (in production Redis is another machine), so neither steals the server's core. The
apps are measured in alternation, `--rounds` times; ratios are taken within each round,
and medians and the spread (min–max over rounds) reported, with the server process's CPU
per request (from /proc: steadier than req/s when neighbours load the machine).

Memory: a fresh renderer process with the production cache sizes; its RSS (from /proc)
after start-up and a warm-up, then after each of `--memory-steps` steps of `--distinct`
new accounts (each one landing page by cookie and one `/v1/zones` by link token); and
Redis `used_memory`. The in-process caches are bounded (zone sets, rendered pages,
payloads, verified tokens, returning visitors), so RSS should level off.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
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
from welcomemat.campaign_config import encode_campaign_config  # noqa: E402
from welcomemat.embedded_redis import temporary_redis  # noqa: E402
from welcomemat.zone_contract import load_zone_contracts  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from proc_stats import cpu_seconds  # noqa: E402

SECRET = "bench-secret-0123456789abcdefghijklmnopqrstuvwxyz"
TENANT, CAMPAIGN = "acme", "q4-pipeline"
PATH = f"/c/{CAMPAIGN}"
ZONES_PATH = f"/v1/zones?campaign={CAMPAIGN}&wm="
# A snippet origin of the example campaign: the snippet's requests are cross-origin.
ORIGIN = "https://www.acmerevenue.example"
PUBLISH_BATCH = 1_000
KINDS = ("bare", "headers", "personal", "first", "zones", "miss")


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
    elif kind == "headers":
        # The bare page with what every renderer page carries besides its content: the
        # security middleware (host check, CSP nonce, headers) and the page's own headers.
        from starlette.middleware import Middleware

        from server.pages import PageResponse
        from server.security import SecurityMiddleware

        body = "<!doctype html><html><body>" + "x" * max(0, page_bytes - 41) + "</body></html>"

        async def headers_page(request: object) -> PageResponse:
            return PageResponse(body)

        app = Starlette(
            routes=[Route("/c/{campaign}", headers_page)],
            middleware=[Middleware(SecurityMiddleware, allowed_hosts=["127.0.0.1"])],
        )
    else:
        from server.app import create_app
        from server.redis_guard import renderer_redis_client
        from server.tuning import RendererTuning
        from welcomemat.settings import Settings

        if kind == "miss":
            tuning = RendererTuning(zone_cache_entries=1, render_cache_entries=1)
        elif kind == "first":  # nothing remembered per visitor: every view takes the full path
            tuning = RendererTuning(known_visitor_entries=0)
        else:
            tuning = RendererTuning()
        settings = Settings.from_env(
            {"WELCOMEMAT_SECRET": SECRET, "REDIS_URL": redis_url, "WELCOMEMAT_ALLOWED_HOSTS": "127.0.0.1"}
        )
        app = create_app(settings, redis_client=renderer_redis_client(redis_url), tuning=tuning)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, proxy_headers=False)


# -- setup ------------------------------------------------------------------------------------------


@dataclass
class Visitors:
    """Per published account: its identification cookie and its signed link token."""

    cookies: list[str]
    links: list[str]


def publish(client: redis.Redis, accounts: int, links: int) -> Visitors:
    """The example campaign and `accounts` personal zone sets (the page's zones and the
    continuation headline: three personal, citing a fact, two segment copy); cookies for
    all of them, link tokens for the first `links`."""
    from datetime import UTC, date, datetime, timedelta

    from welcomemat.arms import Arm, assign_arm
    from welcomemat.store import ZoneSetStore
    from welcomemat.tokens import DEFAULT_COOKIE_TTL_S, DEFAULT_LINK_TTL_S, TokenKind, TokenSigner
    from welcomemat.zoneset import CitedFact, Rung, ZoneContent, ZoneSet, ZoneSetMode

    zones = dict(load_zone_contracts(ROOT / "zones"))
    campaign = load_campaign(ROOT / "examples" / "campaign.yaml", zones)
    config = encode_campaign_config(campaign, zones, policy={})
    client.set(keys.campaign_config_key(TENANT, CAMPAIGN), config)
    client.hset(keys.campaigns_index_key(), f"{TENANT}/{CAMPAIGN}", CAMPAIGN)
    signer = TokenSigner([SECRET])
    store = ZoneSetStore(client)
    fact = (CitedFact(fact_id="f1", source_url="https://example.com/a", published_at=date(2026, 11, 26)),)

    def personal(zone_id: str, text: str) -> ZoneContent:
        return ZoneContent(
            zone_id=zone_id, text=text, rung=Rung.PERSONAL, reason="personal:funding", facts=fact
        )

    def segment(zone_id: str, text: str) -> ZoneContent:
        return ZoneContent(zone_id=zone_id, text=text, rung=Rung.SEGMENT, reason="segment:saas-mid")

    now = datetime.now(UTC)
    visitors = Visitors([], [])
    batch: list[ZoneSet] = []
    n = 0
    while len(visitors.cookies) < accounts:
        account = f"acct_{n:06d}"
        n += 1
        if assign_arm(TENANT, CAMPAIGN, account, campaign.holdout_fraction) is not Arm.PERSONAL:
            continue
        batch.append(
            ZoneSet(
                tenant=TENANT,
                campaign=CAMPAIGN,
                account_id=account,
                segment="saas-mid",
                input_hash=f"bench-{account}",
                guideline_version=campaign.guideline_version,
                created_at=now,
                valid_until=now + timedelta(days=7),
                mode=ZoneSetMode.DEGRADED,
                zones=(
                    personal("hero_headline", f"Congrats on the Series A, {account}"),
                    personal("hero_support", f"New reps at {account} reach quota in half the time."),
                    segment("proof", "Teams like yours cut SDR ramp from 5 months to 10 weeks."),
                    segment("cta", "Book a 20-minute ramp review"),
                    personal("continuation_headline", f"Picking up where the mailer left off, {account}"),
                ),
            )
        )
        visitors.cookies.append(
            signer.sign(
                TokenKind.COOKIE,
                tenant=TENANT,
                campaign=CAMPAIGN,
                account=account,
                ttl_s=DEFAULT_COOKIE_TTL_S,
            )
        )
        if len(visitors.links) < links:
            visitors.links.append(
                signer.sign(
                    TokenKind.LINK,
                    tenant=TENANT,
                    campaign=CAMPAIGN,
                    account=account,
                    ttl_s=DEFAULT_LINK_TTL_S,
                )
            )
        if len(batch) == PUBLISH_BATCH:
            store.publish_many(batch, current={})  # a fresh Redis: nothing to compare against
            batch = []
    if batch:
        store.publish_many(batch, current={})
    return visitors


def ensure_wrk() -> bool:
    """wrk on PATH, installing Debian's package when it is missing and we may."""
    if shutil.which("wrk"):
        return True
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("wrk not found: apt-get install -y wrk", file=sys.stderr)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        installed = subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], env=env, check=False)
        if installed.returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], env=env, check=False)
            subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], env=env, check=False)
    if shutil.which("wrk"):
        return True
    print(
        "wrk is not installed (Debian/Ubuntu: `sudo apt-get install wrk`): falling back to an "
        "httpx load generator, whose own CPU use depresses every figure",
        file=sys.stderr,
    )
    return False


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


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# -- load ------------------------------------------------------------------------------------------


@dataclass
class Request:
    """What one app's load asks: a path, plus one header whose value cycles through a pool
    (`prefix + value`), or a path suffix that does (`header` None)."""

    path: str
    pool: list[str]
    header: str | None = None
    prefix: str = ""
    fixed: tuple[tuple[str, str], ...] = ()

    def target(self, value: str) -> tuple[str, dict[str, str]]:
        headers = dict(self.fixed)
        if self.header is None:
            return self.path + value, headers
        headers[self.header] = self.prefix + value
        return self.path, headers


@dataclass
class Result:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    requests: int
    cpu_us: float = 0.0  # the server process's CPU (user + system) per request


def _ms(value: str, unit: str) -> float:
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def _lua(text: str) -> str:
    return json.dumps(text)  # a JSON string of ASCII is a valid Lua string literal


def wrk_script(req: Request) -> str:
    values = ",\n".join(_lua(v) for v in req.pool)
    fixed = ", ".join(f"[{_lua(k)}] = {_lua(v)}" for k, v in req.fixed)
    if req.header is None:
        call = f'wrk.format("GET", {_lua(req.path)} .. values[i], {{{fixed}}})'
    else:
        headers = f"{fixed}, " if fixed else ""
        call = (
            f'wrk.format("GET", {_lua(req.path)}, {{{headers}[{_lua(req.header)}] = '
            f"{_lua(req.prefix)} .. values[i]}})"
        )
    return (
        f"local values = {{\n{values}\n}}\nlocal i = 0\n"
        f"request = function()\n  i = i % #values + 1\n  return {call}\nend\n"
    )


def run_wrk(url: str, req: Request, seconds: float, connections: int, workdir: Path) -> Result:
    script = workdir / "load.lua"
    script.write_text(wrk_script(req))
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
    total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return Result(rps, _ms(*p50.groups()), _ms(*p99.groups()), bad, total)  # type: ignore[union-attr]


async def run_httpx(url: str, req: Request, seconds: float, connections: int) -> Result:
    latencies: list[float] = []
    errors = 0
    end = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=10) as client:

        async def worker(offset: int) -> None:
            nonlocal errors
            i = offset
            while time.monotonic() < end:
                i = (i + connections) % len(req.pool)
                path, headers = req.target(req.pool[i])
                started = time.perf_counter()
                response = await client.get(path, headers=headers)
                latencies.append(time.perf_counter() - started)
                errors += response.status_code != 200

        await asyncio.gather(*(worker(n) for n in range(connections)))
    latencies.sort()
    return Result(
        len(latencies) / seconds,
        latencies[len(latencies) // 2] * 1000,
        latencies[int(len(latencies) * 0.99)] * 1000,
        errors,
        len(latencies),
    )


async def drive(port: int, requests: list[tuple[str, dict[str, str]]], connections: int) -> int:
    """Send each request once over `connections` keep-alive connections (a minimal HTTP/1.1
    client: the renderer always sends Content-Length); returns how many were not 200."""
    queue = iter(requests)
    failures = 0

    async def connection() -> None:
        nonlocal failures
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for path, headers in queue:
                lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
                lines += [f"{k}: {v}" for k, v in headers.items()]
                writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head.split(b" ", 2)[1])
                length = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
                await reader.readexactly(int(length.group(1)) if length else 0)
                failures += status != 200
        finally:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(connections)))
    return failures


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def used_memory_mib(client: redis.Redis) -> float:
    return int(client.info("memory")["used_memory"]) / 2**20


# -- the measurements --------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def throughput(
    args: argparse.Namespace, visitors: Visitors, redis_url: str, tmp: Path, use_wrk: bool
) -> None:
    processes: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    try:
        processes["personal"] = start("personal", redis_url, 0)
        personal_url = processes["personal"][1]
        sample = httpx.get(personal_url + PATH, headers={"Cookie": f"wm_{CAMPAIGN}={visitors.cookies[0]}"})
        assert sample.status_code == 200 and 'data-wm-rung="personal"' in sample.text, sample.text[:300]
        page_bytes = len(sample.content)
        zones = httpx.get(personal_url + ZONES_PATH + visitors.links[0], headers={"Origin": ORIGIN})
        assert zones.status_code == 200 and zones.json()["arm"] == "personal", zones.text[:300]
        assert zones.headers.get("access-control-allow-origin") == ORIGIN, zones.headers
        snippet = httpx.get(personal_url + "/snippet.js")
        assert snippet.status_code == 200, snippet.status_code
        processes["zones"] = processes["personal"]  # one renderer answers both
        processes["bare"] = start("bare", redis_url, page_bytes)
        processes["headers"] = start("headers", redis_url, page_bytes)
        processes["miss"] = start("miss", redis_url, page_bytes)
        processes["first"] = start("first", redis_url, page_bytes)
        assert abs(len(httpx.get(processes["bare"][1] + PATH).content) - page_bytes) <= 1
        same = httpx.get(processes["headers"][1] + PATH)
        assert abs(len(same.content) - page_bytes) <= 1
        assert set(same.headers) == set(sample.headers), (same.headers, sample.headers)
        cookie = f"wm_{CAMPAIGN}="
        loads = {
            "bare": Request(PATH, visitors.cookies[:1], "Cookie", cookie),
            "headers": Request(PATH, visitors.cookies[:1], "Cookie", cookie),
            # a handful of accounts, all cached
            "personal": Request(PATH, visitors.cookies[:32], "Cookie", cookie),
            "first": Request(PATH, visitors.cookies[:32], "Cookie", cookie),
            "zones": Request(ZONES_PATH, visitors.links[:32], fixed=(("Origin", ORIGIN),)),
            # every request a new account
            "miss": Request(PATH, visitors.cookies, "Cookie", cookie),
        }
        results: dict[str, list[Result]] = {k: [] for k in KINDS}
        for _ in range(args.rounds):
            for kind in KINDS:
                url = processes[kind][1]
                cpu0 = cpu_seconds(processes[kind][0].pid)
                if use_wrk:
                    result = run_wrk(url, loads[kind], args.seconds, args.connections, tmp)
                else:
                    result = asyncio.run(run_httpx(url, loads[kind], args.seconds, args.connections))
                result.cpu_us = (cpu_seconds(processes[kind][0].pid) - cpu0) / max(result.requests, 1) * 1e6
                results[kind].append(result)
        events = redis.Redis.from_url(redis_url).xlen(keys.events_stream_key(TENANT))
    finally:
        for kind, (process, _) in processes.items():
            if kind != "zones":
                stop(process)

    print(
        f"load: {'wrk' if use_wrk else 'httpx (wrk not installed)'}, {args.connections} connections, "
        f"{'server on CPU 0, wrk and Redis on CPU 1' if pinned(0) else 'unpinned'}, "
        f"{args.seconds:g} s x {args.rounds} rounds alternating; page {page_bytes} bytes, "
        f"zones answer {len(zones.content)} bytes; {len(visitors.cookies)} zone sets published; "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}"
    )
    print("medians over rounds [min-max]; each ratio is taken within a round (against that round's bare run)")
    print(
        "cpu: the server process's CPU (user + system, all its threads) per request, and its ratio"
        " to bare's: steadier than req/s when neighbours load the machine"
    )
    print(
        f"{'app':<36} {'req/s':>7} {'x bare':>7} {'[spread]':>11} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'p99 x bare':>10} {'[spread]':>11} {'cpu us':>6} {'bare/cpu':>8} {'errors':>6}"
    )
    labels = {
        "bare": "bare Starlette, constant page",
        "headers": "bare + the renderer's headers",
        "personal": "personal page (cookie, cached)",
        "first": "personal page, first view (cached)",
        "zones": "/v1/zones (?wm= token, cached)",
        "miss": "cache miss (Redis read + render)",
    }
    bare = results["bare"]
    for kind in KINDS:
        runs = results[kind]
        rps = [r.rps / b.rps for r, b in zip(runs, bare, strict=True)]
        p99 = [r.p99_ms / b.p99_ms for r, b in zip(runs, bare, strict=True)]
        print(
            f"{labels[kind]:<36} {median([r.rps for r in runs]):>7.0f} {median(rps):>7.2f} "
            f"{f'[{min(rps):.2f}-{max(rps):.2f}]':>11} "
            f"{median([r.p50_ms for r in runs]):>7.2f} {median([r.p99_ms for r in runs]):>7.2f} "
            f"{median(p99):>10.2f} {f'[{min(p99):.2f}-{max(p99):.2f}]':>11} "
            f"{median([r.cpu_us for r in runs]):>6.0f} "
            f"{median([b.cpu_us / r.cpu_us for r, b in zip(runs, bare, strict=True) if r.cpu_us]):>8.2f} "
            f"{sum(r.errors for r in runs):>6}"
        )
    print(f"view events written to the stream during the run: {events}")
    body = snippet.content
    print(
        f"snippet.js as served: {len(body)} bytes, {len(gzip.compress(body, 9))} bytes gzipped (level 9), "
        f"{len(gzip.compress(body, 6))} at level 6"
    )


def memory(args: argparse.Namespace, visitors: Visitors, redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    process, url = start("personal", redis_url, 0)
    port = int(url.rsplit(":", 1)[1])
    try:
        n = args.distinct
        cookie = f"wm_{CAMPAIGN}="

        def requests(first: int, last: int) -> list[tuple[str, dict[str, str]]]:
            out: list[tuple[str, dict[str, str]]] = []
            for i in range(first, last):
                out.append((PATH, {"Cookie": cookie + visitors.cookies[i]}))
                out.append((ZONES_PATH + visitors.links[i], {"Origin": ORIGIN}))
            return out

        failures = asyncio.run(drive(port, requests(0, 16) * 4, 8))  # warm-up: imports, first renders
        rows = [("after start-up and a warm-up (16 accounts)", rss_mib(process.pid), 0.0)]
        for first in range(0, n * args.memory_steps, n):
            started = time.perf_counter()
            failures += asyncio.run(drive(port, requests(first, first + n), 16))
            rows.append(
                (
                    f"after {first + n:,} distinct accounts",
                    rss_mib(process.pid),
                    time.perf_counter() - started,
                )
            )
        assert failures == 0, f"{failures} requests were not answered 200"
    finally:
        stop(process)
    print(
        f"memory: {len(visitors.cookies):,} zone sets published; Redis used_memory "
        f"{used_memory_mib(client):.0f} MiB; one renderer process, production cache sizes; "
        "each account: a landing page (cookie) and a /v1/zones (link token)"
    )
    print(f"{'renderer':<44} {'RSS MiB':>8} {'took s':>7}")
    for label, rss, took in rows:
        print(f"{label:<44} {rss:>8.0f} {took:>7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--accounts", type=int, default=100_000, help="personal zone sets published")
    parser.add_argument("--distinct", type=int, default=20_000, help="accounts per memory step (two steps)")
    parser.add_argument("--memory-steps", type=int, default=3, help="memory steps of --distinct accounts")
    parser.add_argument("--skip-memory", action="store_true", help="throughput only")
    parser.add_argument("--skip-throughput", action="store_true", help="memory only")
    parser.add_argument(
        "--serve", choices=["bare", "headers", "personal", "first", "miss"], help=argparse.SUPPRESS
    )
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--redis", help=argparse.SUPPRESS)
    parser.add_argument("--page-bytes", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, args.redis, args.page_bytes)
        return
    links = 32 if args.skip_memory else args.memory_steps * args.distinct
    if args.accounts < max(links, 32):
        parser.error(f"--accounts must be at least {max(links, 32)} (--memory-steps x --distinct)")

    use_wrk = ensure_wrk() if not args.skip_throughput else False
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as redis_url:
        client = redis.Redis.from_url(redis_url)
        if pinned(1):
            redis_pid = str(client.info("server")["process_id"])
            subprocess.run(["taskset", "-pc", "1", redis_pid], check=True, capture_output=True)
        started = time.perf_counter()
        visitors = publish(client, args.accounts, links)
        print(
            f"published {args.accounts:,} zone sets (ZoneSetStore.publish_many, batches of {PUBLISH_BATCH:,})"
            " "
            f"and signed their tokens in {time.perf_counter() - started:.1f} s; "
            f"Redis used_memory {used_memory_mib(client):.0f} MiB"
        )
        if not args.skip_throughput:
            throughput(args, visitors, redis_url, Path(tmp), use_wrk)
        if not args.skip_memory:
            memory(args, visitors, redis_url)


if __name__ == "__main__":
    main()
