"""CAMPAIGN on the command line: `tenant/campaign`, a campaign.yaml, or an id published before.

Every command that takes a campaign resolves it here to (tenant, campaign id), with the same
messages. A campaign id is its owner's in the whole deployment (`welcomemat.campaign.owner`):
a bare id is its owner's campaign, and `tenant/campaign` or a campaign.yaml whose tenant does
not own the id is refused (`CampaignOwnerError`, exit 2, naming the owner), so no command
reads or writes one tenant's data under another tenant's campaign id.
"""

from __future__ import annotations

from pathlib import Path

import redis

from welcomemat.campaign.owner import read_ownership, refuse_other_tenant
from welcomemat.errors import InputError
from welcomemat.ids import is_valid_id
from welcomemat.settings import Settings

__all__ = ["is_campaign_file", "resolve_campaign_ref"]


def is_campaign_file(ref: str) -> bool:
    """Whether a CAMPAIGN argument names a campaign.yaml (by suffix, or a file that exists)."""
    path = Path(ref)
    return path.suffix in (".yaml", ".yml") or path.is_file()


def resolve_campaign_ref(
    ref: str, settings: Settings | None = None, *, client: redis.Redis | None = None
) -> tuple[str, str]:
    """(tenant, campaign) from `tenant/campaign`, a campaign.yaml, or an id published before.

    Reads the owner of the id through `client`; without one, a bare id connects to the
    deployment's Redis (`settings`: started if embedded), and the other forms are checked
    against a Redis only if one already runs (`welcomemat link` never starts one to look).
    """
    if is_campaign_file(ref):
        from welcomemat.campaign.contract import load_campaign

        campaign = load_campaign(Path(ref))
        named: tuple[str, str] | None = (campaign.tenant, campaign.campaign)
    elif "/" in ref:
        tenant, _, campaign_id = ref.partition("/")
        if not (is_valid_id(tenant) and is_valid_id(campaign_id)):
            raise InputError(f"{ref!r} is not tenant/campaign (two opaque ids)", field="CAMPAIGN")
        named = (tenant, campaign_id)
    elif is_valid_id(ref):
        named = None
    else:
        raise InputError(f"{ref!r} is not a campaign id, tenant/campaign or campaign.yaml", field="CAMPAIGN")

    own_client = client is None
    if client is None:
        from welcomemat.storage.connection import connect, connect_running, resolve_redis

        settings = settings or Settings.from_env()
        client = connect(resolve_redis(settings)) if named is None else connect_running(settings)
    if client is None:  # tenant/campaign or a file, and no Redis runs: nothing to check against
        assert named is not None
        return named
    try:
        if named is not None:
            refuse_other_tenant(read_ownership(client, named[1]), named[0])
            return named
        return _owner_of(client, ref)
    finally:
        if own_client:
            client.close()


def _owner_of(client: redis.Redis, campaign_id: str) -> tuple[str, str]:
    ownership = read_ownership(client, campaign_id)
    if ownership.tenant is not None:
        return ownership.tenant, campaign_id
    if ownership.indexed:
        raise InputError(
            f"campaign id {campaign_id!r} was published by several tenants ({', '.join(ownership.indexed)}) "
            "before owners were recorded; use tenant/campaign, or publish it again as its owner",
            field="CAMPAIGN",
        )
    raise InputError(
        f"no published campaign {campaign_id!r}; use tenant/campaign or run `welcomemat precompute` first",
        field="CAMPAIGN",
    )
