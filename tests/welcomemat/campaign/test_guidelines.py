"""Versioned guidelines: the bundle, its hash, and the change records kept in Redis."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import redis

from tests.corpora import REPO_ROOT
from welcomemat import keys
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.campaign.guidelines import (
    ACTIVE_FIELD,
    GUIDELINE_FIELDS,
    ActivationState,
    GuidelineChange,
    GuidelineStore,
    guideline_bundle,
    guideline_hash,
)
from welcomemat.errors import StoredValueError
from welcomemat.zones.contract import load_zone_contracts


@pytest.fixture(scope="module")
def campaign() -> Campaign:
    return load_campaign(
        REPO_ROOT / "examples" / "campaign.yaml", dict(load_zone_contracts(REPO_ROOT / "zones"))
    )


def test_the_bundle_is_the_judgment_fields_and_nothing_else(campaign: Campaign) -> None:
    bundle = guideline_bundle(campaign)
    # Without an experiment or fact types of its own their keys are left out, so the hash of a
    # campaign without them is unchanged.
    assert campaign.experiment is None and not campaign.fact_types
    assert set(bundle) == set(GUIDELINE_FIELDS) - {"experiment", "fact_types"}
    assert set(GUIDELINE_FIELDS) <= set(Campaign.model_fields)
    assert "game-changer" in bundle["banned_phrases"]
    assert "link_allowlist" not in bundle and "guideline_version" not in bundle


def test_the_hash_follows_the_judgment_not_the_plumbing(campaign: Campaign) -> None:
    h = guideline_hash(campaign)
    assert len(h) == 64 and h == guideline_hash(campaign.model_copy())
    # The version label and the holdout are not judgment: the same rules hash the same.
    same = campaign.model_copy(update={"guideline_version": "v9", "holdout_fraction": 0.2})
    assert guideline_hash(same) == h
    for change in (
        {"banned_phrases": campaign.banned_phrases[1:]},
        {"voice": campaign.voice + " More."},
        {"risk_tier": "high"},
    ):
        assert guideline_hash(campaign.model_copy(update=change)) != h, change


def change(version: str, **kw: object) -> GuidelineChange:
    values: dict[str, object] = {
        "tenant": "acme",
        "campaign": "q4-pipeline",
        "version": version,
        "hash": "a" * 64,
        "proposed_at": datetime(2026, 12, 1, tzinfo=UTC),
    }
    return GuidelineChange.model_validate({**values, **kw})


def test_change_records_round_trip_in_one_key_with_a_ttl(redis_client: redis.Redis) -> None:
    store = GuidelineStore(redis_client)
    assert store.active_version("acme", "q4-pipeline") is None
    old = change("v1", state=ActivationState.SUPERSEDED)
    new = change(
        "v2",
        previous_version="v1",
        approvers=("ana", "ben"),
        approvers_required=2,
        state=ActivationState.ACTIVE,
        rollback_target="v1",
    )
    store.save(old, new, active="v2")
    assert store.active_version("acme", "q4-pipeline") == "v2"
    assert store.get("acme", "q4-pipeline", "v2") == new
    assert [c.version for c in store.history("acme", "q4-pipeline")] == ["v1", "v2"]
    key = keys.guidelines_key("acme", "q4-pipeline")
    assert key == "wm:1:{acme:q4-pipeline}:guidelines"
    assert 0 < redis_client.ttl(key) <= keys.GUIDELINES_TTL_S
    assert redis_client.hget(key, ACTIVE_FIELD) == b"v2"


def test_a_record_that_does_not_decode_names_its_key(redis_client: redis.Redis) -> None:
    redis_client.hset(keys.guidelines_key("acme", "q4-pipeline"), "v1", "{not json")
    with pytest.raises(StoredValueError, match="guidelines"):
        GuidelineStore(redis_client).get("acme", "q4-pipeline", "v1")
