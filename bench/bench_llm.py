#!/usr/bin/env python3
"""The `openai` provider against a local OpenAI-compatible server with a fixed latency.

    .venv/bin/python bench/bench_llm.py [--latency 0.1] [--concurrency 8 32 128] [--accounts 600]
        [--repeat 3] [--worker-concurrency 32] [--workers 1 2 4] [--no-workers]

The test server (tests/llm_server.py) runs in its own process, answering every call after
`--latency` seconds; Redis is a temporary embedded one. Every account in the sample has a
trusted fact, so every account calls the model (generation + self-review). Measured in
the same run, for each concurrency C (median of `--repeat` runs, range in brackets):

- `acct/s`: a whole precompute run (`PrecomputeRun.run`: context, model calls, checks,
  publish to Redis) over the sample;
- `ideal/s`: the concurrency-bound ideal, C / (calls per account x latency);
- `client/s` (the baseline): the official `openai` client alone sending the same two
  requests per account (bodies captured from a real run) at the same concurrency, the
  way the provider sends them (encoded bodies through `post`, one connection per thread:
  `ThreadConnectionTransport`), with no pipeline around it; `x client` is the run's rate
  over it;
- CPU per account, of this process (`client ms`) and of the server process
  (`server ms`), from the kernel's accounting: less sensitive to a busy machine than
  rates. One Python process runs on about one core (its interpreter lock), and the
  server shares the machine's cores, so this machine can do at most
  `cpu/s` = min(1000 / client ms, cores x 1000 / (client ms + server ms)) accounts/s
  whatever the concurrency; `ratio cpu` is the run's rate over min(ideal, cpu/s).

Also measured: the server's own ceiling (zero latency, driven by `wrk` when installed,
which costs far less per request than the server), the client's CPU per call on the
SDK's typed path (`chat.completions.create`), on `post` through httpx's own shared
connection pool, and on the provider's path (`post` through `ThreadConnectionTransport`), and
`--workers` counts of `welcomemat worker --once` processes draining the same enqueued run (`wall/s` from
their start, `steady/s` once each has done about one entry, so without interpreter
start-up), each also against the ideal of its total concurrency (workers x
`--worker-concurrency`), next to the machine's own two-processes-over-one ceiling
(bench_workers.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import openai
import redis

from precompute.context_builder import build_context
from precompute.policy import build_policy
from precompute.providers.http_transport import ThreadConnectionTransport
from precompute.providers.openai_provider import OpenAIProvider
from precompute.queue import WORK_CHUNK_SIZE, latest_run_id
from precompute.run import PrecomputeRun
from welcomemat import keys
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.records.accounts import read_accounts
from welcomemat.settings import Settings
from welcomemat.storage.embedded_redis import temporary_redis
from welcomemat.zones.contract import ZoneContract, load_zone_contracts

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
from bench_workers import machine_ceiling  # noqa: E402
from proc_stats import cpu_seconds  # noqa: E402
from redis_stats import account_bytes, command_calls, format_calls, server_cpu_seconds  # noqa: E402

from tests.example_accounts import write_example_accounts  # noqa: E402
from tests.llm_server import LLMTestServer  # noqa: E402

CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
COMPLETIONS = "/chat/completions"


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.llm_server", "--latency", str(latency)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def make_client(base_url: str, concurrency: int, *, pooled: bool = False) -> openai.OpenAI:
    """The client as the provider builds it; `pooled`: on httpx's own shared connection pool instead."""
    limits = type(openai.DEFAULT_CONNECTION_LIMITS)(
        max_connections=max(1000, 2 * concurrency), max_keepalive_connections=max(100, concurrency)
    )
    transport = None if pooled else ThreadConnectionTransport()
    return openai.OpenAI(
        base_url=base_url,
        api_key="k",
        max_retries=0,
        timeout=30,
        http_client=openai.DefaultHttpxClient(limits=limits, transport=transport),
    )


