"""Every outcome type comes in both ways (a JSONL file, the CRM webhook over real HTTP); a bad
one is refused naming the field; only goals count as conversions, negative outcomes never."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from tests.corpora import REPO_ROOT
from tests.server.conftest import (
    CAMPAIGN,
    PERSONAL_ACCOUNT,
    TENANT,
    example_inputs,
    make_zone_set,
    publish_config,
    renderer_app,
    renderer_settings,
)
from tests.server.uvicorn_thread import serve_in_thread
from welcomemat.lift.negatives import WARN_THRESHOLD_POINTS, compare_negative, negative_warning
from welcomemat.records.conversions import (
    GOAL_TYPES,
    NEGATIVE_OUTCOMES,
    ConversionType,
    goal_types,
    iter_conversions,
)
from welcomemat.zones.store import ZoneSetStore

CRM_TOKEN = "crm-token-for-outcomes-0123456789abc"
ADMIN = "admin-token-for-outcomes-0123456789a"
ALL_TYPES = [t.value for t in ConversionType]
NEW_TYPES = ["positive_reply", "meeting_booked", "unsubscribe", "spam_complaint"]


def outcome(kind: str, conversion_id: str, **more: Any) -> dict[str, Any]:
    return {
        "campaign": CAMPAIGN,
        "account_id": PERSONAL_ACCOUNT,
        "type": kind,
        "conversion_id": conversion_id,
        "occurred_at": "2026-11-28T15:30:00+01:00",
        **more,
    }


def welcomemat(*args: str, redis_url: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    env.update({"REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(home)})
    return subprocess.run(
        [str(Path(sys.executable).parent / "welcomemat"), *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def stored_types(client: redis.Redis) -> dict[str, str]:
    return {c.conversion_id: c.type.value for c in iter_conversions(client, TENANT, CAMPAIGN)}


def test_the_types_issue_26_asks_for_exist() -> None:
    assert set(NEW_TYPES) <= set(ALL_TYPES)
    assert {t.value for t in NEGATIVE_OUTCOMES} == {"unsubscribe", "spam_complaint"}
    assert GOAL_TYPES.isdisjoint(NEGATIVE_OUTCOMES) and GOAL_TYPES | NEGATIVE_OUTCOMES == set(ConversionType)


def test_every_type_imports_from_a_file_and_a_bad_one_is_named(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    path = tmp_path / "crm.jsonl"
    lines = [json.dumps(outcome(kind, f"file-{kind}")) for kind in ALL_TYPES]
    lines.append(json.dumps(outcome("unsubscribed", "file-typo")))  # line 7: not a type
    path.write_text("\n".join(lines) + "\n")
    result = welcomemat("conversions", "import", str(path), redis_url=redis_url, home=tmp_path)
    assert result.returncode == 2, result.stderr  # a bad line: exit 2, the good ones recorded
    assert f"{path}:7, field 'type'" in result.stderr and "spam_complaint" in result.stderr
    assert f"{len(ALL_TYPES)} recorded, 0 already recorded, 1 bad lines skipped" in result.stderr
    assert stored_types(redis_client) == {f"file-{kind}": kind for kind in ALL_TYPES}


@pytest.fixture
def served(redis_client: redis.Redis) -> Iterator[str]:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    ZoneSetStore(redis_client).publish(make_zone_set(PERSONAL_ACCOUNT))  # in the report's population
    app = renderer_app(
        renderer_settings(crm_token=CRM_TOKEN, admin_token=ADMIN, allowed_hosts=("127.0.0.1",)),
        redis_client=redis_client,
    )
    with serve_in_thread(app) as base:
        yield base


def test_every_type_posts_over_http_and_a_bad_one_is_a_400_naming_the_field(
    served: str, redis_client: redis.Redis
) -> None:
    auth = {"authorization": f"Bearer {CRM_TOKEN}"}
    with httpx.Client(base_url=served, timeout=10) as http:
        for kind in ALL_TYPES:
            response = http.post("/v1/conversions", json=outcome(kind, f"hook-{kind}"), headers=auth)
            assert response.status_code == 202, response.text
            assert response.json()["type"] == kind and response.json()["arm"] == "personal"
        bad = http.post("/v1/conversions", json=outcome("spam", "hook-typo"), headers=auth)
        assert bad.status_code == 400
        assert "field 'type'" in bad.json()["error"] and "spam_complaint" in bad.json()["error"]
        # The report counts goals as conversions; a negative outcome is refused as one.
        admin = {"authorization": f"Bearer {ADMIN}"}
        lift = http.get(f"/admin/lift/{CAMPAIGN}", params={"format": "json"}, headers=admin).json()
        assert lift["conversion_types"] == sorted(t.value for t in GOAL_TYPES)
        assert lift["arms"][0]["conversions"] == len(GOAL_TYPES)  # one of each goal, personal arm
        assert lift["arms"][0]["unsubscribes"] == lift["arms"][0]["spam_complaints"] == 1
        replies = http.get(
            f"/admin/lift/{CAMPAIGN}",
            params={"format": "json", "type": ["positive_reply", "meeting_booked"]},
            headers=admin,
        ).json()
        assert replies["arms"][0]["conversions"] == 2
        refused = http.get(
            f"/admin/lift/{CAMPAIGN}", params={"format": "json", "type": "unsubscribe"}, headers=admin
        )
        assert refused.status_code == 400 and "negative outcome" in refused.json()["error"]
    assert stored_types(redis_client) == {f"hook-{kind}": kind for kind in ALL_TYPES}


def test_report_lift_type_takes_goals_and_refuses_negative_outcomes(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    ok = welcomemat(
        "report", "lift", CAMPAIGN, "--json", "--type", "positive_reply", redis_url=redis_url, home=tmp_path
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["conversion_types"] == ["positive_reply"]
    refused = welcomemat(
        "report", "lift", CAMPAIGN, "--type", "spam_complaint", redis_url=redis_url, home=tmp_path
    )
    assert refused.returncode == 2
    assert "--type" in refused.stderr and "negative outcome" in refused.stderr
    assert "Traceback" not in refused.stderr


@given(st.lists(st.sampled_from([*ALL_TYPES, "lunch", "", "Meeting_Booked"]), max_size=6))
def test_goal_types_never_lets_a_negative_outcome_count_as_a_conversion(names: list[str]) -> None:
    try:
        chosen = goal_types(names)
    except ValueError as exc:
        first_bad = next(n for n in names if n not in {t.value for t in GOAL_TYPES})
        assert repr(first_bad) in str(exc)
        return
    assert all(n in {t.value for t in GOAL_TYPES} for n in names)
    assert chosen is None if not names else chosen == {ConversionType(n) for n in names}


counts = st.integers(min_value=0, max_value=3_000).flatmap(
    lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))
)


@given(st.sampled_from(sorted(NEGATIVE_OUTCOMES)), counts, counts)
def test_a_negative_outcome_warns_exactly_when_the_rule_says(
    kind: ConversionType, personal: tuple[int, int], holdout: tuple[int, int]
) -> None:
    """Warned when the interval lies above zero or the rise passes the threshold, else silent."""
    compared = compare_negative(kind, personal, holdout)
    if compared.difference is None:
        assert not compared.raised and negative_warning(compared) is None
        return
    expected = compared.difference_low > 0 or compared.difference > WARN_THRESHOLD_POINTS[kind]
    assert compared.raised is expected
    warning = negative_warning(compared)
    assert (warning is not None) is expected
    if compared.difference <= 0:
        assert warning is None  # a drop in harm is never a warning
