"""Operations endpoints, OpenAPI, and the catch-all that keeps page routes out of 5xx."""

from __future__ import annotations

import shutil
from pathlib import Path

import redis
from starlette.testclient import TestClient

from server.render import TEMPLATES_DIR
from server.tuning import RendererTuning
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    PERSONAL_ACCOUNT,
    link_token,
    make_zone_set,
    renderer_app,
    renderer_settings,
)
from welcomemat.campaign.contract import Campaign
from welcomemat.zones.store import ZoneSetStore


def dead_redis() -> redis.Redis:
    """A client for a server that does not exist: every command fails fast."""
    return redis.Redis.from_url("unix:///nonexistent/welcomemat-test.sock", socket_connect_timeout=0.1)


def test_healthz(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_pings_redis(client: TestClient) -> None:
    assert client.get("/readyz").json() == {"status": "ok", "redis": "ok"}


def test_readyz_is_503_without_redis_and_healthz_stays_200() -> None:
    app = renderer_app(renderer_settings(), redis_client=dead_redis())
    with TestClient(app, base_url=BASE_URL) as client:
        response = client.get("/readyz")
        assert response.status_code == 503 and response.json()["status"] == "unavailable"
        assert client.get("/healthz").status_code == 200


def test_pages_without_redis_are_the_plain_page_with_200() -> None:
    app = renderer_app(renderer_settings(), redis_client=dead_redis())
    with TestClient(app, base_url=BASE_URL) as client:
        for _ in range(6):  # past the breaker's threshold, too
            response = client.get(f"/c/{CAMPAIGN}", params={"wm": link_token()})
            assert response.status_code == 200
            assert "Welcome" in response.text and "data-wm-zone" not in response.text
        metrics = client.get("/metrics").text
        assert 'welcomemat_redis_errors_total{kind="short_circuit",op="campaign_index"}' in metrics
        assert 'rung="plain"' in metrics


def test_metrics_count_requests_arms_rungs_and_caches(client: TestClient, store: ZoneSetStore) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "Hi"}))
    assert client.get(f"/c/{CAMPAIGN}/continue").status_code == 200  # loads the campaign
    watcher = next(iter(client.app.state.renderer.watchers.values()))  # type: ignore[attr-defined]
    assert watcher.subscribed.wait(5)  # subscribing clears the campaign's cache: wait for it
    for _ in range(4):
        client.get(f"/c/{CAMPAIGN}", params={"wm": link_token()})
    client.cookies.clear()
    client.get(f"/c/{CAMPAIGN}")
    response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert 'welcomemat_page_requests_total{arm="personal",route="/c/{campaign}",rung="personal"} 4.0' in text
    assert 'welcomemat_page_requests_total{arm="anonymous",route="/c/{campaign}",rung="default"} 1.0' in text
    # 1st: link only (cookie set); 2nd: link + the new cookie, full path, cache hits; 3rd:
    # both tokens seen again, full path, remembered; 4th: answered from memory.
    assert 'welcomemat_zone_cache_total{result="hit"} 2.0' in text
    assert 'welcomemat_zone_cache_total{result="miss"} 1.0' in text
    assert 'welcomemat_render_cache_total{result="hit"} 2.0' in text
    assert 'welcomemat_known_visitor_cache_total{result="hit"} 1.0' in text
    assert 'welcomemat_known_visitor_cache_total{result="miss"} 3.0' in text
    assert "welcomemat_render_seconds_bucket" in text
    assert 'welcomemat_identifications_total{method="link"} 4.0' in text


def test_each_app_has_its_own_registry(redis_client: redis.Redis, published: Campaign) -> None:
    first = renderer_app(renderer_settings(), redis_client=redis_client)
    second = renderer_app(renderer_settings(), redis_client=redis_client)
    assert first.state.renderer.metrics.registry is not second.state.renderer.metrics.registry


