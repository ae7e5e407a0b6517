"""The lift report read from Redis: `welcomemat report lift` and `GET /admin/lift/{campaign}`."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import html5lib
import pytest
import redis
from starlette.testclient import TestClient

from server.redis_guard import renderer_redis_client
from tests.corpora import REPO_ROOT
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    TENANT,
    account_in,
    accounts_in,
    example_inputs,
    make_zone_set,
    publish_config,
    renderer_app,
    renderer_settings,
)
from welcomemat.arms import Arm
from welcomemat.campaign.experiments import CopyVariant, Experiment, assign_variant
from welcomemat.campaign.view import load_campaign_view
from welcomemat.lift.comparison import Metric
from welcomemat.lift.groups import LiftDimension, campaign_grouped_report
from welcomemat.lift.outcomes import campaign_lift_report, collect_outcomes
from welcomemat.records.conversions import ConversionType, parse_conversion, record_conversion
from welcomemat.records.fold import FOLD_LUA, EventFold, fold_events
from welcomemat.storage.embedded_redis import temporary_redis
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import ZoneSetStatus

ADMIN = "admin-token-for-lift-0123456789abcdef"
AUTH = {"authorization": f"Bearer {ADMIN}"}
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")


def event(client: redis.Redis, account: str, kind: str, n: int, zone: str | None = None) -> None:
    """Fold `n` events into the account's record, as `welcomemat sync` does."""
    replies = fold_events(
        client.register_script(FOLD_LUA),
        client,
        [
            EventFold(
                tenant=TENANT,
                account_id=account,
                campaign=CAMPAIGN,
                kind=kind,  # type: ignore[arg-type]
                ts_ms=1_764_000_000_000 + i,
                event_id=f"{account}-{kind}-{zone}-{i}",
                zone=zone,
            )
            for i in range(n)
        ],
        outbox=False,
    )
    assert all(isinstance(r, int) and r > 0 for r in replies), replies


def convert(client: redis.Redis, account: str, conversion_id: str, kind: str = "meeting_booked") -> None:
    body = {
        "campaign": CAMPAIGN,
        "account_id": account,
        "type": kind,
        "conversion_id": conversion_id,
        "occurred_at": "2026-11-28T10:00:00Z",
    }
    record_conversion(client, TENANT, 0.1, parse_conversion(json.dumps(body)), now=NOW)


@pytest.fixture
def campaign_data(redis_client: redis.Redis) -> redis.Redis:
    """40 personal and 40 holdout accounts published; engagement and conversions as below.

    personal: 30 reached (2 views each), 12 clicked the CTA (once, plus a headline click),
              6 converted (one of them twice, different ids); 1 unreached account converted.
    holdout:  20 reached, 4 clicked the CTA, 2 converted.
    Also: a pending-review account (not in the population) with views, and a record of another
    campaign's account.
    """
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    store = ZoneSetStore(redis_client)
    personal, holdout = accounts_in(Arm.PERSONAL, 40), accounts_in(Arm.HOLDOUT, 40)
    store.publish_many([make_zone_set(a) for a in personal + holdout])
    for group, reached, clicked, converted in ((personal, 30, 12, 6), (holdout, 20, 4, 2)):
        for i, account in enumerate(group):
            if i < reached:
                event(redis_client, account, "views", 2)
            if i < clicked:
                event(redis_client, account, "clicks", 1, zone="cta")
                event(redis_client, account, "clicks", 1, zone="hero_headline")
            if i < converted:
                convert(redis_client, account, f"{account}-c1")
    convert(redis_client, personal[0], f"{personal[0]}-c2", "opportunity")
    convert(redis_client, personal[39], f"{personal[39]}-cold")
    pending = account_in(Arm.PERSONAL, prefix="pending")
    store.publish(make_zone_set(pending, status=ZoneSetStatus.PENDING_REVIEW))
    event(redis_client, pending, "views", 5)
    return redis_client


