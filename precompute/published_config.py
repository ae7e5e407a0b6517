"""The campaign config a run publishes to Redis, and how a worker loads it back.

Before its first account a run stores what the renderer, QA, review and the distributed
workers read instead of the campaign files: the contracts, the effective policy, the theme
and the campaign's IP ranges (`publish_campaign_config`). A worker on another machine has
no campaign files, so it builds its run from that stored value (`load_campaign_config`).
The value's format is the core's one codec (`welcomemat.campaign.config`); the effective
policy inside it is a precompute concept, so its decoder (`policy_from_json`) lives here.
"""

from __future__ import annotations

import random
import time
from collections.abc import Collection, Sequence
from dataclasses import asdict
from typing import Any

import redis
from redis.client import Pipeline
from redis.exceptions import WatchError

from precompute.context import EffectivePolicy
from precompute.ip_range_map import plan_ip_range_update, queue_ip_range_update
from welcomemat import keys
from welcomemat.campaign.config import decode_campaign_config, encode_campaign_config
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.owner import claim_campaign
from welcomemat.campaign.sections import Confidence
from welcomemat.errors import StoredValueError, StoreError
from welcomemat.records.accounts import Account
from welcomemat.security.ip_ranges import IpRangeRules
from welcomemat.theme.folder import Theme
from welcomemat.zones.contract import ZoneContract
from welcomemat.zones.overview import mark_overview_built
from welcomemat.zones.store import TRANSACTION_ATTEMPTS_MAX

__all__ = ["load_campaign_config", "policy_from_json", "publish_campaign_config"]

_RETRY_PAUSE_MAX_S = 0.05  # seconds: a random pause before merging the map again


def publish_campaign_config(
    client: redis.Redis,
    campaign: Campaign,
    zones: dict[str, ZoneContract],
    policy: EffectivePolicy,
    accounts: Sequence[Account] | None = None,
    theme: Theme | None = None,
    *,
    ip_rules: IpRangeRules | None = None,
    erased: Collection[str] = (),
) -> None:
    """Store what the renderer, QA and review read: contracts, theme, IP ranges; index the campaign id.

    The campaign's theme (its base.html and files, checked at load) travels inside the config:
    the renderer reads no campaign files, and one value keeps the theme and the campaign it
    was checked against in step.

    First the campaign id is claimed for its tenant (`welcomemat.campaign.owner`): an id
    another tenant owns is refused (`CampaignOwnerError`) before anything is written.
    With `accounts`, the campaign's IP-range map (account id -> CIDRs, the renderer's IP
    identification index) is merged (`precompute.ip_range_map`: the run's accounts replace their
    own ranges, `erased` ids lose theirs, the others keep theirs unless `ip_rules`, the tenant's,
    refuse them), in the same transaction as the contracts, which the map is watched for: a
    renderer reloading it reads the map before or after the run, never between.
    The owner and the index of campaign ids live outside the campaign's hash slot, so they
    are written apart from that transaction (Redis Cluster allows a transaction in one slot only).
    A campaign's first config marks its overview index built (`welcomemat.zones.overview`):
    none of its zone sets predates the index.
    """
    config = encode_campaign_config(campaign, zones, asdict(policy), theme)
    tenant, campaign_id = campaign.tenant, campaign.campaign
    claim_campaign(client, tenant, campaign_id)
    config_key, ip_key = (
        keys.campaign_config_key(tenant, campaign_id),
        keys.ip_ranges_key(tenant, campaign_id),
    )
    # A campaign's config outlives its zone sets (refreshed by every run): without one, nothing of
    # the campaign predates the overview's index, which needs no rebuild.
    first_config = not client.exists(config_key)
    for _ in range(TRANSACTION_ATTEMPTS_MAX):
        try:
            with client.pipeline(transaction=True) as pipe:
                _write_config(pipe, config_key, config, ip_key, accounts, ip_rules, erased)
            break
        except WatchError:  # the map changed (an erasure, another run) while it was merged: again
            time.sleep(random.uniform(0, _RETRY_PAUSE_MAX_S))
    else:
        raise StoreError(f"{ip_key}: changed under the merge {TRANSACTION_ATTEMPTS_MAX} times in a row")
    if first_config:
        mark_overview_built(client, tenant, campaign_id)
    index = client.pipeline(transaction=False)
    index.hset(keys.campaigns_index_key(), f"{tenant}/{campaign_id}", campaign_id)
    index.expire(keys.campaigns_index_key(), keys.CAMPAIGN_TTL_S)
    index.execute()


def _write_config(
    pipe: Pipeline,
    config_key: str,
    config: bytes,
    ip_key: str,
    accounts: Sequence[Account] | None,
    ip_rules: IpRangeRules | None,
    erased: Collection[str],
) -> None:
    """The config, and with `accounts` the merged IP-range map, in one transaction."""
    if accounts is None:
        pipe.set(config_key, config, ex=keys.CAMPAIGN_TTL_S)
        pipe.execute()
        return
    pipe.watch(ip_key)  # type: ignore[no-untyped-call]
    stored = pipe.hgetall(ip_key)
    update = plan_ip_range_update(stored, accounts, erased, ip_rules)  # type: ignore[arg-type]
    pipe.multi()
    pipe.set(config_key, config, ex=keys.CAMPAIGN_TTL_S)
    queue_ip_range_update(pipe, ip_key, update)
    pipe.execute()


def policy_from_json(data: dict[str, Any]) -> EffectivePolicy:
    """The `EffectivePolicy` that `publish_campaign_config` stored, as it was (same fingerprint)."""
    return EffectivePolicy(
        signal_windows_days={str(k): int(v) for k, v in data["signal_windows_days"].items()},
        min_confidence=Confidence(data["min_confidence"]),
        banned_phrases=tuple(data["banned_phrases"]),
        banned_openers=tuple(data["banned_openers"]),
        prohibited_claims=tuple(data["prohibited_claims"]),
        min_model_confidence=float(data["min_model_confidence"]),
        sources={str(k): str(v) for k, v in data["sources"].items()},
    )


def load_campaign_config(
    client: redis.Redis, tenant: str, campaign_id: str
) -> tuple[Campaign, dict[str, ZoneContract], EffectivePolicy] | None:
    """Campaign, zone contracts and effective policy as last published; None if there are none.

    What a worker on another machine builds its run from: it has no campaign files. Raises
    StoredValueError (naming the key) when the stored config does not decode.
    """
    key = keys.campaign_config_key(tenant, campaign_id)
    raw = client.get(key)
    if raw is None:
        return None
    stored = decode_campaign_config(tenant, campaign_id, raw)
    try:
        policy = policy_from_json(dict(stored.policy))
    except (ValueError, KeyError, TypeError) as exc:
        raise StoredValueError(key, f"policy {type(exc).__name__}: {exc}") from exc
    return stored.campaign, stored.zones, policy
