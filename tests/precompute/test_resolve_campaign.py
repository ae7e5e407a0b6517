"""CAMPAIGN named by its published id: a stored config that no longer decodes is a clear error;
an unknown id names no other campaign."""

from __future__ import annotations

import json

import pytest
import redis

from cli.precompute_command import resolve_campaign
from welcomemat import keys
from welcomemat.errors import InputError, StoredValueError


def publish(client: redis.Redis, config: bytes) -> str:
    client.hset(keys.campaigns_index_key(), "acme/q4-pipeline", "1")
    key = keys.campaign_config_key("acme", "q4-pipeline")
    client.set(key, config)
    return key


@pytest.mark.parametrize(
    "config",
    [
        b"not json",
        json.dumps({"zones": {}}).encode(),  # no campaign
        json.dumps({"zones": {}, "campaign": {"tenant": "acme"}}).encode(),  # fields missing
        json.dumps({"zones": [], "campaign": {}}).encode(),  # the wrong shape
    ],
)
def test_a_stored_config_that_does_not_decode_names_its_key(redis_client: redis.Redis, config: bytes) -> None:
    key = publish(redis_client, config)
    with pytest.raises(StoredValueError) as refused:
        resolve_campaign("acme/q4-pipeline", redis_client)
    assert key in str(refused.value) and "rerun `welcomemat precompute`" in str(refused.value)


def test_an_unknown_campaign_is_named_without_listing_any_tenants_campaigns(
    redis_client: redis.Redis,
) -> None:
    publish(redis_client, b"{}")
    with pytest.raises(InputError) as refused:
        resolve_campaign("other", redis_client)
    assert "no published campaign 'other'" in str(refused.value)
    assert "acme" not in str(refused.value) and "q4-pipeline" not in str(refused.value)
