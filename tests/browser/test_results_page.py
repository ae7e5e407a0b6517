"""The results page in Chromium: it renders, its charts draw, nothing breaks its CSP or logs an
error, and the numbers it shows are the ones `welcomemat report lift --json` prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from server.tuning import RendererTuning
from tests.browser.conftest import PageWatch
from tests.corpora import REPO_ROOT
from tests.server.admin.results_data import NOW, publish_results_campaign
from tests.server.conftest import CAMPAIGN, renderer_app, renderer_settings
from tests.server.uvicorn_thread import serve_in_thread

pytestmark = pytest.mark.browser

ADMIN = "admin-token-for-results-in-chromium-01"
WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
# Set to a path to keep the page's screenshot (docs/results-page.png, the picture README and
# docs/index.md show).
SCREENSHOT_VARIABLE = "WELCOMEMAT_RESULTS_SCREENSHOT"


@pytest.fixture
def admin_url(redis_client: redis.Redis) -> Iterator[str]:
    publish_results_campaign(redis_client)
    settings = renderer_settings(
        allowed_hosts=("127.0.0.1", "localhost"), public_url="http://127.0.0.1:8000", admin_token=ADMIN
    )
    app = renderer_app(
        settings,
        redis_client=redis_client,
        tuning=RendererTuning(watcher_poll_s=0.05, redis_timeout_s=5.0),
        clock=NOW.timestamp,
    )
    with serve_in_thread(app) as url:
        yield url


def report_lift_json(redis_url: str, home: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    env.update({"REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(home)})
    done = subprocess.run(
        [WELCOMEMAT, "report", "lift", CAMPAIGN, "--json"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    printed: dict[str, Any] = json.loads(done.stdout)
    return printed


def rate_text(e: dict[str, Any]) -> str:
    """A rate as the page writes it (templates/admin/_rate.html)."""
    if e["rate"] is None:
        return "no data"
    return (
        f"{e['rate'] * 100:.1f}% ({e['successes']}/{e['trials']}), "
        f"{e['low'] * 100:.1f}–{e['high'] * 100:.1f}%"
    )


def points(value: float) -> str:
    return f"{value * 100:+.1f}"


def test_the_results_page_renders_in_chromium_with_the_clis_numbers(
    admin_url: str, redis_url: str, tmp_path: Path, watch: PageWatch
) -> None:
    page = watch.page
    page.set_viewport_size({"width": 1280, "height": 1700})
    page.set_extra_http_headers({"authorization": f"Bearer {ADMIN}"})
    response = page.goto(f"{admin_url}/admin/results/{CAMPAIGN}")
    assert response is not None and response.status == 200
    page.wait_for_load_state("networkidle")
    watch.settle()
    assert (watch.console_errors, watch.page_errors, watch.csp_violations) == ([], [], [])
    # Nothing but the page, its stylesheet and the charts' data: URIs.
    assert {u.split("?")[0] for u in watch.requests if not u.startswith("data:")} == {
        f"{admin_url}/admin/results/{CAMPAIGN}",
        f"{admin_url}/static/admin.css",
    }
    drawn = page.evaluate(
        "() => [...document.querySelectorAll('img.wm-admin-chart')].map(i => i.complete && i.naturalWidth)"
    )
    assert len(drawn) == 5 and all(w and w > 0 for w in drawn)  # the lift chart and four daily charts

    printed = report_lift_json(redis_url, tmp_path)
    shown_counts = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll("table[data-admin='counts'] tbody tr")]
             .map(r => [r.dataset.adminArm, [...r.cells].slice(1).map(c => c.textContent)]))"""
    )
    for arm in printed["arms"]:
        expected = [
            arm[k]
            for k in (
                "accounts",
                "reached",
                "visits",
                "cta_clicks",
                "accounts_clicked",
                "conversions",
                "accounts_converted",
                "accounts_unsubscribed",
                "accounts_complained",
            )
        ]
        assert shown_counts[arm["arm"]] == [str(v) for v in expected]
    shown_lift = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll("table[data-admin='lift'] tbody tr")]
             .map(r => [r.dataset.adminMetric, [...r.cells].slice(1).map(c => c.textContent)]))"""
    )
    for m in printed["metrics"]:
        personal, holdout, fixed, always_valid, mde = shown_lift[m["metric"]]
        assert personal == rate_text(m["personal"]) and holdout == rate_text(m["holdout"])
        low, high = points(m["difference_low"]), points(m["difference_high"])
        assert fixed == f"{points(m['difference'])} points, {low} to {high}"
        assert always_valid == f"{points(m['sequential_low'])} to {points(m['sequential_high'])}"
        assert mde == f"{m['minimum_detectable_effect'] * 100:.1f} points"

    keep = os.environ.get(SCREENSHOT_VARIABLE)
    shot = Path(keep) if keep else tmp_path / "results-page.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