def encoded(body: dict[str, Any]) -> bytes:
    """A request body as the provider sends it (`request_body`: the client's own encoding)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass
class Sample:
    rate: float  # accounts/s
    client_ms: float  # this process's CPU per account
    server_ms: float  # the server's CPU per account
    calls: float = 2.0  # model calls per account


def run_pipeline(
    client: redis.Redis,
    settings: Settings,
    campaign: Campaign,
    zones: dict[str, ZoneContract],
    path: Path,
    concurrency: int,
    now: datetime,
    server_pid: int,
) -> Sample:
    client.flushdb()
    provider = OpenAIProvider.from_settings(settings, concurrency=concurrency, deadline_s=600)
    run = PrecomputeRun(
        client=client,
        campaign=campaign,
        zones=zones,
        policy=build_policy(campaign, None),
        provider=provider,
        concurrency=concurrency,
        now=now,
    )
    server0, cpu0, started = cpu_seconds(server_pid), time.process_time(), time.perf_counter()
    report = run.run(path)
    seconds = time.perf_counter() - started
    cpu, server = time.process_time() - cpu0, cpu_seconds(server_pid) - server0
    provider.close()
    n = max(report.accounts, 1)
    return Sample(n / seconds, cpu / n * 1000, server / n * 1000, report.model_calls / n)


def run_client_only(
    base_url: str, bodies: Sequence[dict[str, Any]], accounts: int, concurrency: int, server_pid: int
) -> Sample:
    """The baseline: the same requests per account through the bare client, nothing around it."""
    client = make_client(base_url, concurrency)
    contents = [encoded(b) for b in bodies]

    def account(_: int) -> None:
        for content in contents:
            json.loads(client.post(COMPLETIONS, cast_to=bytes, content=content, options={"timeout": 30.0}))

    account(0)  # connect once outside the measurement
    server0, cpu0, started = cpu_seconds(server_pid), time.process_time(), time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(account, range(accounts)))
    seconds = time.perf_counter() - started
    cpu, server = time.process_time() - cpu0, cpu_seconds(server_pid) - server0
    client.close()
    return Sample(accounts / seconds, cpu / accounts * 1000, server / accounts * 1000, len(bodies))


CALL_PATHS = ("create", "pooled post", "provider")


def client_ms_per_call(
    base_url: str, bodies: Sequence[dict[str, Any]], calls: int, concurrency: int, path: str
) -> float:
    """This process's CPU per call on one of `CALL_PATHS`.

    `create`: the SDK's typed `chat.completions.create`; `pooled post`: the generic `post`
    with a dict body through httpx's shared connection pool; `provider`: the provider's
    path, an encoded body through `post` and one connection per thread.
    """
    client = make_client(base_url, concurrency, pooled=path != "provider")
    contents = [encoded(b) for b in bodies]

    def call(i: int) -> None:
        body = bodies[i % len(bodies)]
        if path == "create":
            raw = client.chat.completions.with_raw_response.create(
                model=body["model"],
                messages=body["messages"],
                extra_body={"response_format": body["response_format"]},
            )
            json.loads(raw.http_response.content)
        elif path == "pooled post":
            json.loads(client.post(COMPLETIONS, cast_to=bytes, body=body))
        else:
            content = contents[i % len(contents)]
            json.loads(client.post(COMPLETIONS, cast_to=bytes, content=content, options={"timeout": 30.0}))

    call(0)
    cpu0 = time.process_time()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(call, range(calls)))
    cpu = time.process_time() - cpu0
    client.close()
    return cpu / calls * 1000


def capture_bodies(
    client: redis.Redis, settings: Settings, campaign: Campaign, zones: dict[str, ZoneContract], path: Path
) -> list[dict[str, Any]]:
    """The generation and self-review request bodies of one real account, as the provider sends them."""
    one = path.with_name("one.jsonl")
    one.write_text(path.read_text().splitlines()[0] + "\n")
    with LLMTestServer() as capture:
        local = Settings.from_env(
            {}, openai_base_url=capture.base_url, model=settings.model, openai_api_key="k"
        )
        provider = OpenAIProvider.from_settings(local)
        PrecomputeRun(
            client=client,
            campaign=campaign,
            zones=zones,
            policy=build_policy(campaign, None),
            provider=provider,
            now=datetime.now(UTC),
        ).run(one)
        provider.close()
        bodies = [r.body for r in capture.requests()]
    client.flushdb()
    kinds = sorted(b["response_format"]["json_schema"]["name"] for b in bodies)
    assert kinds == ["PageDraft", "PageReview"], kinds
    return bodies


_WRK_LUA = """
local bodies = {}
init = function(args)
  for i, name in ipairs(args) do
    local f = io.open(name, "rb"); bodies[i] = f:read("*a"); f:close()
  end
