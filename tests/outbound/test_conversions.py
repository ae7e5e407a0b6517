"""Conversions: the CRM posts outcomes; each is stored once, with the arm its account was in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from server.redis_guard import renderer_redis_client
from tests.corpora import REPO_ROOT
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    HOLDOUT_ACCOUNT,
    PERSONAL_ACCOUNT,
    TENANT,
    example_inputs,
    publish_config,
    renderer_app,
    renderer_settings,
)
from welcomemat import keys
from welcomemat.arms import Arm
from welcomemat.errors import InputError
from welcomemat.records.conversions import (
    CONVERSION_BODY_MAX_BYTES,
    ConversionConflict,
    ConversionType,
    conversion_counts,
    import_conversions,
    iter_conversions,
    parse_conversion,
    record_conversion,
)
from welcomemat.storage.embedded_redis import temporary_redis

CRM_TOKEN = "crm-token-for-tests-0123456789abcdef"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
AUTH = {"authorization": f"Bearer {CRM_TOKEN}"}


def body(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "campaign": CAMPAIGN,
        "account_id": PERSONAL_ACCOUNT,
        "type": "meeting_booked",
        "conversion_id": "crm-meeting-0001",
        "occurred_at": "2026-11-28T15:30:00+01:00",
    }
    values.update(overrides)
    return values


# -- storage ---------------------------------------------------------------------------------


def test_a_conversion_is_stored_once_with_its_accounts_arm(redis_client: redis.Redis) -> None:
    first = record_conversion(redis_client, TENANT, 0.1, parse_conversion(json.dumps(body())), now=NOW)
    again = record_conversion(redis_client, TENANT, 0.1, parse_conversion(json.dumps(body())), now=NOW)
    assert first.created and not again.created
    assert first.stored.arm is Arm.PERSONAL and again.stored == first.stored
    held = record_conversion(
        redis_client,
        TENANT,
        0.1,
        parse_conversion(json.dumps(body(account_id=HOLDOUT_ACCOUNT, conversion_id="crm-2", value=12000))),
        now=NOW,
    )
    assert held.stored.arm is Arm.HOLDOUT and held.stored.value == 12000
    stored = {c.conversion_id: c for c in iter_conversions(redis_client, TENANT, CAMPAIGN)}
    assert set(stored) == {"crm-meeting-0001", "crm-2"}
    assert conversion_counts(redis_client, TENANT, CAMPAIGN) == {PERSONAL_ACCOUNT: 1, HOLDOUT_ACCOUNT: 1}
    only_opportunities = conversion_counts(
        redis_client, TENANT, CAMPAIGN, frozenset({ConversionType.OPPORTUNITY})
    )
    assert not only_opportunities
    ttl = redis_client.ttl(keys.conversions_key(TENANT, CAMPAIGN))
    assert 0 < ttl <= keys.CONVERSIONS_TTL_S


def test_the_same_id_for_another_outcome_is_a_conflict(redis_client: redis.Redis) -> None:
    record_conversion(redis_client, TENANT, 0.1, parse_conversion(json.dumps(body())), now=NOW)
    changed = parse_conversion(json.dumps(body(type="opportunity")))
    with pytest.raises(ConversionConflict, match="already recorded with different content") as caught:
        record_conversion(redis_client, TENANT, 0.1, changed, now=NOW)
    assert caught.value.field == "conversion_id"
    assert [c.type for c in iter_conversions(redis_client, TENANT, CAMPAIGN)] == [
        ConversionType.MEETING_BOOKED
    ]


def test_the_same_instant_in_another_offset_is_the_same_conversion(redis_client: redis.Redis) -> None:
    record_conversion(redis_client, TENANT, 0.1, parse_conversion(json.dumps(body())), now=NOW)
    utc = parse_conversion(json.dumps(body(occurred_at="2026-11-28T14:30:00Z")))
    assert not record_conversion(redis_client, TENANT, 0.1, utc, now=NOW).created


@pytest.mark.parametrize(
    ("overrides", "field", "words"),
    [
        ({"type": "lunch"}, "type", "meeting_booked"),
        ({"account_id": "acct:1"}, "account_id", "pattern"),
        ({"occurred_at": "2026-11-28T15:30:00"}, "occurred_at", "UTC offset"),
        ({"value": -5}, "value", "greater than or equal to 0"),
        ({"conversion_id": "has space"}, "conversion_id", "pattern"),
        ({"note": "x"}, "note", "Extra inputs"),
    ],
)
def test_bad_conversions_name_the_field(overrides: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(InputError, match=words) as caught:
        parse_conversion(json.dumps(body(**overrides)))
    assert caught.value.field == field


def test_import_records_good_lines_and_names_each_bad_one(tmp_path: Path, redis_client: redis.Redis) -> None:
    path = tmp_path / "conversions.jsonl"
    lines = [
        json.dumps(body()),
        json.dumps(body(conversion_id="c2", type="opportunity")),
        "{not json",
        json.dumps(body(conversion_id="c3", campaign="other-campaign")),
        "",
        json.dumps(body()),  # a repeat: recorded once
        json.dumps(body(conversion_id="c4", occurred_at="yesterday")),
    ]
    path.write_text("\n".join(lines) + "\n")

    def target(campaign: str) -> tuple[str, float]:
        if campaign != CAMPAIGN:
            raise InputError(f"no published campaign {campaign!r}", field="campaign")
        return TENANT, 0.1

    report = import_conversions(redis_client, path, target, now=NOW)
    assert (report.recorded, report.repeated) == (2, 1)
    problems = [(p.line, p.field) for p in report.problems]
    assert problems == [(3, None), (4, "campaign"), (7, "occurred_at")]
    assert all(str(p).startswith(f"{path}:") for p in report.problems)
    assert conversion_counts(redis_client, TENANT, CAMPAIGN) == {PERSONAL_ACCOUNT: 2}


def test_import_names_hostile_lines_and_goes_on(tmp_path: Path, redis_client: redis.Redis) -> None:
    """Huge numbers, NaN, nesting, repeated keys and a line of 20 MB with no end: each its own
    line's problem, the 20 MB never read whole, the good line after them recorded."""
    good = body()
    path = tmp_path / "conversions.jsonl"
    with path.open("wb") as handle:
        handle.write(json.dumps(body(value=1)).encode()[:-2] + b"9" * 1000 + b"}\n")
        handle.write(json.dumps(good).encode()[:-1] + b', "value": NaN}\n')
        handle.write(b"[" * 3000 + b"\n")
        handle.write(json.dumps(good).encode()[:-1] + b', "type": "opportunity"}\n')
        handle.write(b'{"campaign": "' + b"x" * 20_000_000 + b"\n")
        handle.write(b"\xff\xfe\n")
        handle.write(json.dumps(good).encode() + b"\n")
    report = import_conversions(redis_client, path, lambda _: (TENANT, 0.1), now=NOW)
    assert report.recorded == 1
    problems = [(p.line, p.field) for p in report.problems]
    assert problems == [(1, "value"), (2, "value"), (3, None), (4, "type"), (5, None), (6, None)]
    messages = [p.message for p in report.problems]
    assert "1000 digits" in messages[0] and "NaN is not a number" in messages[1]
    assert "nested deeper than 32" in messages[2] and "duplicate key 'type'" in messages[3]
    assert "over 4096 bytes" in messages[4] and "not UTF-8" in messages[5]


