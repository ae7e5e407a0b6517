"""`GET /admin/results/{campaign}`: the results page, its CSV and JSON, its guard."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import html5lib
import pytest
import redis
from starlette.testclient import TestClient

from tests.corpora import REPO_ROOT
from tests.server.admin.results_data import DAY1, DAY2, NOW, Population, publish_results_campaign
from tests.server.conftest import BASE_URL, CAMPAIGN, TENANT, renderer_app, renderer_settings
from welcomemat.lift.results import CSV_HEADER, ResultsReport, results_rows
from welcomemat.security.credentials import parse_admin_tokens

ADMIN = "admin-token-for-results-0123456789"
OTHER = "other-tenant-token-0123456789abcdef"
AUTH = {"authorization": f"Bearer {ADMIN}"}
WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")


@pytest.fixture
def population(redis_client: redis.Redis) -> Population:
    return publish_results_campaign(redis_client)


@pytest.fixture
def admin(redis_client: redis.Redis, population: Population) -> Iterator[TestClient]:
    settings = renderer_settings(
        admin_token=ADMIN, admin_tokens=parse_admin_tokens(f"eve@evil:{OTHER}, ann@{TENANT}:{ADMIN}x")
    )
    app = renderer_app(settings, redis_client=redis_client, clock=NOW.timestamp)
    with TestClient(app, base_url=BASE_URL) as client:
        yield client


def without_generated_at(value: Any) -> Any:
    """A report with its `generated_at` stamps left out: the command and the page run at other instants."""
    if isinstance(value, dict):
        return {k: without_generated_at(v) for k, v in value.items() if k != "generated_at"}
    if isinstance(value, list):
        return [without_generated_at(v) for v in value]
    return value


def run(*args: str, redis_url: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    env.update({"REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(home)})
    return subprocess.run(
        [WELCOMEMAT, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def cells(document: Any, table: str) -> dict[str, list[str]]:
    rows = document.findall(f".//table[@data-admin='{table}']/tbody/tr")
    return {
        "|".join(v for k, v in sorted(row.attrib.items()) if k.startswith("data-admin")): [
            "".join(td.itertext()) for td in row.findall("td")
        ]
        for row in rows
    }


def test_the_page_shows_totals_days_rungs_reasons_and_fact_types(admin: TestClient) -> None:
    response = admin.get(f"/admin/results/{CAMPAIGN}", headers=AUTH)
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    policy = response.headers["content-security-policy"]
    assert policy.startswith("default-src 'none'") and "script-src" not in policy
    document = html5lib.parse(response.text, namespaceHTMLElements=False)
    assert document.find(".//script") is None
    assert not [e for e in document.iter() if "style" in e.attrib]
    counts = cells(document, "counts")
    # personal: 30 reached, 20×2 + 20 views, 6 CTA clicks, 4 conversions
    assert counts["personal"] == ["personal", "40", "30", "60", "6", "6", "4", "4", "0", "0"]
    assert counts["holdout"] == ["holdout", "40", "10", "30", "0", "0", "0", "0", "0", "0"]
    daily = cells(document, "daily")
    assert daily[f"{DAY1.isoformat()}|personal"][2:] == ["40", "20", "6", "0"]
    assert daily[f"{DAY2.isoformat()}|personal"][2:] == ["20", "20", "0", "4"]
    assert daily[f"{DAY2.isoformat()}|holdout"][2:] == ["10", "10", "0", "0"]
    direct = [v for k, v in daily.items() if k.endswith("|personal/direct")]
    control = [v for k, v in daily.items() if k.endswith("|personal/control")]
    assert len(direct) == len(control) == 30  # a row per day of the stream's 30 days
    assert sum(int(r[2]) for r in direct + control) == 60  # the variants split the personal visits
    assert cells(document, "rungs") == {
        "personal": ["personal", "80"],
        "segment": ["segment", "40"],
        "default": ["default", "0"],
    }
    assert cells(document, "reasons") == {"no_trusted_fact": ["no_trusted_fact", "40"]}
    assert list(cells(document, "fact-types")) == ["funding"]
    lift = cells(document, "lift")
    assert lift["cta_click_rate"][1] == "15.0% (6/40), 7.1–29.1%"  # per account assigned
    visited = cells(document, "reached-only-rates")
    assert visited["reached|cta_click_rate"][1] == "20.0% (6/30), 9.5–37.3%"  # among those that visited
    assert set(cells(document, "variants")) == {
        f"{m}|{v}" for m in ("reach", "cta_click_rate", "conversion_rate") for v in ("control", "direct")
    }
    charts = document.findall(".//img[@data-admin='daily-chart']")
    assert len(charts) == 4
    for img in charts:
        svg = ET.fromstring(base64.b64decode(img.get("src", "").split(",", 1)[1]))
        assert len(svg.findall(".//{http://www.w3.org/2000/svg}polyline")) == 4  # two arms, two variants


def test_json_is_what_report_lift_prints_and_csv_holds_the_same_numbers(
    admin: TestClient, redis_url: str, tmp_path: Path
) -> None:
    data = admin.get(f"/admin/results/{CAMPAIGN}", params={"format": "json"}, headers=AUTH).json()
    printed = run("report", "lift", CAMPAIGN, "--json", redis_url=redis_url, home=tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert without_generated_at(data["lift"]) == without_generated_at(json.loads(printed.stdout))
    by_variant = run(
        "report", "lift", CAMPAIGN, "--json", "--by", "variant", redis_url=redis_url, home=tmp_path
    )
    assert by_variant.returncode == 0, by_variant.stderr
    assert without_generated_at(data["variants"]) == without_generated_at(json.loads(by_variant.stdout))

    download = admin.get(f"/admin/results/{CAMPAIGN}", params={"format": "csv"}, headers=AUTH)
    assert download.headers["content-type"] == "text/csv; charset=utf-8"
    assert (
        download.headers["content-disposition"] == f'attachment; filename="{TENANT}-{CAMPAIGN}-results.csv"'
    )
    rows = list(csv.reader(io.StringIO(download.text)))
    assert tuple(rows[0]) == CSV_HEADER
    expected = [
        [s, g, d, m, "" if v is None else repr(v)]
        for s, g, d, m, v in results_rows(ResultsReport.model_validate(data))
    ]
    assert rows[1:] == expected
    found = {(s, g, d, m): v for s, g, d, m, v in rows[1:]}
    assert found[("daily", "personal", DAY1.isoformat(), "visits")] == "40"
    assert found[("lift", "personal", "", "cta_clicks")] == "6"
    low = data["lift"]["metrics"][1]["sequential_low"]
    assert float(found[("lift", "cta_click_rate", "", "sequential_low")]) == low


def test_the_guard_is_every_admin_routes(admin: TestClient, redis_client: redis.Redis) -> None:
    path = f"/admin/results/{CAMPAIGN}"
    assert admin.get(path).status_code == 401
    assert admin.get(path, headers={"authorization": "Bearer nope"}).status_code == 401
    unknown = admin.get("/admin/results/no-such-campaign", headers=AUTH, params={"format": "json"})
    assert unknown.status_code == 404
    # Another tenant's token: the campaign is an unknown one, word for word.
    other = admin.get(path, headers={"authorization": f"Bearer {OTHER}"}, params={"format": "json"})
    theirs = admin.get(
        "/admin/results/no-such-campaign",
        headers={"authorization": f"Bearer {OTHER}"},
        params={"format": "json"},
    )
    assert other.status_code == 404
    assert other.text.replace(CAMPAIGN, "no-such-campaign") == theirs.text
    # The tenant's own scoped token sees it.
    own = admin.get(path, headers={"authorization": f"Bearer {ADMIN}x"}, params={"format": "json"})
    assert own.status_code == 200 and own.json()["tenant"] == TENANT
    assert admin.get(path, params={"format": "pdf"}, headers=AUTH).status_code == 400
    assert admin.get(path, params={"type": "lunch"}, headers=AUTH).status_code == 400
    off = renderer_app(renderer_settings(), redis_client=redis_client)
    with TestClient(off, base_url=BASE_URL) as client:
        assert client.get(path, headers=AUTH).status_code == 404


def test_openapi_describes_the_results_route(admin: TestClient) -> None:
    document = admin.get("/openapi.json").json()
    route = document["paths"]["/admin/results/{campaign}"]["get"]
    assert route["security"] == [{"adminBearer": []}, {"adminSession": []}]
    assert "ResultsReport" in document["components"]["schemas"]
