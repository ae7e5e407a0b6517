"""Who a visitor is by address, across precompute runs over whole and partial accounts files.

Issue 25: a run over a partial accounts file replaced the campaign's whole IP-range map, so
every account not in the file became anonymous to the renderer. These tests run real
precompute runs against a real Redis and ask the real renderer app who a visitor is.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from starlette.applications import Starlette
from starlette.testclient import TestClient

from precompute.ip_range_map import plan_ip_range_update
from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.run import PrecomputeRun
from tests.precompute.test_pipeline import NOW, dymaxa
from tests.server.conftest import BASE_URL, example_inputs, renderer_app, renderer_settings, tuning_for_tests
from tests.server.pagetools import body_data
from welcomemat import keys
from welcomemat.arms import Arm, assign_arm
from welcomemat.records.accounts import Account
from welcomemat.records.audit import Auditor, Via
from welcomemat.records.subject_requests import Subject, erase
from welcomemat.security.ip_ranges import IpRangeRules

TENANT, CAMPAIGN = "acme", "q4-pipeline"
CANDIDATES = ("Borvana", "Celqua", "Dravix", "Elmora", "Fintra", "Gavelo", "Harvix", "Isolda", "Jorvik")


def _personal(name: str) -> bool:
    campaign, _ = example_inputs()
    return assign_arm(TENANT, CAMPAIGN, f"acct_{name.lower()}", campaign.holdout_fraction) is Arm.PERSONAL


# Three companies the stable hash puts in the personal arm: their page names them.
ONE, TWO, THREE = [n for n in CANDIDATES if _personal(n)][:3]
RANGES_A = {ONE: ["198.51.100.16/28"], TWO: ["198.51.100.32/28"], THREE: ["2001:db8:3::/48"]}
VISITOR = {ONE: "198.51.100.20", TWO: "198.51.100.40", THREE: "2001:db8:3::9"}
TWO_MOVED = "203.0.113.64/28"
TWO_NEW_VISITOR = "203.0.113.70"
STRANGER = "192.0.2.200"


def company(name: str, ip_ranges: list[str]) -> dict[str, Any]:
    """Dymaxa's record as another company (its facts about itself), with `ip_ranges`."""
    text = json.dumps(dymaxa(NOW.date(), tier=2)).replace("Dymaxa", name).replace("dymaxa", name.lower())
    record: dict[str, Any] = json.loads(text)
    record["ip_ranges"] = ip_ranges
    return record


def precompute(client: redis.Redis, path: Path, ip_rules: IpRangeRules | None = None) -> Any:
    campaign, zones = example_inputs()
    return PrecomputeRun(
        client=client,
        campaign=campaign,
        zones=zones,
        policy=build_policy(campaign, None),
        provider=OfflineComposer(),
        now=NOW,
        ip_rules=ip_rules,
    ).run(path)


def accounts_file(tmp_path: Path, name: str, rows: dict[str, list[str]]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(company(n, r)) + "\n" for n, r in rows.items()))
    return path


def who(app: Starlette, address: str) -> str | None:
    """The company the landing page is personal for when `address` visits (None: anonymous)."""
    # No `with`: entering a TestClient runs the app's lifespan, and leaving it stops the renderer.
    page = TestClient(app, base_url=BASE_URL, client=(address, 50000)).get(f"/c/{CAMPAIGN}")
    assert page.status_code == 200
    arm = body_data(page.text)["data-wm-arm"]
    if arm == "anonymous":
        return None
    named = [n for n in CANDIDATES if n in page.text]
    assert arm == "personal" and len(named) == 1, (arm, named)
    return named[0]


def stored_map(client: redis.Redis) -> dict[str, list[str]]:
    raw: dict[bytes, bytes] = client.hgetall(keys.ip_ranges_key(TENANT, CAMPAIGN))  # type: ignore[assignment]
    return {k.decode(): json.loads(v) for k, v in raw.items()}


@pytest.fixture
def app_for() -> Iterator[Callable[..., Starlette]]:
    """Renderer apps on the test's Redis, each closed (watchers stopped) after the test."""
    apps: list[Starlette] = []

    def make(client: redis.Redis, **kwargs: Any) -> Starlette:
        apps.append(renderer_app(renderer_settings(), redis_client=client, clock=NOW.timestamp, **kwargs))
        return apps[-1]

    yield make
    for app in apps:
        app.state.renderer.close()