def test_conversions_import_command(tmp_path: Path, redis_url: str, redis_client: redis.Redis) -> None:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    path = tmp_path / "crm.jsonl"
    path.write_text(json.dumps(body()) + "\n" + json.dumps(body(conversion_id="x", type="won")) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    env.update({"REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(tmp_path)})
    result = subprocess.run(
        [str(Path(sys.executable).parent / "welcomemat"), "conversions", "import", str(path)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert f"{path}:2, field 'type'" in result.stderr
    assert "1 recorded, 0 already recorded, 1 bad lines skipped" in result.stderr
    assert conversion_counts(redis_client, TENANT, CAMPAIGN) == {PERSONAL_ACCOUNT: 1}


# -- POST /v1/conversions ----------------------------------------------------------------------


@pytest.fixture
def api(redis_client: redis.Redis) -> Iterator[TestClient]:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    app = renderer_app(renderer_settings(crm_token=CRM_TOKEN), redis_client=redis_client, clock=NOW.timestamp)
    with TestClient(app, base_url=BASE_URL) as client:
        yield client


def test_post_records_then_acknowledges_a_retry(api: TestClient, redis_client: redis.Redis) -> None:
    first = api.post("/v1/conversions", json=body(), headers=AUTH)
    assert first.status_code == 202
    assert first.json() == {
        "status": "recorded",
        "conversion_id": "crm-meeting-0001",
        "campaign": CAMPAIGN,
        "account_id": PERSONAL_ACCOUNT,
        "type": "meeting_booked",
        "arm": "personal",
    }
    retry = api.post("/v1/conversions", json=body(), headers=AUTH)
    assert retry.status_code == 200 and retry.json()["status"] == "already_recorded"
    held = api.post(
        "/v1/conversions", json=body(account_id=HOLDOUT_ACCOUNT, conversion_id="h1"), headers=AUTH
    )
    assert held.status_code == 202 and held.json()["arm"] == "holdout"
    stored = {c.conversion_id: c for c in iter_conversions(redis_client, TENANT, CAMPAIGN)}
    assert stored["crm-meeting-0001"].received_at == NOW
    conflict = api.post("/v1/conversions", json=body(type="closed_won"), headers=AUTH)
    assert conflict.status_code == 409 and "different content" in conflict.json()["error"]


@pytest.mark.parametrize(
    ("headers", "status"),
    [({}, 401), ({"authorization": "Bearer wrong-token"}, 401), ({"authorization": CRM_TOKEN}, 401)],
)
def test_post_needs_the_crm_token(api: TestClient, headers: dict[str, str], status: int) -> None:
    response = api.post("/v1/conversions", json=body(), headers=headers)
    assert response.status_code == status
    assert response.headers["www-authenticate"] == "Bearer"


def test_the_admin_token_is_not_the_crm_token(redis_client: redis.Redis) -> None:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    admin_token = "admin-token-0123456789abcdef0123456789"
    app = renderer_app(
        renderer_settings(crm_token=CRM_TOKEN, admin_token=admin_token), redis_client=redis_client
    )
    with TestClient(app, base_url=BASE_URL) as client:
        response = client.post(
            "/v1/conversions", json=body(), headers={"authorization": f"Bearer {admin_token}"}
        )
    assert response.status_code == 401


def test_without_a_crm_token_the_route_is_off(redis_client: redis.Redis) -> None:
    app = renderer_app(renderer_settings(), redis_client=redis_client)
    with TestClient(app, base_url=BASE_URL) as client:
        response = client.post("/v1/conversions", json=body(), headers=AUTH)
    assert response.status_code == 404


@pytest.mark.parametrize(
    ("content", "content_type", "status", "words"),
    [
        (json.dumps(body(type="lunch")), "application/json", 400, "field 'type'"),
        ("{", "application/json", 400, "not valid JSON"),
        ('{"campaign": "a", "campaign": "b"}', "application/json", 400, "duplicate key 'campaign'"),
        ("[" * 2000 + "]" * 2000, "application/json", 400, "nested deeper than 32 levels"),
        (json.dumps(body()), "text/plain", 415, "application/json"),
        (
            json.dumps(body(note="x" * CONVERSION_BODY_MAX_BYTES)),
            "application/json",
            413,
            "at most 4096 bytes",
        ),
        (json.dumps(body(campaign="no-such-campaign")), "application/json", 404, "no-such-campaign"),
    ],
)
def test_bad_posts_get_a_clear_4xx(
    api: TestClient, content: str, content_type: str, status: int, words: str
) -> None:
    response = api.post("/v1/conversions", content=content, headers={**AUTH, "content-type": content_type})
    assert response.status_code == status
    assert words in response.json()["error"]


def test_a_chunked_body_over_the_limit_is_refused(api: TestClient) -> None:
    chunks = (b"x" * 1024 for _ in range(8))
    response = api.post(
        "/v1/conversions", content=chunks, headers={**AUTH, "content-type": "application/json"}
    )
    assert response.status_code == 413


def test_redis_down_is_503_never_500(tmp_path: Path) -> None:
    campaign, zones = example_inputs()
    with temporary_redis(tmp_path / "redis") as url:
        client = renderer_redis_client(url)
        publish_config(client, campaign, zones)
        app = renderer_app(renderer_settings(crm_token=CRM_TOKEN), redis_client=client)
        with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as api:
            assert api.post("/v1/conversions", json=body(), headers=AUTH).status_code == 202
            # Redis goes away (the campaign stays loaded in the renderer)
            client.shutdown(nosave=True)  # type: ignore[no-untyped-call]
            down = api.post("/v1/conversions", json=body(conversion_id="later"), headers=AUTH)
            assert down.status_code == 503
            assert down.headers["retry-after"] == "5" and "retry later" in down.json()["error"]
            faults = api.get("/metrics").text
    assert 'welcomemat_redis_errors_total{kind="error",op="conversion"}' in faults


def test_a_stored_conversion_that_does_not_decode_is_503_with_retry_after(
    api: TestClient, redis_client: redis.Redis
) -> None:
    redis_client.hset(keys.conversions_key(TENANT, CAMPAIGN), "crm-meeting-0001", b"{not json")
    response = api.post("/v1/conversions", json=body(), headers=AUTH)
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5" and "cannot be read" in response.json()["error"]