def test_counts_and_rates_per_arm(campaign_data: redis.Redis) -> None:
    view = load_campaign_view(campaign_data, TENANT, CAMPAIGN)
    outcomes = collect_outcomes(campaign_data, view)
    assert len(outcomes) == 80  # the pending-review account is not in the population
    report = campaign_lift_report(campaign_data, view, now=NOW)
    personal, holdout = report.arm(Arm.PERSONAL), report.arm(Arm.HOLDOUT)
    assert (personal.accounts, personal.reached, personal.visits) == (40, 30, 60)
    assert (personal.cta_clicks, personal.accounts_clicked) == (12, 12)  # headline clicks are not CTA clicks
    # the unreached account that converted counts among the accounts assigned, not among visitors
    assert (personal.conversions, personal.accounts_converted, personal.reached_converted) == (8, 7, 6)
    assert (holdout.accounts, holdout.reached, holdout.visits, holdout.accounts_clicked) == (40, 20, 40, 4)
    assert (holdout.conversions, holdout.accounts_converted) == (2, 2)
    clicks = report.metric(Metric.CTA_CLICK_RATE)
    assert (clicks.variant_rate.successes, clicks.variant_rate.trials) == (12, 40)
    assert (clicks.reference_rate.successes, clicks.reference_rate.trials) == (4, 40)
    # 12/40 = 0.3000, Wilson [0.1807, 0.4543]; 4/40 = 0.1000, Wilson [0.0396, 0.2305]
    assert (round(clicks.variant_rate.low, 4), round(clicks.variant_rate.high, 4)) == (0.1807, 0.4543)
    assert (round(clicks.reference_rate.low, 4), round(clicks.reference_rate.high, 4)) == (0.0396, 0.2305)
    visited = report.reached_only.metric(Metric.CTA_CLICK_RATE)
    assert (visited.variant_rate.successes, visited.variant_rate.trials) == (12, 30)
    assert (visited.reference_rate.successes, visited.reference_rate.trials) == (4, 20)
    assert any("the holdout arm has 4 accounts with the event" in w for w in report.warnings)

    meetings = campaign_lift_report(
        campaign_data, view, now=NOW, types=frozenset({ConversionType.MEETING_BOOKED})
    )
    assert meetings.arm(Arm.PERSONAL).conversions == 7 and meetings.conversion_types == ("meeting_booked",)


def test_report_lift_command_table_and_json(
    campaign_data: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    table = run("report", "lift", CAMPAIGN, redis_url=redis_url, home=tmp_path)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].startswith(f"lift {TENANT}/{CAMPAIGN} at ")
    assert re.search(r"^personal\s+40\s+30\s+60\s+12\s+8\s+0\s+0$", table.stdout, flags=re.MULTILINE)
    assert re.search(r"^holdout\s+40\s+20\s+40\s+4\s+2\s+0\s+0$", table.stdout, flags=re.MULTILINE)
    assert "cta_click_rate     30.0% [18.1%, 45.4%]" in table.stdout  # 12 of 40 accounts assigned
    assert "cta_click_rate     40.0% [24.6%, 57.7%]" in table.stdout  # 12 of 30 that visited
    assert table.stdout.index("intent to treat") < table.stdout.index(
        "Among accounts that visited: descriptive, biased by who visits"
    )
    assert "Warnings:" in table.stdout and "too small to conclude" in table.stdout

    as_json = run(
        "report",
        "lift",
        f"{TENANT}/{CAMPAIGN}",
        "--json",
        "--type",
        "opportunity",
        redis_url=redis_url,
        home=tmp_path,
    )
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["conversion_types"] == ["opportunity"]
    assert [a["conversions"] for a in data["arms"]] == [1, 0]
    assert data["interval_method"] == "Wilson score interval"
    assert [m["metric"] for m in data["metrics"]] == ["reach", "cta_click_rate", "conversion_rate"]

    unknown = run("report", "lift", "acme/unknown", redis_url=redis_url, home=tmp_path)
    assert unknown.returncode == 2 and "not published" in unknown.stderr