def test_a_partial_file_leaves_the_other_accounts_identified(
    tmp_path: Path, redis_client: redis.Redis, app_for: Callable[..., Starlette]
) -> None:
    precompute(redis_client, accounts_file(tmp_path, "a.jsonl", RANGES_A))
    first = app_for(redis_client)
    assert {n: who(first, VISITOR[n]) for n in RANGES_A} == {ONE: ONE, TWO: TWO, THREE: THREE}

    # File B: account two only, at a new address. Ones and three are not in it.
    report = precompute(redis_client, accounts_file(tmp_path, "b.jsonl", {TWO: [TWO_MOVED]}))
    assert report.accounts == 1 and not report.malformed
    assert stored_map(redis_client) == {
        f"acct_{ONE.lower()}": RANGES_A[ONE],
        f"acct_{TWO.lower()}": [TWO_MOVED],
        f"acct_{THREE.lower()}": RANGES_A[THREE],
    }
    app = app_for(redis_client)
    assert who(app, VISITOR[ONE]) == ONE
    assert who(app, VISITOR[THREE]) == THREE
    assert who(app, TWO_NEW_VISITOR) == TWO
    assert who(app, VISITOR[TWO]) is None  # its old range is gone
    assert who(app, STRANGER) is None


def test_a_running_renderer_reloads_the_merged_map_and_never_loses_the_others(
    tmp_path: Path, redis_client: redis.Redis, app_for: Callable[..., Starlette]
) -> None:
    precompute(redis_client, accounts_file(tmp_path, "a.jsonl", RANGES_A))
    # One app, its watcher reloading the map every 0.2 s throughout.
    app = app_for(redis_client, tuning=tuning_for_tests(ip_refresh_s=0.2, ip_reload_min_interval_s=0.05))
    assert who(app, VISITOR[ONE]) == ONE and who(app, VISITOR[TWO]) == TWO
    precompute(redis_client, accounts_file(tmp_path, "b.jsonl", {TWO: [TWO_MOVED]}))
    deadline = time.monotonic() + 15
    while who(app, TWO_NEW_VISITOR) != TWO:
        assert time.monotonic() < deadline, "the renderer never picked up account two's new range"
        assert who(app, VISITOR[ONE]) == ONE and who(app, VISITOR[THREE]) == THREE
        time.sleep(0.05)
    assert who(app, VISITOR[ONE]) == ONE and who(app, VISITOR[THREE]) == THREE
    assert who(app, VISITOR[TWO]) is None


def test_a_row_without_ranges_removes_only_its_own(
    tmp_path: Path, redis_client: redis.Redis, app_for: Callable[..., Starlette]
) -> None:
    precompute(redis_client, accounts_file(tmp_path, "a.jsonl", RANGES_A))
    precompute(redis_client, accounts_file(tmp_path, "b.jsonl", {THREE: []}))
    assert set(stored_map(redis_client)) == {f"acct_{ONE.lower()}", f"acct_{TWO.lower()}"}
    app = app_for(redis_client)
    assert who(app, VISITOR[THREE]) is None and who(app, VISITOR[ONE]) == ONE


def test_an_erased_account_loses_its_ranges_and_no_later_run_brings_them_back(
    tmp_path: Path, redis_client: redis.Redis, app_for: Callable[..., Starlette]
) -> None:
    precompute(redis_client, accounts_file(tmp_path, "a.jsonl", RANGES_A))
    erase(
        redis_client,
        Subject(TENANT, f"acct_{ONE.lower()}"),
        auditor=Auditor("dpo", Via.CLI, lambda: datetime.now(UTC)),
        reason="asked",
    )
    assert f"acct_{ONE.lower()}" not in stored_map(redis_client)
    precompute(redis_client, accounts_file(tmp_path, "b.jsonl", {TWO: [TWO_MOVED]}))  # partial
    assert f"acct_{ONE.lower()}" not in stored_map(redis_client)
    # A run that checked the erasure list just before the erase wrote the range back after it:
    redis_client.hset(keys.ip_ranges_key(TENANT, CAMPAIGN), f"acct_{ONE.lower()}", json.dumps(RANGES_A[ONE]))
    report = precompute(redis_client, accounts_file(tmp_path, "c.jsonl", RANGES_A))  # lists it again
    assert report.suppressed == 1  # left out of the run, and its range with it
    assert set(stored_map(redis_client)) == {f"acct_{TWO.lower()}", f"acct_{THREE.lower()}"}
    app = app_for(redis_client)
    assert who(app, VISITOR[ONE]) is None and who(app, VISITOR[THREE]) == THREE