end
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, bodies[(n % #bodies) + 1])
end
"""


def server_ceiling(
    bodies: Sequence[dict[str, Any]], workdir: Path, seconds: int
) -> tuple[float, float] | None:
    """Calls/s and CPU ms per call of a zero-latency server driven by wrk; None without wrk."""
    if shutil.which("wrk") is None:
        return None
    files = []
    for i, body in enumerate(bodies):
        files.append(workdir / f"body{i}.json")
        files[-1].write_text(json.dumps(body))
    script = workdir / "post.lua"
    script.write_text(_WRK_LUA)
    proc, base_url = start_server(0.0)
    try:

        def wrk(duration_s: int) -> str:
            cmd = ["wrk", "-t1", "-c64", f"-d{duration_s}s", "-s", str(script), base_url + COMPLETIONS, "--"]
            return subprocess.run([*cmd, *map(str, files)], check=True, capture_output=True, text=True).stdout

        wrk(1)  # warm up
        cpu0 = cpu_seconds(proc.pid)
        out = wrk(seconds)
        cpu = cpu_seconds(proc.pid) - cpu0
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    if "Non-2xx" in out:
        raise RuntimeError(f"the server refused wrk's requests:\n{out}")
    match = re.search(r"Requests/sec:\s*([\d.]+)", out)
    total = re.search(r"(\d+) requests in", out)
    if not match or not total:
        raise RuntimeError(f"unexpected wrk output:\n{out}")
    return float(match.group(1)), cpu / int(total.group(1)) * 1000


def median_range(values: Sequence[float], fmt: str) -> str:
    mid = format(statistics.median(values), fmt)
    if len(values) < 2:
        return mid
    return f"{mid} [{format(min(values), fmt)}-{format(max(values), fmt)}]"


def workers_section(
    campaign: Campaign,
    path: Path,
    url: str,
    base_url: str,
    tmp: Path,
    accounts: int,
    concurrency: int,
    latency: float,
    counts: Sequence[int],
    server_pid: int,
) -> None:
    """1, 2, 4 ... `welcomemat worker --once` processes draining the same enqueued run against
    one Redis and one model server.

    Also each run against the concurrency-bound ideal of its total concurrency (workers x
    per-worker concurrency, two calls per account), its efficiency against linear scaling
    (steady rate over N x one worker's), the CPU per account of the worker processes
    (`os.wait4` rusage: all of each process's life, start-up included), of the Redis server
    (INFO cpu) and of the model server (/proc), and the Redis commands per account (INFO
    commandstats, reset after enqueueing; the bench's own progress polls taken out).
    """
    print(f"\nworkers (welcomemat worker --once, C {concurrency} each, one Redis, one model server):")
    print(
        f"{'workers':>7} {'total C':>7} {'wall/s':>7} {'steady/s':>8} {'x one':>6} {'eff':>5} "
        f"{'ideal/s':>7} {'steady/ideal':>12} {'worker ms':>9} {'redis ms':>8} {'model ms':>8} "
        "redis ops/account"
    )
    env = {
        **os.environ,
        "REDIS_URL": url,
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "k",
        "WELCOMEMAT_MODEL": "bench-model",
        "WELCOMEMAT_HOME": str(tmp / "home"),
    }
    welcomemat = str(Path(sys.executable).parent / "welcomemat")
    client = redis.Redis.from_url(url)
    one = 0.0
    for workers in counts:
        client.flushdb()
        subprocess.run(
            [
                welcomemat,
                "precompute",
                str(ROOT / "examples" / "campaign.yaml"),
                str(path),
                "--enqueue",
                "--provider",
                "openai",
                "--concurrency",
                str(concurrency),
                "--deadline",
                "600",
            ],
            env=env,
            check=True,
            capture_output=True,
        )
        run_id = latest_run_id(client, campaign.tenant, campaign.campaign)
        assert run_id is not None
        run_key = keys.run_key(campaign.tenant, campaign.campaign, run_id)
        client.config_resetstat()
        redis_cpu, model_cpu = server_cpu_seconds(client), cpu_seconds(server_pid)
        started = time.perf_counter()
        procs = [
            subprocess.Popen(
                [welcomemat, "worker", "--once"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(workers)
        ]
        # Steady: once as many entries are done as there are workers (each has started up
        # and done about one) until the last; interpreter start-up and imports excluded.
        first_at, first_done, polls = 0.0, 0, 0
        while (done := int(client.hget(run_key, "processed") or 0)) < accounts:
            polls += 1
            if not first_at and done >= workers * WORK_CHUNK_SIZE:
                first_at, first_done = time.perf_counter(), done
            if all(p.poll() is not None for p in procs):
                raise SystemExit(f"workers exited with {done} of {accounts} accounts processed")
            time.sleep(0.005)
        ended = time.perf_counter()
        worker_cpu = 0.0
        for worker in procs:
            _, _, usage = os.wait4(worker.pid, 0)
            worker.returncode = 0
            worker_cpu += usage.ru_utime + usage.ru_stime
        redis_cpu = server_cpu_seconds(client) - redis_cpu
        model_cpu = cpu_seconds(server_pid) - model_cpu
        calls = command_calls(client)
        calls["hget"] -= polls + 1
        for name in ("info", "config|resetstat", "config"):
            calls.pop(name, None)
        wall = accounts / (ended - started)
        steady = (accounts - first_done) / (ended - first_at) if first_at else wall
        one = one or steady / workers
        ideal = workers * concurrency / (2 * latency)
        print(
            f"{workers:7d} {workers * concurrency:7d} {wall:7.1f} {steady:8.1f} {steady / one:6.2f} "
            f"{steady / (workers * one):5.2f} {ideal:7.0f} {steady / ideal:12.2f} "
            f"{worker_cpu / accounts * 1000:9.2f} {redis_cpu / accounts * 1000:8.2f} "
            f"{model_cpu / accounts * 1000:8.2f} {format_calls(calls, accounts)}"
        )
    published = [a.account_id for a in read_accounts(path).accounts][:200]
    sizes = account_bytes(client, campaign.tenant, campaign.campaign, published)
    print(
        f"Redis bytes per published account (MEMORY USAGE, {len(published)} accounts): "
        f"{sum(sizes.values()):.0f} = " + ", ".join(f"{kind} {size:.0f}" for kind, size in sizes.items())
    )
    client.close()
    print(f"the machine's own two/one ceiling (two spinning processes over one): {machine_ceiling():.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, nargs="*", default=[8, 32, 128], help="none: workers only")
    parser.add_argument("--accounts", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=1, help="runs per concurrency; the median is shown")
    parser.add_argument("--ceiling-seconds", type=int, default=3)
    parser.add_argument("--worker-concurrency", type=int, default=32, help="per worker process")
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[1, 2, 4], help="worker processes (first: base)"
    )
    parser.add_argument("--no-workers", action="store_true", help="skip the workers section")
    args = parser.parse_args()
    zones = dict(load_zone_contracts(ROOT / "zones"))
    campaign = load_campaign(ROOT / "examples" / "campaign.yaml", zones)
    policy = build_policy(campaign, None)
    now = datetime.now(UTC)
    proc, base_url = start_server(args.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp_name, temporary_redis(Path(tmp_name) / "redis") as url:
            tmp = Path(tmp_name)
            pool = write_example_accounts(tmp / "pool.jsonl", args.accounts * 6, date.today())
            trusted = [
                a
                for a in read_accounts(pool).accounts
                if build_context(a, campaign, policy, now.date()).facts
            ][: args.accounts]
            path = tmp / "accounts.jsonl"
            path.write_text("".join(a.model_dump_json() + "\n" for a in trusted))
            client = redis.Redis.from_url(url)
            settings = Settings.from_env(
                {}, openai_base_url=base_url, model="bench-model", openai_api_key="k"
            )
            bodies = capture_bodies(client, settings, campaign, zones, path)
            n = len(trusted)
            print(
                f"{n} accounts with a trusted fact; server latency {args.latency * 1000:.0f} ms; "
                f"{CORES} cores; Python {sys.version.split()[0]}, openai {openai.__version__}"
            )

            if args.concurrency:  # none: the workers section alone
                ceiling = server_ceiling(bodies, tmp, args.ceiling_seconds)
                if ceiling is None:
                    print("server ceiling: wrk not installed (see `server ms` below for its CPU per account)")
                else:
                    calls_s, ms = ceiling
                    print(
                        f"server ceiling (zero latency, wrk, 64 connections): {calls_s:.0f} calls/s "
                        f"= {calls_s / 2:.0f} accounts/s; {ms:.2f} ms CPU per call"
                    )
                paths: dict[str, list[float]] = {p: [] for p in CALL_PATHS}
                for _ in range(3):  # alternated; medians
                    for name in CALL_PATHS:
                        paths[name].append(client_ms_per_call(base_url, bodies, 400, 32, name))
                per_call = {name: statistics.median(values) for name, values in paths.items()}
                print(
                    "client CPU per call at concurrency 32: "
                    + ", ".join(f"{name} {per_call[name]:.2f} ms" for name in CALL_PATHS)
                    + f" ({per_call['create'] / per_call['provider']:.2f}x and "
                    f"{per_call['pooled post'] / per_call['provider']:.2f}x the provider's)"
                )

                print(
                    f"\n{'C':>4} {'acct/s':>18} {'ideal/s':>7} {'ratio':>5} {'client/s':>18} {'x client':>8} "
                    f"{'client ms':>9} {'server ms':>9} {'cpu/s':>6} {'ratio cpu':>9} {'calls':>5}"
                )
                short_of_ideal: list[tuple[int, float, float]] = []
                for concurrency in args.concurrency:
                    runs: list[Sample] = []
                    bases: list[Sample] = []
                    for _ in range(args.repeat):  # interleaved, so both see the same neighbours
                        runs.append(
                            run_pipeline(client, settings, campaign, zones, path, concurrency, now, proc.pid)
                        )
                        bases.append(run_client_only(base_url, bodies, n, concurrency, proc.pid))
                    rates = [s.rate for s in runs]
                    rate = statistics.median(rates)
                    calls = statistics.median(s.calls for s in runs)
                    ideal = concurrency / (calls * args.latency)
                    client_ms = statistics.median(s.client_ms for s in runs)
                    server_ms = statistics.median(s.server_ms for s in runs)
                    cpu_bound = min(1000 / client_ms, CORES * 1000 / (client_ms + server_ms))
                    if cpu_bound < ideal:
                        short_of_ideal.append((concurrency, ideal, cpu_bound))
                    print(
                        f"{concurrency:4d} {median_range(rates, '.1f'):>18} {ideal:7.0f} {rate / ideal:5.2f} "
                        f"{median_range([b.rate for b in bases], '.1f'):>18} "
                        f"{statistics.median(r.rate / b.rate for r, b in zip(runs, bases, strict=True)):8.2f}"
                        f" {client_ms:9.2f} {server_ms:9.2f} {cpu_bound:6.0f}"
                        f" {rate / min(ideal, cpu_bound):9.2f} "
                        f"{calls:5.2f}"
                    )
                for concurrency, ideal, cpu_bound in short_of_ideal:
                    print(
                        f"at concurrency {concurrency} the ideal ({ideal:.0f} accounts/s) is beyond this "
                        f"machine: its {CORES} cores, shared by client and server, do at most "
                        f"{cpu_bound:.0f} accounts/s"
                    )
            client.close()
            if not args.no_workers:
                workers_section(
                    campaign,
                    path,
                    url,
                    base_url,
                    tmp,
                    n,
                    args.worker_concurrency,
                    args.latency,
                    args.workers,
                    proc.pid,
                )
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
