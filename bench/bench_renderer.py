#!/usr/bin/env python3
"""Every arrival path's throughput and p99 against a bare Starlette page of the same size, on
both uvicorn stacks and for one and two worker processes; the renderer's memory with
100,000 zone sets published.

    .venv/bin/python bench/bench_renderer.py [--seconds 3] [--rounds 5] [--connections 64]
        [--http fast h11] [--workers 1 2] [--first-clicks 200000] [--accounts 100000]
        [--paths cookie link_first ...] [--reference FILE | --no-reference]
        [--distinct 20000] [--memory-steps 3] [--skip-memory | --skip-throughput] [--json FILE]
        [--baselines-on uvicorn | welcomemat] [--erasures 0]

Starts its own embedded Redis in a temp folder and publishes the example campaign and
`--accounts` personal zone sets (five zones each, written with `ZoneSetStore.publish_many`
in batches of 1,000), their cookies and links, IP ranges for 32 accounts, and
`--first-clicks` link and QR tokens of distinct contacts (a send's peak: every click a
token never seen before). For each stack (`--http fast`: httptools + uvloop, `h11`) and
worker count, it starts `welcomemat serve --http S --workers N --no-access-log` as a user
runs it (production cache sizes, `WELCOMEMAT_TRUSTED_PROXIES=127.0.0.1/32`) and the bare
page under uvicorn with the same stack, workers and settings (no access log, no server
header), then measures, in alternation, `--rounds` times:

- bare: the constant page, as large as the personal one (routing, one response, nothing
  else: the ceiling);
- cookie: the landing page by cookie, 32 accounts (a returning visitor);
- link, first click: `?wm=` with a token never seen before on each request (the tokens
  are walked in order and the walk goes on from run to run; the pool is larger than any
  per-process memo, so no token is remembered when it comes round again);
- link, clicked again: 32 link tokens again and again, no cookie sent back (a visitor who
  clicks the mail twice, or a browser refusing cookies);
- QR scan: `/q/<token>`, every token new: verified, the cookie set, a `qr_scan` event, 303;
- IP-identified: no token or cookie, `X-Forwarded-For` (from the trusted loopback proxy)
  in one of the 32 accounts' ranges;
- anonymous: nothing to go on (the address is still looked up: the campaign has ranges);
- /v1/zones: the snippet's call with a link token and an `Origin` (payload cached).

Every path logs its events as in production (views, QR scans, into the Redis stream) and
sends every header the renderer adds (CSP, nosniff, Set-Cookie, ...): all of it is in the
figure. `--erasures N` puts N erased subjects on the tenant's erasure list first, none of them
a visitor of the bench (`erase_others`): every token the renderer accepts is then checked
against a list of that size, as a tenant's is once people have been erased.

The reference (`--reference`, by default `../shared/bench/same_work_app.py` next to the
repository; `--no-reference` leaves it out): one plain ASGI function doing each arrival path's
mandatory work and nothing else (token or cookie HMAC, the trusted proxy's address against
sorted ranges, zones from memory, a nonce and view id, the page, a signed cookie on a first
click, one event per request batched into its own Redis stream by a task of its event loop).
It runs under uvicorn with the same stack, worker count, pinning and settings as the others,
with its own tokens (`same_work_app.py tokens N ACCOUNT`, 32 accounts, every first click and
first scan a token it has never seen, as for the renderer), and each of its paths is measured
right after or before the renderer's same path in every round (the order alternates by
round). The issue-31 table follows each setup: per path, the renderer's req/s over the
reference's and p99 over the reference's (each within a round, then the median), the
renderer's req/s over bare's, and the CPU per request of both. A first-click pool that a
run walks past its end is reported (those tokens were seen before: the reference remembers
every token, the renderer a minute's).

The bare page and the reference run on uvicorn's own HTTP protocol (`--baselines-on uvicorn`,
the default: the server as anyone would run it), or on the one `welcomemat serve` runs
(`--baselines-on welcomemat`: uvicorn's, with the header deadline and a response's head and
body written at once, `server.http_protocols`), which tells the renderer's own work from what
its server saves every response.

Load comes from `wrk` (Debian's package; the bench runs `apt-get install -y wrk`
when it is missing and it may). With one worker the server is pinned to CPU 0 and wrk and
Redis to CPU 1 (`taskset`); with two, the workers are not pinned. Two workers share one
listening socket, uvicorn's way and `welcomemat serve`'s default, on every server;
`--reuse-port` gives each its own (`serve --reuse-port`, `cli/worker_sockets.py`). Ratios are taken within
each round and reported as medians with their spread (min-max over rounds), with the
server processes' CPU per request (from /proc) and the Redis commands per request (INFO
commandstats around each wrk run; commands the event writer's script runs count too).
`--json FILE` keeps every run's figures, and with them two that may make a round's tail
without being the server's own work: `wait_share`, the seconds its processes' threads were
runnable but waiting for a CPU over the run's (summed over threads: two busy workers can pass
1), and `redis_forks`, the forks Redis made during the run (an AOF rewrite is one).
`bench/zone_ttl` sets the renderer's zone-set cache TTL for a run (its docstring).

Memory: a fresh `welcomemat serve` (one worker); its RSS after start-up and a warm-up, then
after each of `--memory-steps` steps of `--distinct` new accounts (each one landing page by
cookie and one `/v1/zones` by link token); Redis `used_memory`; and the Redis commands per
distinct account.
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
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from welcomemat import keys  # noqa: E402
from welcomemat.campaign.config import encode_campaign_config  # noqa: E402
from welcomemat.campaign.contract import load_campaign  # noqa: E402
from welcomemat.records.event_entries import entry_events  # noqa: E402
from welcomemat.storage.embedded_redis import temporary_redis  # noqa: E402
from welcomemat.zones.contract import load_zone_contracts  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from proc_stats import tree_cpu_seconds, tree_wait_seconds  # noqa: E402
from redis_stats import command_calls  # noqa: E402

SECRET = "bench-secret-0123456789abcdefghijklmnopqrstuvwxyz"
TENANT, CAMPAIGN = "acme", "q4-pipeline"
PATH = f"/c/{CAMPAIGN}"
ZONES_PATH = f"/v1/zones?campaign={CAMPAIGN}&wm="
# A snippet origin of the example campaign: the snippet's requests are cross-origin.
ORIGIN = "https://www.acmerevenue.example"
PUBLISH_BATCH = 1_000
# The arrival paths measured, each against the bare page of the same stack and worker count.
KINDS = ("bare", "cookie", "link_first", "link_again", "qr", "ip", "ip_new", "anonymous", "zones")
LABELS = {
    "bare": "bare Starlette page (baseline)",
    "cookie": "cookie (returning visitor)",
    "link_first": "email link, first click (new ?wm=)",
    "link_again": "email link, clicked again",
    "qr": "QR scan, first (303 + cookie)",
    "ip": "IP-identified (trusted proxy XFF)",
    "ip_new": "IP-identified, address not seen lately",
    "anonymous": "anonymous",
    "zones": "/v1/zones (?wm= token)",
}
# A send's peak: distinct contacts' tokens (each used once within a worker's memo horizon)
# over the accounts the cookie row visits, so the two rows differ only in how the visitor
# arrives; a zone set not in the process's cache costs the same on every path (bench_calls'
# `miss`).
FIRST_CLICK_ACCOUNTS = 32
# Accounts with a published IP range (one /24 each, 10.<i>.<j>.0/24) and the proxy trusted.
IP_ACCOUNTS = 32
TRUSTED_PROXY = "127.0.0.1/32"
# The reference (`../shared/bench/same_work_app.py`): the paths it has, in the issue's order,
# and where it lives by default (next to the repository, as the issue names it).
REFERENCE_KINDS = ("cookie", "link_again", "anonymous", "ip", "ip_new", "link_first", "qr")
REFERENCE_LABELS = {
    "cookie": "cookie",
    "link_again": "link clicked again",
    "anonymous": "anonymous",
    "ip": "IP-identified",
    "ip_new": "IP-identified, new address",
    "link_first": "link, first click",
    "qr": "QR, first scan",
}
DEFAULT_REFERENCE = ROOT.parent / "shared" / "bench" / "same_work_app.py"
# Its accounts: zones in memory for acct_00000..acct_04999 and IP ranges 10.<i // 250>.<i % 250>.0/24,
# so the bench's addresses (10.0.0.7 ... 10.3.7.7) are in its accounts' ranges too.
REFERENCE_ACCOUNTS = [f"acct_{i:05d}" for i in range(FIRST_CLICK_ACCOUNTS)]


# -- the server processes -------------------------------------------------------------------------


def bare_app() -> object:
    """The baseline: a Starlette app answering `/c/{campaign}` with a constant HTML page as
    large as the personalised one (`BENCH_PAGE_BYTES`), and `/healthz`. A factory, so
    uvicorn can build it in each of `--workers` processes."""
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse, PlainTextResponse
    from starlette.routing import Route

    page_bytes = int(os.environ.get("BENCH_PAGE_BYTES", "0"))
    body = "<!doctype html><html><body>" + "x" * max(0, page_bytes - 41) + "</body></html>"

    async def page(request: object) -> HTMLResponse:
        return HTMLResponse(body)

    async def healthz(request: object) -> PlainTextResponse:
        return PlainTextResponse("ok")

    return Starlette(routes=[Route("/c/{campaign}", page), Route("/healthz", healthz)])


# `--baselines-on`, handed to the bare and reference servers' processes.
_BASELINES_ON = "BENCH_BASELINES_ON"


def _baseline_protocol(parser: str) -> str:
    """uvicorn's `http=` for a baseline: its own protocol, or `welcomemat serve`'s."""
    if os.environ.get(_BASELINES_ON) == "welcomemat":
        from server.http_protocols import PROTOCOLS

        return PROTOCOLS[parser]
    return parser


# `--reuse-port`, handed to the bare and reference processes (the renderer gets `serve --reuse-port`).
_REUSE_PORT = "BENCH_REUSE_PORT"


def serve_bare(port: int, page_bytes: int, http: str, workers: int) -> None:
    """The bare app under uvicorn with `welcomemat serve`'s settings for `http` and `workers`
    (two or more: one shared socket, or a socket each with `--reuse-port`)."""
    from cli.serve import STACKS
    from cli.worker_sockets import run_uvicorn

    os.environ["BENCH_PAGE_BYTES"] = str(page_bytes)
    parser, loop = STACKS[http]
    run_uvicorn(
        "bench_renderer:bare_app",
        reuse_port=os.environ.get(_REUSE_PORT) == "1",
        factory=True,
        app_dir=str(ROOT / "bench"),
        host="127.0.0.1",
        port=port,
        workers=workers,
        http=_baseline_protocol(parser),
        loop=loop,
        log_level="warning",
        access_log=False,
        server_header=False,
        proxy_headers=False,
    )


def serve_reference(reference: Path, port: int, page_bytes: int, http: str, workers: int) -> None:
    """The reference app under uvicorn with the bare page's settings for `http` and `workers`
    (its environment: REDIS_URL, and BARE_BYTES set by `start_reference`)."""
    from cli.serve import STACKS
    from cli.worker_sockets import run_uvicorn

    os.environ["BARE_BYTES"] = str(page_bytes)
    parser, loop = STACKS[http]
    run_uvicorn(
        f"{reference.stem}:app",
        reuse_port=os.environ.get(_REUSE_PORT) == "1",
        app_dir=str(reference.parent),
        host="127.0.0.1",
        port=port,
        workers=workers,
        http=_baseline_protocol(parser),
        loop=loop,
        log_level="warning",
        access_log=False,
        server_header=False,
        proxy_headers=False,
    )


# -- setup ------------------------------------------------------------------------------------------


@dataclass
class Visitors:
    """Per published account: its identification cookie and its signed link token; the
    first clicks of a send (`first_links`, `first_qr`: one token per contact, every one
    different, over the first `FIRST_CLICK_ACCOUNTS` accounts); the client addresses of
    the accounts given IP ranges: one each (`addresses`, a handful of offices coming back),
    and every address of their ranges (`new_addresses`, walked in turn: more than the
    renderer keeps of addresses seen once, so none of them is remembered)."""

    cookies: list[str]
    links: list[str]
    first_links: list[str] = field(default_factory=list)
    first_qr: list[str] = field(default_factory=list)
    first_accounts: list[str] = field(default_factory=list)  # the accounts of those tokens
    addresses: list[str] = field(default_factory=list)
    new_addresses: list[str] = field(default_factory=list)


def publish(client: redis.Redis, accounts: int, links: int, first_clicks: int = 0) -> Visitors:
    """The example campaign and `accounts` personal zone sets (the page's zones and the
    continuation headline: three personal, citing a fact, two segment copy); cookies for
    all of them, link tokens for the first `links`; `first_clicks` link and QR tokens of
    distinct contacts; IP ranges for the first `IP_ACCOUNTS` accounts."""
    from datetime import UTC, date, datetime, timedelta

    from welcomemat.arms import Arm, assign_arm
    from welcomemat.security.tokens import (
        DEFAULT_COOKIE_TTL_S,
        DEFAULT_LINK_TTL_S,
        DEFAULT_QR_TTL_S,
        TokenKind,
        TokenSigner,
    )
    from welcomemat.zones.store import ZoneSetStore
    from welcomemat.zones.zoneset import CitedFact, Rung, ZoneContent, ZoneSet, ZoneSetMode

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
    hot = [_account_of(signer, token) for token in visitors.cookies[:FIRST_CLICK_ACCOUNTS]]
    visitors.first_accounts = hot
    for n in range(first_clicks):
        account, contact = hot[n % len(hot)], f"c{n:07d}"
        for kind, tokens, ttl in (
            (TokenKind.LINK, visitors.first_links, DEFAULT_LINK_TTL_S),
            (TokenKind.QR, visitors.first_qr, DEFAULT_QR_TTL_S),
        ):
            tokens.append(
                signer.sign(
                    kind, tenant=TENANT, campaign=CAMPAIGN, account=account, contact=contact, ttl_s=ttl
                )
            )
    ranges = {}
    for i, account in enumerate(hot[:IP_ACCOUNTS]):
        ranges[account] = json.dumps([f"10.{i // 8}.{i % 8}.0/24"])
        visitors.addresses.append(f"10.{i // 8}.{i % 8}.7")
    # each range's hosts, the ranges interleaved: 254 x 32 addresses before the first comes back
    networks = [address.rsplit(".", 1)[0] for address in visitors.addresses]
    visitors.new_addresses = [f"{network}.{host}" for host in range(1, 255) for network in networks]
    if ranges:
        client.hset(keys.ip_ranges_key(TENANT, CAMPAIGN), mapping=ranges)
    return visitors


def erase_others(client: redis.Redis, visitors: Visitors, subjects: int) -> None:
    """`subjects` erasures on the tenant's list (`welcomemat.records.erasure`), none of a visitor
    the bench serves: one in ten an account of its own, the rest contacts of the accounts the
    first clicks come from (under contact ids no token carries). The renderer loads them with
    the campaign and checks every token it accepts against them: the check the reference leaves
    out, with a list the size of a tenant's that has erased people."""
    from datetime import UTC, datetime

    from welcomemat.records.erasure import ErasureMark, account_field, contact_field

    now = time.time()
    erased_at = datetime.fromtimestamp(now, UTC)
    mark = ErasureMark(erased_at=erased_at, revoke_before=int(now) + 1).model_dump_json()
    hot = visitors.first_accounts
    fields = [
        account_field(f"erased_{n:07d}") if n % 10 == 0 else contact_field(hot[n % len(hot)], f"e{n:07d}")
        for n in range(subjects)
    ]
    for start in range(0, len(fields), PUBLISH_BATCH):
        batch = fields[start : start + PUBLISH_BATCH]
        client.hset(keys.erasures_key(TENANT), mapping=dict.fromkeys(batch, mark))


