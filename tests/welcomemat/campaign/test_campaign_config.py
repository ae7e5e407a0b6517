"""The stored campaign config has one codec: what precompute encodes decodes to the same inputs."""

from __future__ import annotations

import json

import pytest

from tests.server.conftest import CAMPAIGN, TENANT, example_inputs
from welcomemat import keys
from welcomemat.campaign.config import decode_campaign_config, encode_campaign_config
from welcomemat.errors import StoredValueError


def test_what_is_encoded_decodes_to_the_same_campaign_zones_and_policy() -> None:
    campaign, zones = example_inputs()
    policy = {"min_confidence": "medium", "signal_windows_days": {"funding": 30}}
    stored = decode_campaign_config(TENANT, CAMPAIGN, encode_campaign_config(campaign, zones, policy))
    assert stored.campaign == campaign
    assert stored.zones == zones
    assert stored.policy == policy
    assert stored.theme is None


def test_a_config_holding_another_campaign_is_refused_with_its_key() -> None:
    campaign, zones = example_inputs()
    raw = encode_campaign_config(campaign, zones, {})
    with pytest.raises(StoredValueError, match="holds acme/q4-pipeline, not acme/other") as refused:
        decode_campaign_config(TENANT, "other", raw)
    assert refused.value.key == keys.campaign_config_key(TENANT, "other")


@pytest.mark.parametrize("raw", [b"not json", b"{}", json.dumps({"campaign": {}, "zones": {}}).encode()])
def test_what_does_not_decode_is_a_stored_value_error(raw: bytes) -> None:
    with pytest.raises(StoredValueError, match="campaign config does not decode"):
        decode_campaign_config(TENANT, CAMPAIGN, raw)
