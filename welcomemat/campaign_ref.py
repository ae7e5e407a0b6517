"""CAMPAIGN on the command line: `tenant/campaign`, a campaign.yaml, or an id published before.

Every command that takes a campaign (`link`, `export`, `report lift`, `conversions import`)
resolves it here to (tenant, campaign id), with the same messages: a bare id is looked up in
the index of published campaigns (`keys.campaigns_index_key`), and an id two tenants publish
is refused rather than guessed.
"""

from __future__ import annotations

from pathlib import Path

from welcomemat import keys
from welcomemat.errors import InputError
from welcomemat.ids import is_valid_id
from welcomemat.settings import Settings

__all__ = ["is_campaign_file", "resolve_campaign_ref"]


def is_campaign_file(ref: str) -> bool:
    """Whether a CAMPAIGN argument names a campaign.yaml (by suffix, or a file that exists)."""
    path = Path(ref)
    return path.suffix in (".yaml", ".yml") or path.is_file()


def resolve_campaign_ref(ref: str, settings: Settings) -> tuple[str, str]:
    """(tenant, campaign) from `tenant/campaign`, a campaign.yaml, or an id published before."""
    path = Path(ref)
    if is_campaign_file(ref):
        from welcomemat.campaign import load_campaign

        campaign = load_campaign(path)
        return campaign.tenant, campaign.campaign
    if "/" in ref:
        tenant, _, campaign_id = ref.partition("/")
        if not (is_valid_id(tenant) and is_valid_id(campaign_id)):
            raise InputError(f"{ref!r} is not tenant/campaign (two opaque ids)", field="CAMPAIGN")
        return tenant, campaign_id
    if not is_valid_id(ref):
        raise InputError(f"{ref!r} is not a campaign id, tenant/campaign or campaign.yaml", field="CAMPAIGN")
    from welcomemat.connection import connect, resolve_redis

    client = connect(resolve_redis(settings))
    try:
        index: dict[bytes, bytes] = client.hgetall(keys.campaigns_index_key())  # type: ignore[assignment]
    finally:
        client.close()
    tenants = sorted(t for t, _, c in (k.decode().partition("/") for k in index) if c == ref)
    if not tenants:
        raise InputError(
            f"no published campaign {ref!r}; use tenant/campaign or run `welcomemat precompute` first",
            field="CAMPAIGN",
        )
    if len(tenants) > 1:
        raise InputError(f"campaign id {ref!r} is published by {', '.join(tenants)}; use tenant/campaign")
    return tenants[0], ref