@dataclass
class ReferenceVisitors:
    """The reference's own tokens (its secret, its claims), one pool per path as for the
    renderer: 32 cookies (a link token is also its cookie's value), 32 links clicked again,
    and the first clicks and first scans, every token distinct."""

    cookies: list[str]
    links: list[str]
    first_links: list[str]
    first_qr: list[str]


def reference_tokens(reference: Path, first_clicks: int) -> ReferenceVisitors:
    """`same_work_app.py tokens N ACCOUNT` for each of the reference's 32 accounts (distinct
    tokens within a call; accounts differ between calls), dealt round-robin into the pools."""
    per_account = -(-(2 * first_clicks) // len(REFERENCE_ACCOUNTS)) + 2
    by_account = []
    for account in REFERENCE_ACCOUNTS:
        out = subprocess.run(
            [sys.executable, str(reference), "tokens", str(per_account), account],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        by_account.append(out)
    dealt = [tokens[i] for i in range(per_account) for tokens in by_account]
    assert len(set(dealt)) == len(dealt), "the reference signed the same token twice"
    n = len(REFERENCE_ACCOUNTS)
    return ReferenceVisitors(
        cookies=dealt[:n],
        links=dealt[n : 2 * n],
        first_links=dealt[2 * n : 2 * n + first_clicks],
        first_qr=dealt[2 * n + first_clicks : 2 * n + 2 * first_clicks],
    )


def _account_of(signer: object, cookie: str) -> str:
    from welcomemat.security.tokens import TokenKind, TokenSigner

    assert isinstance(signer, TokenSigner)
    return signer.verify(TokenKind.COOKIE, cookie, tenant=TENANT, campaign=CAMPAIGN).account


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


def _wait_ready(process: subprocess.Popen[bytes], base: str, what: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(base + "/healthz", timeout=1)
            return
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start") from None
            time.sleep(0.1)


def start_bare(page_bytes: int, http: str, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [sys.executable, __file__, "--serve-bare", "--port", str(port), "--page-bytes", str(page_bytes)]
    command += ["--http", http, "--workers", str(workers)]
    process = subprocess.Popen([*(pinned(0) if workers == 1 else []), *command], cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    _wait_ready(process, base, "bare server")
    return process, base


def start_reference(
    reference: Path, redis_url: str, page_bytes: int, http: str, workers: int
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [sys.executable, __file__, "--serve-reference", "--reference", str(reference)]
    command += [
        "--port",
        str(port),
        "--page-bytes",
        str(page_bytes),
        "--http",
        http,
        "--workers",
        str(workers),
    ]
    env = {**os.environ, "REDIS_URL": redis_url}
    process = subprocess.Popen([*(pinned(0) if workers == 1 else []), *command], cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    _wait_ready(process, base, "reference app")
    return process, base


def start_renderer(
    redis_url: str,
    home: Path,
    http: str = "fast",
    workers: int = 1,
    extra_env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], str]:
    """`welcomemat serve` as a user runs it (production cache sizes), access log off, the
    loopback peer trusted as a proxy (the IP-identified path's `X-Forwarded-For`).
    `extra_env` (a `PYTHONPATH` of bench switches or of another checkout, say) is added to
    the served process's environment, after this process's own."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    env.update(
        {
            "WELCOMEMAT_SECRET": SECRET,
            "REDIS_URL": redis_url,
            "WELCOMEMAT_HOME": str(home),
            "WELCOMEMAT_ALLOWED_HOSTS": "127.0.0.1",
            "WELCOMEMAT_TRUSTED_PROXIES": TRUSTED_PROXY,
            "WELCOMEMAT_LOG_LEVEL": "WARNING",
        }
    )
    env.update(extra_env or {})
    welcomemat = str(Path(sys.executable).parent / "welcomemat")
    command = [welcomemat, "serve", "--port", str(port), "--http", http, "--workers", str(workers)]
    if os.environ.get(_REUSE_PORT) == "1":
        command.append("--reuse-port")
    process = subprocess.Popen(
        [*(pinned(0) if workers == 1 else []), *command, "--no-access-log"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    _wait_ready(process, base, "welcomemat serve")
    return process, base


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
    redis_ops: float = 0.0  # Redis commands per request (INFO commandstats), all clients
    # Redis's CPU per request: it shares CPU 1 with wrk at one worker, so what it spends on a
    # server's requests is time wrk, which measures the latencies, does not run.
    redis_cpu_us: float = 0.0
    # What may make a round's tail without being the server's work: the share of the run its
    # processes' threads spent runnable and waiting for a CPU (summed over threads, so two busy
    # workers can exceed 1), and the forks Redis made meanwhile (an AOF rewrite copies the data).
    wait_share: float = 0.0
    redis_forks: int = 0


def _ms(value: str, unit: str) -> float:
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def _lua(text: str) -> str:
    return json.dumps(text)  # a JSON string of ASCII is a valid Lua string literal


def wrk_script(req: Request, offset: int = 0) -> str:
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
        f"local values = {{\n{values}\n}}\nlocal i = {offset % max(len(req.pool), 1)}\n"
        f"request = function()\n  i = i % #values + 1\n  return {call}\nend\n"
    )


def run_wrk(
    url: str,
    req: Request,
    seconds: float,
    connections: int,
    workdir: Path,
    offset: int = 0,
    cpu: int | None = 1,
) -> Result:
    """One wrk run (one thread: one walk through the pool, from `offset`)."""
    script = workdir / "load.lua"
    script.write_text(wrk_script(req, offset))
    out = subprocess.run(
        [
            *(pinned(cpu) if cpu is not None else []),
            "wrk",
            "-t1",
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


def renderer_ops(client: redis.Redis) -> int:
    """Redis commands so far, but for the bench's own INFO calls."""
    calls = command_calls(client)
    calls.pop("info", None)
    return sum(calls.values())


def redis_forks(client: redis.Redis) -> int:
    """The forks Redis has made so far (an AOF rewrite is one)."""
    return int(client.info("stats")["total_forks"])


def used_memory_mib(client: redis.Redis) -> float:
    return int(client.info("memory")["used_memory"]) / 2**20


# -- the measurements --------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def check_paths(url: str, visitors: Visitors) -> tuple[int, int]:
    """Each path answers what it should before anything is timed; (page bytes, zones bytes)."""
    cookie = {"Cookie": f"wm_{CAMPAIGN}={visitors.cookies[0]}"}
    personal = 'data-wm-rung="personal"'
    page = httpx.get(url + PATH, headers=cookie)
    assert page.status_code == 200 and personal in page.text, page.text[:300]
    link = httpx.get(f"{url}{PATH}?wm={visitors.first_links[-1]}")
    assert link.status_code == 200 and personal in link.text, link.text[:300]
    assert link.headers.get("set-cookie", "").startswith(f"wm_{CAMPAIGN}="), link.headers
    qr = httpx.get(f"{url}/q/{visitors.first_qr[-1]}")
    assert qr.status_code == 303 and qr.headers["location"].endswith(f"/c/{CAMPAIGN}/continue"), qr.headers
    assert qr.headers.get("set-cookie", "").startswith(f"wm_{CAMPAIGN}="), qr.headers
    ip = httpx.get(url + PATH, headers={"X-Forwarded-For": visitors.addresses[0]})
    assert ip.status_code == 200 and personal in ip.text, ip.text[:300]
    anonymous = httpx.get(url + PATH)
    assert anonymous.status_code == 200 and personal not in anonymous.text, anonymous.text[:300]
    zones = httpx.get(url + ZONES_PATH + visitors.links[0], headers={"Origin": ORIGIN})
    assert zones.status_code == 200 and zones.json()["arm"] == "personal", zones.text[:300]
    assert zones.headers.get("access-control-allow-origin") == ORIGIN, zones.headers
    return len(page.content), len(zones.content)


def check_reference(url: str, ref: ReferenceVisitors, visitors: Visitors, page_bytes: int) -> None:
    """The reference answers each path as the renderer does (personal or not, cookie, 303)."""
    personal = 'data-wm-rung="personal"'
    page = httpx.get(url + PATH, headers={"Cookie": f"wm_id={ref.cookies[0]}"})
    assert page.status_code == 200 and personal in page.text, page.text[:300]
    assert abs(len(page.content) - page_bytes) <= 64, (len(page.content), page_bytes)
    link = httpx.get(f"{url}{PATH}?wm={ref.first_links[-1]}")
    assert link.status_code == 200 and personal in link.text, link.text[:300]
    assert link.headers.get("set-cookie", "").startswith("wm_id="), link.headers
    qr = httpx.get(f"{url}/q/{ref.first_qr[-1]}")
    assert qr.status_code == 303 and qr.headers.get("set-cookie", "").startswith("wm_id="), qr.headers
    ip = httpx.get(url + PATH, headers={"X-Forwarded-For": visitors.addresses[-1]})
    assert ip.status_code == 200 and personal in ip.text, ip.text[:300]
    anonymous = httpx.get(url + PATH)
    assert anonymous.status_code == 200 and personal not in anonymous.text, anonymous.text[:300]


def reference_loads(ref: ReferenceVisitors, visitors: Visitors) -> dict[str, Request]:
    """The reference's load per path: the renderer's requests with the reference's tokens
    (its cookie is `wm_id`); the same addresses for IP (in its ranges too)."""
    return {
        "cookie": Request(PATH, ref.cookies, "Cookie", "wm_id="),
        "link_first": Request(PATH + "?wm=", ref.first_links),
        "link_again": Request(PATH + "?wm=", ref.links),
        "qr": Request("/q/", ref.first_qr),
        "ip": Request(PATH, visitors.addresses, "X-Forwarded-For"),
        "ip_new": Request(PATH, visitors.new_addresses, "X-Forwarded-For"),
        "anonymous": Request(PATH, [""]),
    }


def loads(visitors: Visitors) -> dict[str, Request]:
    cookie = f"wm_{CAMPAIGN}="
    return {
        "bare": Request(PATH, visitors.cookies[:1], "Cookie", cookie),
        "cookie": Request(PATH, visitors.cookies[:32], "Cookie", cookie),  # a handful of accounts
        "link_first": Request(PATH + "?wm=", visitors.first_links),  # every token new
        "link_again": Request(PATH + "?wm=", visitors.links[:32]),  # the same links again, no cookie yet
        "qr": Request("/q/", visitors.first_qr),
        "ip": Request(PATH, visitors.addresses, "X-Forwarded-For"),
        "ip_new": Request(PATH, visitors.new_addresses, "X-Forwarded-For"),
        "anonymous": Request(PATH, [""]),
        "zones": Request(ZONES_PATH, visitors.links[:32], fixed=(("Origin", ORIGIN),)),
    }


@dataclass
class SetupResults:
    """One stack and worker count: every round's figures per path, the reference's per path
    (empty without it), and the first-click pools a run walked past the end of."""

    renderer: dict[str, list[Result]]
    reference: dict[str, list[Result]]
    reused: list[str] = field(default_factory=list)


def one_setup(
    args: argparse.Namespace,
    visitors: Visitors,
    redis_url: str,
    tmp: Path,
    http: str,
    workers: int,
    ref: ReferenceVisitors | None = None,
) -> SetupResults:
    """The paths on one stack and worker count, `--rounds` times in alternation with the bare
    page and, with `ref`, with the reference's same path (renderer first in even rounds,
    reference first in odd ones)."""
    renderer, url = start_renderer(redis_url, tmp, http, workers)
    bare = reference = None
    try:
        page_bytes, _ = check_paths(url, visitors)
        bare = start_bare(page_bytes, http, workers)
        assert abs(len(httpx.get(bare[1] + PATH).content) - page_bytes) <= 1
        if ref is not None:
            reference = start_reference(args.reference, redis_url, page_bytes, http, workers)
            check_reference(reference[1], ref, visitors, page_bytes)
        # The accounts' zone sets and pages loaded in every worker (the zone-set cache's TTL
        # then re-reads them now and then, as in production).
        cookie = f"wm_{CAMPAIGN}="
        warm = [(PATH, {"Cookie": cookie + c}) for c in visitors.cookies[:FIRST_CLICK_ACCOUNTS]]
        assert asyncio.run(drive(int(url.rsplit(":", 1)[1]), warm * 8 * workers, 16)) == 0
        if reference is not None and ref is not None:
            warm = [(PATH, {"Cookie": "wm_id=" + c}) for c in ref.cookies]
            assert asyncio.run(drive(int(reference[1].rsplit(":", 1)[1]), warm * 8 * workers, 16)) == 0
        load = loads(visitors)
        ref_load = reference_loads(ref, visitors) if ref is not None else {}
        kinds = [k for k in KINDS if k == "bare" or k in args.paths]
        results: dict[str, list[Result]] = {k: [] for k in kinds}
        ref_results: dict[str, list[Result]] = {k: [] for k in kinds if k in ref_load}
        offsets = dict.fromkeys(kinds, 0)
        ref_offsets = dict.fromkeys(ref_results, 0)
        reused: set[str] = set()
        cpu = 1 if workers == 1 else None  # one worker: it has CPU 0, wrk CPU 1; else unpinned
        client = redis.Redis.from_url(redis_url)
        redis_pid = int(client.info("server")["process_id"])

        def measure(
            process: subprocess.Popen[bytes], base: str, req: Request, at: dict[str, int], kind: str, who: str
        ) -> Result:
            cpu0, wait0 = tree_cpu_seconds(process.pid), tree_wait_seconds(process.pid)
            ops0, redis0, forks0 = renderer_ops(client), tree_cpu_seconds(redis_pid), redis_forks(client)
            result = run_wrk(base, req, args.seconds, args.connections, tmp, at[kind], cpu)
            result.wait_share = (tree_wait_seconds(process.pid) - wait0) / args.seconds
            result.redis_forks = redis_forks(client) - forks0
            result.cpu_us = (tree_cpu_seconds(process.pid) - cpu0) / max(result.requests, 1) * 1e6
            result.redis_cpu_us = (tree_cpu_seconds(redis_pid) - redis0) / max(result.requests, 1) * 1e6
            result.redis_ops = (renderer_ops(client) - ops0) / max(result.requests, 1)
            at[kind] += result.requests  # first clicks: the next run goes on with new tokens
            if kind in ("link_first", "qr") and at[kind] > len(req.pool):
                reused.add(f"{who} {kind}")
            return result

        for round_ in range(args.rounds):
            for kind in kinds:
                if kind == "bare":
                    results[kind].append(measure(bare[0], bare[1], load[kind], offsets, kind, "bare"))
                    continue
                runs = [("renderer", renderer, url, load[kind], offsets, results)]
                if reference is not None and kind in ref_load:
                    mine = ("reference", reference[0], reference[1], ref_load[kind], ref_offsets, ref_results)
                    runs.insert(round_ % 2 == 0, mine)  # alternate who goes first
                for who, process, base, req, at, into in runs:
                    into[kind].append(measure(process, base, req, at, kind, who))
        return SetupResults(results, ref_results, sorted(reused))
    finally:
        stop(renderer)
        if bare is not None:
            stop(bare[0])
        if reference is not None:
            stop(reference[0])


def print_setup(http: str, workers: int, results: dict[str, list[Result]]) -> None:
    print(
        f"\n--http {http}, {workers} worker(s)" + (" (server on CPU 0)" if workers == 1 and pinned(0) else "")
    )
    print(
        f"{'arrival path':<38} {'req/s':>7} {'x bare':>7} {'[spread]':>11} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'p99 x bare':>10} {'[spread]':>11} {'cpu us':>6} {'bare/cpu':>8} {'errors':>6} {'redis ops':>9}"
    )
    bare = results["bare"]
    for kind in results:
        runs = results[kind]
        rps = [r.rps / b.rps for r, b in zip(runs, bare, strict=True)]
        p99 = [r.p99_ms / b.p99_ms for r, b in zip(runs, bare, strict=True)]
        cpu = [b.cpu_us / r.cpu_us for r, b in zip(runs, bare, strict=True) if r.cpu_us]
        print(
            f"{LABELS[kind]:<38} {median([r.rps for r in runs]):>7.0f} {median(rps):>7.2f} "
            f"{f'[{min(rps):.2f}-{max(rps):.2f}]':>11} "
            f"{median([r.p50_ms for r in runs]):>7.2f} {median([r.p99_ms for r in runs]):>7.2f} "
            f"{median(p99):>10.2f} {f'[{min(p99):.2f}-{max(p99):.2f}]':>11} "
            f"{median([r.cpu_us for r in runs]):>6.0f} {median(cpu) if cpu else 0:>8.2f} "
            f"{sum(r.errors for r in runs):>6} {median([r.redis_ops for r in runs]):>9.3f}"
        )


def print_against_reference(results: SetupResults) -> None:
    """The issue-31 table: per path, renderer over reference (req/s, p99) and over bare, each
    ratio taken within a round, then the median [min-max] over rounds; CPU per request of both."""
    if not results.reference:
        return
    bare = results.renderer["bare"]
    print(
        f"\n{'against the reference':<26} {'rend/ref req/s':>20} {'p99 rend/ref':>20} {'rend/bare':>18} "
        f"{'ref/bare':>9} {'rend req/s':>10} {'ref req/s':>9} {'p99 rend':>8} {'p99 ref':>7} "
        f"{'cpu us rend':>11} {'ref':>5} {'redis cpu us rend':>17} {'ref':>5}"
    )

    def cell(values: list[float]) -> str:
        return f"{median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"

    for kind in REFERENCE_KINDS:
        if kind not in results.reference:
            continue
        mine, theirs = results.renderer[kind], results.reference[kind]
        rps = [m.rps / t.rps for m, t in zip(mine, theirs, strict=True)]
        p99 = [m.p99_ms / t.p99_ms for m, t in zip(mine, theirs, strict=True)]
        over_bare = [m.rps / b.rps for m, b in zip(mine, bare, strict=True)]
        ref_bare = [t.rps / b.rps for t, b in zip(theirs, bare, strict=True)]
        print(
            f"{REFERENCE_LABELS[kind]:<26} {cell(rps):>20} {cell(p99):>20} {cell(over_bare):>18} "
            f"{median(ref_bare):>9.2f} {median([m.rps for m in mine]):>10.0f} "
            f"{median([t.rps for t in theirs]):>9.0f} {median([m.p99_ms for m in mine]):>8.1f} "
            f"{median([t.p99_ms for t in theirs]):>7.1f} {median([m.cpu_us for m in mine]):>11.0f} "
            f"{median([t.cpu_us for t in theirs]):>5.0f} {median([m.redis_cpu_us for m in mine]):>17.1f} "
            f"{median([t.redis_cpu_us for t in theirs]):>5.1f}"
        )
    errors = sum(r.errors for runs in results.reference.values() for r in runs)
    print(f"reference errors (non-2xx/3xx, socket): {errors}")
    if results.reused:
        print(
            "WARNING: first-click tokens seen before (pool walked past its end; raise --first-clicks): "
            + ", ".join(results.reused)
        )


def stream_count(client: redis.Redis, key: str, after: str) -> tuple[int, int]:
    """(entries, events) of the event stream written after the entry id `after`."""
    entries = events = 0
    start = f"({after}"
    while page := client.xrange(key, min=start, max="+", count=500):
        for raw_id, fields in page:
            entries += 1
            events += len(entry_events(raw_id.decode(), fields))
        start = f"({page[-1][0].decode()}"
    return entries, events


def throughput(
    args: argparse.Namespace, visitors: Visitors, redis_url: str, tmp: Path, ref: ReferenceVisitors | None
) -> None:
    client = redis.Redis.from_url(redis_url)
    last = client.xrevrange(keys.events_stream_key(TENANT), count=1)
    events_after = last[0][0].decode() if last else "0-0"
    print(
        f"load: wrk (one thread), {args.connections} connections, {args.seconds:g} s a path x "
        f"{args.rounds} rounds in alternation; one worker: server on CPU 0, wrk and Redis on CPU 1; "
        f"two workers: unpinned; {len(visitors.cookies):,} zone sets published; first clicks: "
        f"{len(visitors.first_links):,} link and QR tokens of distinct contacts over "
        f"{min(FIRST_CLICK_ACCOUNTS, len(visitors.cookies)):,} accounts; {os.cpu_count()} CPUs, "
        f"Python {sys.version.split()[0]}"
    )
    print("medians over rounds [min-max]; each ratio is taken within a round (against that round's bare run)")
    print("cpu us: the server's processes' CPU per request; bare/cpu: bare's over this path's")
    print(f"bare page and reference on {args.baselines_on}'s HTTP protocol (--baselines-on)")
    if any(w > 1 for w in args.workers):
        sockets = "a listening socket each" if args.reuse_port else "one listening socket shared"
        print(f"two or more workers: {sockets}, on every server (--reuse-port)")
    if ref is not None:
        print(f"reference: {args.reference}, same stack, workers and pinning; its own tokens and stream")
    summary: dict[str, dict[str, list[dict[str, float]]]] = {}
    for http in args.http:
        for workers in args.workers:
            results = one_setup(args, visitors, redis_url, tmp, http, workers, ref)
            print_setup(http, workers, results.renderer)
            print_against_reference(results)
            summary[f"{http}/{workers}"] = {
                kind: [vars(r) for r in runs] for kind, runs in results.renderer.items()
            }
            summary[f"{http}/{workers}"].update(
                {f"reference:{kind}": [vars(r) for r in runs] for kind, runs in results.reference.items()}
            )
    entries, events = stream_count(client, keys.events_stream_key(TENANT), events_after)
    print(f"\nevents written to the stream during the run (views, QR scans): {events:,}, {entries:,} entries")
    for http in args.http:
        if len(args.workers) > 1 and 1 in args.workers:
            one = summary[f"{http}/1"]
            for n in args.workers:
                if n == 1:
                    continue
                many = summary[f"{http}/{n}"]
                rates = {
                    kind: median([r["rps"] for r in many[kind]]) / median([r["rps"] for r in one[kind]])
                    for kind in ("bare", "cookie", "link_first", "anonymous")
                    if kind in many and kind in one
                }
                line = ", ".join(f"{kind} {rate:.2f}x" for kind, rate in rates.items())
                print(f"--http {http}: {n} workers over 1 (median req/s): {line}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))


def memory(args: argparse.Namespace, visitors: Visitors, redis_url: str, tmp: Path) -> None:
    client = redis.Redis.from_url(redis_url)
    process, url = start_renderer(redis_url, tmp)
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
        ops = 0
        for first in range(0, n * args.memory_steps, n):
            started, ops0 = time.perf_counter(), renderer_ops(client)
            failures += asyncio.run(drive(port, requests(first, first + n), 16))
            ops += renderer_ops(client) - ops0
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
    per_account = ops / (args.distinct * args.memory_steps)
    print(f"Redis commands per distinct account (two cache-miss requests): {per_account:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--http", nargs="+", choices=["fast", "h11"], default=["fast", "h11"])
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    parser.add_argument(
        "--first-clicks", type=int, default=200_000, help="distinct link and QR tokens (each cycled)"
    )
    parser.add_argument(
        "--paths", nargs="+", choices=KINDS[1:], default=list(KINDS[1:]), help="the paths measured (and bare)"
    )
    parser.add_argument(
        "--reference", type=Path, default=DEFAULT_REFERENCE, help="the same-work reference app (issue 31)"
    )
    parser.add_argument("--no-reference", action="store_true", help="leave the reference out")
    parser.add_argument("--serve-reference", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--accounts", type=int, default=100_000, help="personal zone sets published")
    parser.add_argument("--distinct", type=int, default=20_000, help="accounts per memory step")
    parser.add_argument("--memory-steps", type=int, default=3, help="memory steps of --distinct accounts")
    parser.add_argument("--skip-memory", action="store_true", help="throughput only")
    parser.add_argument("--skip-throughput", action="store_true", help="memory only")
    parser.add_argument("--json", type=Path, help="also write every round's figures here")
    parser.add_argument(
        "--baselines-on",
        choices=["uvicorn", "welcomemat"],
        default="uvicorn",
        help="the bare page's and the reference's HTTP protocol: uvicorn's own, or welcomemat serve's",
    )
    parser.add_argument(
        "--erasures", type=int, default=0, help="erased subjects on the tenant's list (none a visitor)"
    )
    parser.add_argument(
        "--reuse-port",
        action="store_true",
        help="two or more workers listen on a socket each (`serve --reuse-port`) instead of sharing one, "
        "on every server",
    )
    parser.add_argument("--serve-bare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--page-bytes", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bare:
        serve_bare(args.port, args.page_bytes, args.http[0], args.workers[0])
        return
    if args.serve_reference:
        serve_reference(args.reference.resolve(), args.port, args.page_bytes, args.http[0], args.workers[0])
        return
    if args.seconds <= 0 or args.rounds < 1 or args.connections < 1:
        parser.error("--seconds must be above 0, --rounds and --connections at least 1")
    if args.erasures < 0:
        parser.error("--erasures must be 0 or more")
    if not args.skip_throughput and args.first_clicks < 1:
        parser.error("--first-clicks must be at least 1 (the first-click rows walk them)")
    os.environ[_BASELINES_ON] = args.baselines_on  # read by the bare and reference processes
    os.environ[_REUSE_PORT] = "1" if args.reuse_port else "0"  # and by start_renderer
    use_reference = not args.skip_throughput and not args.no_reference
    if use_reference and not args.reference.is_file():
        parser.error(f"{args.reference}: no reference app there (--reference FILE, or --no-reference)")
    args.reference = args.reference.resolve()
    links = 32 if args.skip_memory else args.memory_steps * args.distinct
    if args.accounts < max(links, 32):
        parser.error(f"--accounts must be at least {max(links, 32)} (--memory-steps x --distinct)")
    if not args.skip_throughput and not ensure_wrk():
        parser.error("wrk is needed for the throughput figures (Debian: apt-get install wrk)")
    first_clicks = 0 if args.skip_throughput else args.first_clicks
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as redis_url:
        client = redis.Redis.from_url(redis_url)
        if pinned(1):
            redis_pid = str(client.info("server")["process_id"])
            subprocess.run(["taskset", "-pc", "1", redis_pid], check=True, capture_output=True)
        started = time.perf_counter()
        visitors = publish(client, args.accounts, links, first_clicks)
        print(
            f"published {args.accounts:,} zone sets (ZoneSetStore.publish_many, batches of {PUBLISH_BATCH:,})"
            f" and signed their tokens in {time.perf_counter() - started:.1f} s; "
            f"Redis used_memory {used_memory_mib(client):.0f} MiB"
        )
        if args.erasures:
            erase_others(client, visitors, args.erasures)
            print(f"{args.erasures:,} erased subjects on the tenant's erasure list (none of them a visitor)")
        if not args.skip_throughput:
            ref = reference_tokens(args.reference, first_clicks) if use_reference else None
            throughput(args, visitors, redis_url, Path(tmp), ref)
        if not args.skip_memory:
            memory(args, visitors, redis_url, Path(tmp))


if __name__ == "__main__":
    main()