def test_openapi_describes_the_routes(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert schema["openapi"].startswith("3.")
    assert {
        "/c/{campaign}",
        "/c/{campaign}/continue",
        "/q/{token}",
        "/healthz",
        "/readyz",
        "/metrics",
    } <= set(schema["paths"])
    assert schema["paths"]["/q/{token}"]["get"]["responses"]["303"]["description"]


def test_unexpected_error_on_a_page_is_the_plain_page_with_200(
    tmp_path: Path, redis_client: redis.Redis, published: Campaign, store: ZoneSetStore
) -> None:
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES_DIR, templates)
    (templates / "landing.html").write_text(
        "{% extends 'base.html' %}{% block content %}{{ no_such_name }}{% endblock %}"
    )
    store.publish(make_zone_set(PERSONAL_ACCOUNT))
    app = renderer_app(renderer_settings(), redis_client=redis_client, templates_dir=templates)
    with TestClient(app, base_url=BASE_URL) as client:
        response = client.get(f"/c/{CAMPAIGN}", params={"wm": link_token()})
        assert response.status_code == 200
        assert "Welcome" in response.text
        assert response.headers["content-security-policy"]
        assert 'welcomemat_page_faults_total{route="/c/{campaign}"} 1.0' in client.get("/metrics").text


def test_slow_redis_costs_a_page_at_most_the_budget(redis_client: redis.Redis, published: Campaign) -> None:
    """A zone-set read that hangs (CLIENT PAUSE) gives the fallback within the Redis budget."""
    import time

    tuning = RendererTuning(redis_timeout_s=0.1)
    app = renderer_app(renderer_settings(), redis_client=redis_client, tuning=tuning)
    with TestClient(app, base_url=BASE_URL) as client:
        assert client.get(f"/c/{CAMPAIGN}").status_code == 200  # campaign loaded while Redis is fine
        pauser = redis.Redis(connection_pool=redis_client.connection_pool)
        pauser.execute_command("CLIENT", "PAUSE", 1500, "ALL")
        try:
            started = time.perf_counter()
            response = client.get(f"/c/{CAMPAIGN}", params={"wm": link_token()})
            elapsed = time.perf_counter() - started
        finally:
            time.sleep(1.6)  # let the pause end before the fixture flushes the database
        assert response.status_code == 200
        assert 'data-wm-rung="default"' in response.text
        assert elapsed < 1.0


def test_page_stats_split_each_page_into_its_series() -> None:
    """One increment per page at request time; at scrape time the requests, zones-by-rung and
    identification series each add up exactly."""
    from prometheus_client import CollectorRegistry, generate_latest

    from server.metrics import PageStats

    stats = PageStats()
    personal = (("personal", 3), ("segment", 2))
    for _ in range(4):
        stats.count_page("/c/{campaign}", "personal", "personal", personal, "cookie", 0.0003)
    stats.count_page("/c/{campaign}", "personal", "personal", personal, "link", 0.002)
    stats.count_page("/v1/zones", "anonymous", "default", (("default", 5),), "anonymous", 0.0004)
    stats.count_page("/c/{campaign}", "anonymous", "plain", (), None, 0.3)
    stats.count_identification("qr")
    registry = CollectorRegistry()
    registry.register(stats)
    text = generate_latest(registry).decode()
    assert 'welcomemat_page_requests_total{arm="personal",route="/c/{campaign}",rung="personal"} 5.0' in text
    assert 'welcomemat_page_requests_total{arm="anonymous",route="/c/{campaign}",rung="plain"} 1.0' in text
    assert 'welcomemat_zones_served_total{rung="personal"} 15.0' in text
    assert 'welcomemat_zones_served_total{rung="segment"} 10.0' in text
    assert 'welcomemat_zones_served_total{rung="default"} 5.0' in text
    for method, count in (("cookie", 4), ("link", 1), ("anonymous", 1), ("qr", 1)):
        assert f'welcomemat_identifications_total{{method="{method}"}} {count}.0' in text
    assert 'welcomemat_render_seconds_count{route="/c/{campaign}"} 6.0' in text
    assert 'welcomemat_render_seconds_bucket{le="0.0005",route="/c/{campaign}"} 4.0' in text