def test_ranges_stored_before_the_rules_stop_identifying_anyone(
    tmp_path: Path, redis_client: redis.Redis, app_for: Callable[..., Starlette]
) -> None:
    """A map written before the rules (`0.0.0.0/0` made every visitor one account): the renderer
    ignores what no tenant may allow at once, and the next run drops what this tenant does not."""
    precompute(redis_client, accounts_file(tmp_path, "a.jsonl", RANGES_A))
    key = keys.ip_ranges_key(TENANT, CAMPAIGN)
    redis_client.hset(
        key,
        mapping={
            "acct_everyone": json.dumps(["0.0.0.0/0", "::/0"]),
            "acct_proxy": json.dumps(["127.0.0.0/8", "::ffff:127.0.0.1/128"]),
            "acct_office": json.dumps(["10.0.0.0/8", "203.0.113.128/28"]),
            "acct_garbled": b"{not json",
        },
    )
    app = app_for(redis_client)
    assert who(app, STRANGER) is None  # not everyone's page any more
    assert who(app, VISITOR[ONE]) == ONE
    assert who(app, "127.0.0.1") is None  # a proxied request without the client's address

    precompute(redis_client, accounts_file(tmp_path, "b.jsonl", {TWO: [TWO_MOVED]}))
    stored = stored_map(redis_client)
    assert "acct_everyone" not in stored and "acct_proxy" not in stored and "acct_garbled" not in stored
    assert stored["acct_office"] == ["203.0.113.128/28"]  # the private block trimmed, the rest kept
    assert stored[f"acct_{ONE.lower()}"] == RANGES_A[ONE]


def test_a_tenant_that_allows_private_ranges_keeps_them_across_runs(
    tmp_path: Path, redis_client: redis.Redis, app_for: Callable[..., Starlette]
) -> None:
    intranet = IpRangeRules(allow_private=True)
    precompute(
        redis_client,
        accounts_file(tmp_path, "a.jsonl", {ONE: ["10.20.0.0/16"], TWO: ["127.0.0.0/8"]}),
        intranet,
    )
    assert stored_map(redis_client) == {f"acct_{ONE.lower()}": ["10.20.0.0/16"]}  # loopback: never
    precompute(redis_client, accounts_file(tmp_path, "b.jsonl", {THREE: RANGES_A[THREE]}), intranet)
    assert stored_map(redis_client)[f"acct_{ONE.lower()}"] == ["10.20.0.0/16"]
    app = app_for(redis_client)
    assert who(app, "10.20.3.4") == ONE
    # A run without the tenant's setting (tenant.yaml changed) drops the private range it kept.
    precompute(redis_client, accounts_file(tmp_path, "c.jsonl", {THREE: RANGES_A[THREE]}))
    assert f"acct_{ONE.lower()}" not in stored_map(redis_client)


def test_the_merge_plan_touches_only_what_changes() -> None:
    def account(account_id: str, ip_ranges: list[str]) -> Account:
        return Account.model_validate(
            {"account_id": account_id, "name": account_id, "domain": f"{account_id}.example", "segment": "s"}
            | {"ip_ranges": ip_ranges}
        )

    stored = {b"keep": b'["198.51.100.0/24"]', b"moved": b'["192.0.2.0/28"]', b"gone": b'["192.0.2.16/28"]'}
    update = plan_ip_range_update(
        stored, [account("moved", ["203.0.113.0/24"]), account("fresh", []), account("gone", [])], (), None
    )
    assert dict(update.set) == {"moved": '["203.0.113.0/24"]'}
    assert update.drop == ("gone",) and update.cleaned == 0
