#!/usr/bin/env python3
"""The snippet's API in process: `/v1/zones` and `/v1/events` against a bare Starlette answer.

    .venv/bin/python bench/bench_snippet_api.py [--requests 3000] [--rounds 5]

No HTTP server: each request is one ASGI call with a prepared scope, so the figures are the
renderer's own work per request (routing, middleware, handler, response), without the
HTTP parser that dominates a served request (`bench_renderer.py` measures that). Its own
embedded Redis in a temp folder, the example campaign and one personal zone set.

- baseline: a bare Starlette app answering a constant JSON body of the same size;
- zones, personal (cookie): identified by cookie, zone set and payload cached, view token signed;
- zones, anonymous: the default copy, payload cached, view token signed;
- landing page (cookie): the server-rendered page, for comparison;
- events, view beacon: body read and checked, view token verified, event queued (the writer
  thread writes batches to Redis meanwhile); a different client address per request.

Apps are measured in alternation, `--rounds` times; ratios are taken within each round and
medians reported.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import redis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from server.app import create_app  # noqa: E402
from welcomemat import keys  # noqa: E402
from welcomemat.arms import Arm, assign_arm  # noqa: E402
from welcomemat.campaign.config import encode_campaign_config  # noqa: E402
from welcomemat.campaign.contract import load_campaign  # noqa: E402
from welcomemat.security.tokens import TokenKind, TokenSigner  # noqa: E402
from welcomemat.settings import Settings  # noqa: E402
from welcomemat.storage.embedded_redis import temporary_redis  # noqa: E402
from welcomemat.zones.contract import load_zone_contracts  # noqa: E402
from welcomemat.zones.store import ZoneSetStore  # noqa: E402
from welcomemat.zones.zoneset import CitedFact, Rung, ZoneContent, ZoneSet, ZoneSetMode, ZoneSetStatus  # noqa: E402

SECRET = "bench-secret-0123456789abcdefghijklmnopqrstuvwxyz"
TENANT, CAMPAIGN = "acme", "q4-pipeline"
ORIGIN = b"https://www.acmerevenue.example"
BROWSER = b"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"

Call = Callable[[int], Any]


def personal_account() -> str:
    for i in range(10_000):
        account = f"acct_bench_{i}"
        if assign_arm(TENANT, CAMPAIGN, account, 0.10) is Arm.PERSONAL:
            return account
    raise AssertionError("no personal account")


def publish(client: redis.Redis, account: str) -> None:
    zones = dict(load_zone_contracts(ROOT / "zones"))
    campaign = load_campaign(ROOT / "examples" / "campaign.yaml", zones)
    config = encode_campaign_config(campaign, zones, policy={})
    client.set(keys.campaign_config_key(TENANT, CAMPAIGN), config)
    client.hset(keys.campaigns_index_key(), f"{TENANT}/{CAMPAIGN}", CAMPAIGN)
    fact = CitedFact(fact_id="f1", source_url="https://dymaxa.com/press", published_at=date(2026, 11, 26))
    ZoneSetStore(client).publish(
        ZoneSet(
            tenant=TENANT,
            campaign=CAMPAIGN,
            account_id=account,
            segment="saas-mid",
            input_hash="bench-input-hash",
            guideline_version="2026-11-01",
            created_at=datetime.now(UTC),
            valid_until=datetime.now(UTC) + timedelta(days=7),
            status=ZoneSetStatus.PUBLISHED,
            mode=ZoneSetMode.DEGRADED,
            zones=(
                ZoneContent(
                    zone_id="hero_headline",
                    text="Congrats on the Series A, Dymaxa",
                    rung=Rung.PERSONAL,
                    reason="personal:funding",
                    facts=(fact,),
                ),
            ),
        )
    )


def caller(
    app: Starlette,
    method: str,
    path: str,
    query: bytes,
    headers: list[tuple[bytes, bytes]],
    body: Callable[[int], bytes] | None = None,
) -> Call:
    async def call(n: int) -> int:
        status = 0
        payload = body(n) if body is not None else b""
        scope = {
            "type": "http",
            "http_version": "1.1",
            "method": method,
            "scheme": "https",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query,
            "headers": headers,
            "client": (f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}", 40000),
            "server": ("testserver", 443),
            "root_path": "",
        }

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": payload, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]

        await app(scope, receive, send)
        return status

    return call


async def measure(call: Call, requests: int, offset: int) -> float:
    started = time.perf_counter()
    for n in range(requests):
        await call(offset + n)
    return (time.perf_counter() - started) / requests


async def main(requests: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as home, temporary_redis(Path(home)) as url:
        client = redis.Redis.from_url(url)
        account = personal_account()
        publish(client, account)
        settings = Settings.from_env(
            {}, secret=SECRET, public_url="https://testserver", allowed_hosts=("testserver",)
        )
        app = create_app(settings, redis_client=client)
        signer = TokenSigner([SECRET])
        cookie = signer.sign(
            TokenKind.COOKIE, tenant=TENANT, campaign=CAMPAIGN, account=account, ttl_s=86_400
        )
        base = [(b"host", b"testserver"), (b"origin", ORIGIN), (b"user-agent", BROWSER)]
        with_cookie = [*base, (b"cookie", f"wm_{CAMPAIGN}={cookie}".encode())]
        query = f"campaign={CAMPAIGN}".encode()
        zones_personal = caller(app, "GET", "/v1/zones", query, with_cookie)
        zones_anonymous = caller(app, "GET", "/v1/zones", query, base)
        page = caller(app, "GET", f"/c/{CAMPAIGN}", b"", with_cookie)
        view = signer.sign_view(
            tenant=TENANT,
            campaign=CAMPAIGN,
            view_id="benchview0000000",
            arm=Arm.PERSONAL,
            rung="personal",
            account=account,
        )

        def beacon(n: int) -> bytes:
            return json.dumps(
                {"campaign": CAMPAIGN, "view": view, "event_id": f"ev{n}", "type": "view"}
            ).encode()

        events = caller(
            app, "POST", "/v1/events", b"", [*base, (b"content-type", b"text/plain;charset=UTF-8")], beacon
        )

        await zones_personal(0)  # load the campaign, fill the caches

        async def capture() -> bytes:
            chunks: list[bytes] = []

            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.body":
                    chunks.append(message.get("body", b""))

            scope = {
                "type": "http",
                "http_version": "1.1",
                "method": "GET",
                "scheme": "https",
                "path": "/v1/zones",
                "raw_path": b"/v1/zones",
                "query_string": query,
                "headers": with_cookie,
                "client": ("10.0.0.1", 1),
                "server": ("testserver", 443),
                "root_path": "",
            }

            async def receive() -> dict[str, Any]:
                return {"type": "http.request", "body": b"", "more_body": False}

            await app(scope, receive, send)
            return b"".join(chunks)

        sample = await capture()

        async def bare_endpoint(request: Request) -> Response:
            return Response(
                sample, media_type="application/json", headers={"cache-control": "private, no-store"}
            )

        bare = caller(Starlette(routes=[Route("/v1/zones", bare_endpoint)]), "GET", "/v1/zones", query, base)
        for check, expected in (
            (zones_personal, 200),
            (zones_anonymous, 200),
            (page, 200),
            (events, 204),
            (bare, 200),
        ):
            status = await check(10_000_000)
            assert status == expected, (status, expected)

        rows = {
            "baseline: bare Starlette, constant JSON": bare,
            "/v1/zones, personal (cookie, cached)": zones_personal,
            "/v1/zones, anonymous": zones_anonymous,
            "landing page (cookie, cached)": page,
            "POST /v1/events, view beacon": events,
        }
        times: dict[str, list[float]] = {name: [] for name in rows}
        ratios: dict[str, list[float]] = {name: [] for name in rows}
        offset = 0
        for _ in range(rounds):
            this_round = {}
            for name, call in rows.items():
                offset += requests
                this_round[name] = await measure(call, requests, offset)
                times[name].append(this_round[name])
            baseline = this_round["baseline: bare Starlette, constant JSON"]
            for name in rows:
                ratios[name].append(this_round[name] / baseline)
        app.state.renderer.close()
        client.close()

    print(f"{'request':42} {'us/req':>8} {'x bare':>7}   (zones body {len(sample)} bytes)")
    for name in rows:
        print(f"{name:42} {statistics.median(times[name]) * 1e6:8.1f} {statistics.median(ratios[name]):7.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.requests, args.rounds))