def test_lift_by_guideline_version_splits_the_population(
    campaign_data: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    view = load_campaign_view(campaign_data, TENANT, CAMPAIGN)
    store = ZoneSetStore(campaign_data)
    later = [o.account_id for o in collect_outcomes(campaign_data, view)][:10]
    store.publish_many(
        [
            make_zone_set(a, input_hash="input-hash-0002").model_copy(update={"guideline_version": "v2"})
            for a in later
        ]
    )
    grouped = campaign_grouped_report(campaign_data, view, LiftDimension.GUIDELINE_VERSION, now=NOW)
    reports = {g.group: g.report for g in grouped.groups}
    assert len(reports) == 2 and "v2" in reports
    assert sum(a.accounts for a in reports["v2"].arms) == 10
    assert sum(a.accounts for r in reports.values() for a in r.arms) == 80
    result = run(
        "report", "lift", CAMPAIGN, "--json", "--by", "guideline_version", redis_url=redis_url, home=tmp_path
    )
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed["by"] == "guideline_version"
    assert {g["group"] for g in printed["groups"]} == set(reports)


def test_lift_by_variant_and_the_other_dimensions_from_the_command_line(
    campaign_data: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    campaign, zones = example_inputs()
    exp = Experiment(
        id="headline-angle",
        zone="hero_headline",
        variants=(CopyVariant(id="control"), CopyVariant(id="direct")),
    )
    publish_config(campaign_data, campaign.model_copy(update={"experiment": exp}), zones)
    view = load_campaign_view(campaign_data, TENANT, CAMPAIGN)
    personal = [o.account_id for o in collect_outcomes(campaign_data, view) if o.arm is Arm.PERSONAL]
    ZoneSetStore(campaign_data).publish_many(
        [
            make_zone_set(a, input_hash="input-hash-0002").model_copy(
                update={"experiment": exp.id, "variant": assign_variant(CAMPAIGN, exp, a).id}
            )
            for a in personal
        ]
    )
    result = run("report", "lift", CAMPAIGN, "--json", "--by", "variant", redis_url=redis_url, home=tmp_path)
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    groups = {g["group"]: g["report"] for g in printed["groups"]}
    assert list(groups) == ["control", "direct"]
    sizes = {name: r["arms"][0]["accounts"] for name, r in groups.items()}
    assert sum(sizes.values()) == 40 and all(r["arms"][1]["accounts"] == 40 for r in groups.values())
    assert printed["variant_sample_ratio"]["observed"] == {"holdout": 40, **sizes}
    contrasts = printed["contrasts"]
    assert [(c["variant"], c["reference"], c["metric"]) for c in contrasts] == [
        ("direct", "control", m.value) for m in Metric
    ]
    for c in contrasts:
        assert c["sequential_low"] <= c["difference_low"] and c["difference_high"] <= c["sequential_high"]
    text = run("report", "lift", CAMPAIGN, "--by", "variant", redis_url=redis_url, home=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "Variants against the reference" in text.stdout
    reach = next(c for c in contrasts if c["metric"] == "reach")
    low, high = reach["sequential_low"] * 100, reach["sequential_high"] * 100
    assert f"[{low:+.1f}, {high:+.1f}]" in text.stdout  # the same numbers as the JSON
    for by, expected in (("fact_type", ["funding"]), ("rung", ["personal"]), ("segment", ["saas-mid"])):
        result = run("report", "lift", CAMPAIGN, "--json", "--by", by, redis_url=redis_url, home=tmp_path)
        assert result.returncode == 0, result.stderr
        assert [g["group"] for g in json.loads(result.stdout)["groups"]] == expected
    wrong = run("report", "lift", CAMPAIGN, "--by", "colour", redis_url=redis_url, home=tmp_path)
    assert wrong.returncode == 2 and "invalid choice" in wrong.stderr


def test_a_qr_scan_reaches_its_account_in_its_variant_without_counting_as_a_visit(
    campaign_data: redis.Redis,
) -> None:
    """A scanner who refused tracking (GPC/DNT: no cookie, so the continuation page's view is
    anonymous) still reached the account; a scan followed by its page view is one visit, not two."""
    campaign, zones = example_inputs()
    exp = Experiment(
        id="headline-angle", zone="hero_headline", variants=(CopyVariant(id="a"), CopyVariant(id="b"))
    )
    publish_config(campaign_data, campaign.model_copy(update={"experiment": exp}), zones)
    view = load_campaign_view(campaign_data, TENANT, CAMPAIGN)
    outcomes = collect_outcomes(campaign_data, view)
    variant_of = {o.account_id: assign_variant(CAMPAIGN, exp, o.account_id).id for o in outcomes}
    ZoneSetStore(campaign_data).publish_many(
        [
            make_zone_set(o.account_id, input_hash="input-hash-0002").model_copy(
                update={"experiment": exp.id, "variant": variant_of[o.account_id]}
            )
            for o in outcomes
            if o.arm is Arm.PERSONAL
        ]
    )
    scanner = next(o for o in outcomes if o.arm is Arm.PERSONAL and o.views == 0 and o.conversions == 0)
    visitor = next(o for o in outcomes if o.arm is Arm.PERSONAL and o.views > 0)

    def variant_arms() -> dict[str, tuple[int, int]]:
        grouped = campaign_grouped_report(campaign_data, view, LiftDimension.VARIANT, now=NOW)
        return {
            g.group: (g.report.arm(Arm.PERSONAL).reached, g.report.arm(Arm.PERSONAL).visits)
            for g in grouped.groups
        }

    before = variant_arms()
    event(campaign_data, scanner.account_id, "qr", 1)
    event(campaign_data, visitor.account_id, "qr", 1)
    after = variant_arms()
    expected = dict(before)
    reached, visits = expected[variant_of[scanner.account_id]]
    expected[variant_of[scanner.account_id]] = (reached + 1, visits)
    assert after == expected


# -- the admin page ----------------------------------------------------------------------------


@pytest.fixture
def admin(campaign_data: redis.Redis) -> Iterator[TestClient]:
    app = renderer_app(renderer_settings(admin_token=ADMIN), redis_client=campaign_data, clock=NOW.timestamp)
    with TestClient(app, base_url=BASE_URL) as client:
        yield client


def test_admin_lift_page_shows_the_report_and_a_chart(admin: TestClient) -> None:
    response = admin.get(f"/admin/lift/{CAMPAIGN}", headers=AUTH)
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    assert "img-src 'self' data:" in response.headers["content-security-policy"]
    assert "script-src" not in response.headers["content-security-policy"]
    document = html5lib.parse(response.text, namespaceHTMLElements=False)
    assert document.find(".//script") is None
    assert not [e for e in document.iter() if "style" in e.attrib]
    counts = {
        row.get("data-admin-arm"): [td.text for td in row.findall("td")]
        for row in document.findall(".//table[@data-admin='counts']/tbody/tr")
    }
    assert counts["personal"] == ["personal", "40", "30", "60", "12", "12", "8", "7", "0", "0"]
    assert counts["holdout"] == ["holdout", "40", "20", "40", "4", "4", "2", "2", "0", "0"]
    img = document.find(".//img[@data-admin='chart']")
    assert img is not None and img.get("src", "").startswith("data:image/svg+xml;base64,")
    svg = ET.fromstring(base64.b64decode(img.get("src", "").split(",", 1)[1]))
    assert (
        len(svg.findall(".//{http://www.w3.org/2000/svg}rect")) == 1 + 6
    )  # background + a bar per arm and metric
    warnings = document.find(".//section[@data-admin='warnings']")
    assert warnings is not None and "too small to conclude" in "".join(warnings.itertext())


def test_admin_lift_json_and_svg(admin: TestClient, campaign_data: redis.Redis) -> None:
    data = admin.get(f"/admin/lift/{CAMPAIGN}", params={"format": "json"}, headers=AUTH).json()
    expected = campaign_lift_report(
        campaign_data, load_campaign_view(campaign_data, TENANT, CAMPAIGN), now=NOW
    )
    assert data == expected.model_dump(mode="json")
    svg = admin.get(f"/admin/lift/{CAMPAIGN}", params={"format": "svg", "type": "opportunity"}, headers=AUTH)
    assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml"
    ET.fromstring(svg.content)
    bad = admin.get(f"/admin/lift/{CAMPAIGN}", params={"type": "lunch"}, headers=AUTH)
    assert bad.status_code == 400 and "lunch" in bad.text
    assert admin.get(f"/admin/lift/{CAMPAIGN}", params={"format": "pdf"}, headers=AUTH).status_code == 400


def test_admin_lift_needs_the_admin_token(campaign_data: redis.Redis, admin: TestClient) -> None:
    assert admin.get(f"/admin/lift/{CAMPAIGN}").status_code == 401
    assert admin.get(f"/admin/lift/{CAMPAIGN}", headers={"authorization": "Bearer nope"}).status_code == 401
    assert admin.get("/admin/lift/no-such-campaign", headers=AUTH).status_code == 404
    off = renderer_app(renderer_settings(), redis_client=campaign_data)
    with TestClient(off, base_url=BASE_URL) as client:
        assert client.get(f"/admin/lift/{CAMPAIGN}", headers=AUTH).status_code == 404


def test_admin_lift_is_503_when_redis_is_down(tmp_path: Path) -> None:
    campaign, zones = example_inputs()
    with temporary_redis(tmp_path / "redis") as url:
        client = renderer_redis_client(url)
        publish_config(client, campaign, zones)
        app = renderer_app(renderer_settings(admin_token=ADMIN), redis_client=client)
        with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as api:
            assert api.get(f"/admin/lift/{CAMPAIGN}", headers=AUTH).status_code == 200
            client.shutdown(nosave=True)  # type: ignore[no-untyped-call]
            down = api.get(f"/admin/lift/{CAMPAIGN}", headers=AUTH)
            down_json = api.get(f"/admin/lift/{CAMPAIGN}", params={"format": "json"}, headers=AUTH)
    assert down.status_code == 503 and down.headers["retry-after"] == "5"
    assert down_json.status_code == 503 and "Redis is unavailable" in down_json.json()["error"]


def test_openapi_describes_the_new_routes(admin: TestClient) -> None:
    paths = admin.get("/openapi.json").json()["paths"]
    assert paths["/admin/lift/{campaign}"]["get"]["security"] == [{"adminBearer": []}, {"adminSession": []}]
    assert paths["/v1/conversions"]["post"]["security"] == [{"crmBearer": []}]


def run(*args: str, redis_url: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    env.update({"REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(home)})
    return subprocess.run(
        [WELCOMEMAT, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )
