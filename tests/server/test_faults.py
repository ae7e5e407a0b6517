"""Real uvicorn, real Redis: stop Redis mid-flight, pages stay 200 with fallback; restart: personal again."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from server.app import create_app
from server.tuning import RendererTuning
from tests.server.conftest import (
    CAMPAIGN,
    link_token,
    publish_example_at,
    renderer_settings,
)
from tests.server.pagetools import zones
from tests.server.uvicorn_thread import serve_in_thread
from welcomemat.storage.embedded_redis import temporary_redis

PERSONAL_TEXT = "Congrats on the Series A, Dymaxa"
# A page must come back well within this, also while Redis is down (budget 0.25 s + margin).
PAGE_BUDGET_S = 1.0


def headline(response: httpx.Response) -> tuple[str, str]:
    assert response.status_code == 200, (response.status_code, response.text[:200])
    found = zones(response.text)
    if "hero_headline" not in found:
        return "plain", ""
    return found["hero_headline"].rung, found["hero_headline"].text


def wait_for(predicate: object, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_redis_outage_and_restart(tmp_path: Path) -> None:
    home = tmp_path / "redis"
    tuning = RendererTuning(
        zone_cache_ttl_s=0.5, breaker_reset_s=0.3, watcher_backoff_max_s=0.5, campaign_index_ttl_s=0.2
    )
    first = temporary_redis(home)
    url = first.__enter__()
    try:
        publish_example_at(url, PERSONAL_TEXT)
        time.sleep(1.1)  # appendfsync everysec: the data survives the restart below

        settings = renderer_settings(redis_url=url, allowed_hosts=("127.0.0.1",))
        app = create_app(settings, tuning=tuning)  # the app's own client, with its short timeouts
        with serve_in_thread(app) as base, httpx.Client(base_url=base, timeout=5) as http:
            params = {"wm": link_token()}
            assert headline(http.get(f"/c/{CAMPAIGN}", params=params)) == ("personal", PERSONAL_TEXT)
            assert http.get("/readyz").status_code == 200

            first.__exit__(None, None, None)  # Redis stops
            first = None
            statuses: list[int] = []
            rungs: set[str] = set()
            outage_end = time.monotonic() + 2.0
            while time.monotonic() < outage_end:
                started = time.perf_counter()
                response = http.get(f"/c/{CAMPAIGN}", params=params)
                assert time.perf_counter() - started < PAGE_BUDGET_S
                statuses.append(response.status_code)
                rungs.add(headline(response)[0])
                # Not in memory: 404 while the index says so, then (index stale, Redis down) the plain page.
                other = http.get("/c/never-loaded")
                assert other.status_code in (200, 404)
                if other.status_code == 200:
                    rungs.add(headline(other)[0])
                time.sleep(0.02)
            assert set(statuses) == {200}, statuses
            assert "plain" in rungs
            assert "default" in rungs  # once the cached zone set aged out: the fallback
            assert http.get("/readyz").status_code == 503
            metrics = http.get("/metrics").text
            assert "welcomemat_redis_errors_total" in metrics

            with temporary_redis(home):  # Redis is back, same socket, same data (AOF)
                wait_for(
                    lambda: (
                        headline(http.get(f"/c/{CAMPAIGN}", params=params)) == ("personal", PERSONAL_TEXT)
                    ),
                    10,
                    "personal content after the restart",
                )
                assert http.get("/readyz").status_code == 200
                assert http.get("/c/never-loaded").status_code == 404  # now Redis can say so
    finally:
        if first is not None:
            first.__exit__(None, None, None)
