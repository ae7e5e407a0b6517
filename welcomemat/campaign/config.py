"""The one codec of a campaign's stored config: what precompute publishes, everyone else reads.

precompute publishes each campaign's contract, zone contracts, effective policy and theme as
one JSON value under `keys.campaign_config_key` (`encode_campaign_config`); the renderer, the
exports, the lift report, QA, explain, review and the distributed workers read it back
(`decode_campaign_config`), with the same checks as loading campaign.yaml and its theme. One
module for both directions, so the writer and its readers cannot drift apart on a field name.

The effective policy travels as the JSON object precompute wrote (a precompute concept: its
decoder, `precompute.published_config.policy_from_json`, stays there); the other readers ignore it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from welcomemat import keys
from welcomemat.campaign.contract import Campaign
from welcomemat.errors import StoredValueError
from welcomemat.theme.folder import Theme
from welcomemat.theme.rules import ThemeProblem
from welcomemat.yamlfile import FieldProblems
from welcomemat.zones.contract import ZoneContract

__all__ = ["StoredCampaignConfig", "decode_campaign_config", "encode_campaign_config"]


@dataclass(frozen=True)
class StoredCampaignConfig:
    """A decoded campaign config: the campaign, its zone contracts, theme and stored policy."""

    campaign: Campaign
    zones: dict[str, ZoneContract]
    theme: Theme | None = None
    # The effective policy as precompute stored it (JSON object); empty when absent.
    policy: Mapping[str, Any] = field(default_factory=dict)


def encode_campaign_config(
    campaign: Campaign,
    zones: Mapping[str, ZoneContract],
    policy: Mapping[str, Any],
    theme: Theme | None = None,
) -> bytes:
    """The stored value of a campaign's config. `policy`: any JSON-able mapping (dates as text)."""
    config: dict[str, Any] = {
        "campaign": campaign.model_dump(mode="json"),
        "zones": {k: v.model_dump(mode="json") for k, v in zones.items()},
        "policy": json.loads(json.dumps(dict(policy), default=str)),
    }
    if theme is not None:
        config["theme"] = theme.model_dump(mode="json")
    return json.dumps(config).encode()


def decode_campaign_config(tenant: str, campaign_id: str, raw: bytes | str) -> StoredCampaignConfig:
    """Decode and check the stored config of `tenant/campaign_id`.

    Raises `StoredValueError` naming the key when it does not decode, its theme breaks a
    rule, or it holds another campaign.
    """
    key = keys.campaign_config_key(tenant, campaign_id)
    try:
        config = json.loads(raw)
        zones = {k: ZoneContract.model_validate(v) for k, v in config["zones"].items()}
        campaign = Campaign.model_validate(config["campaign"], context={"zones": zones})
        stored_theme = config.get("theme")
        theme = Theme.model_validate(stored_theme) if stored_theme is not None else None
        policy = config.get("policy") or {}
        if not isinstance(policy, dict):
            raise TypeError(f"policy is a {type(policy).__name__}, not an object")
    # ValidationError is a ValueError; FieldProblems: the campaign's cross-field checks.
    except (ValueError, KeyError, TypeError, AttributeError, FieldProblems) as exc:
        raise StoredValueError(key, f"campaign config does not decode: {exc}") from exc
    except ThemeProblem as problem:
        raise StoredValueError(key, f"the campaign's theme breaks a rule: theme/{problem}") from None
    if (campaign.tenant, campaign.campaign) != (tenant, campaign_id):
        raise StoredValueError(
            key, f"holds {campaign.tenant}/{campaign.campaign}, not {tenant}/{campaign_id}"
        )
    return StoredCampaignConfig(campaign=campaign, zones=zones, theme=theme, policy=policy)
