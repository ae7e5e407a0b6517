"""Whose a campaign id is: one tenant per id in a deployment, claimed at the id's first publish.

A visitor meets a campaign by its id alone (`/c/<campaign>`, the continuation a QR code
redirects to, `/v1/zones?campaign=`, a CRM conversion's `campaign`), so an id names one
campaign of one tenant in a deployment. The tenant that publishes an id first owns it:
`claim_campaign` records the owner (`keys.campaign_owner_key`) in one atomic step before
precompute writes anything else, and refuses any other tenant (`CampaignOwnerError`, exit 2,
naming the owner). Each publish by the owner refreshes the claim, which outlives everything
that may point at the id (`keys.CAMPAIGN_OWNER_TTL_S`).

Campaigns published before owners were recorded are only in the campaigns index
(`keys.campaigns_index_key`), whose one tenant for an id is then its owner: the id's next
claim records that tenant, whoever publishes. An id the index lists under several tenants
(two published it before this rule) has no owner until one of them publishes it again; a
tenant the index does not list is refused. A reader (`CampaignOwnership.tenant`) takes the
recorded owner over anything the index says and names the other tenants as a conflict.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

import redis

from welcomemat import keys
from welcomemat.errors import CampaignOwnerError, StoredValueError
from welcomemat.ids import is_valid_id

__all__ = [
    "CampaignOwnership",
    "claim_campaign",
    "parse_campaigns_index",
    "read_ownership",
    "refuse_other_tenant",
]

# Claims the id for ARGV[1] unless it has an owner, refreshes the TTL when the publisher
# (ARGV[2]) is the owner, and returns the owner: one step, so two tenants publishing the same
# new id at once cannot both win. ARGV[3]: the TTL in seconds.
_CLAIM_LUA = """
local owner = redis.call('GET', KEYS[1])
if not owner then
  owner = ARGV[1]
  redis.call('SET', KEYS[1], owner, 'EX', ARGV[3])
elseif owner == ARGV[2] then
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
return owner
"""


def parse_campaigns_index(fields: Iterable[bytes | str]) -> dict[str, tuple[str, ...]]:
    """Campaign id -> the tenants the campaigns index lists for it (sorted); bad fields skipped."""
    index: dict[str, list[str]] = {}
    for field in fields:
        text = field.decode("utf-8", "replace") if isinstance(field, bytes) else field
        tenant, _, campaign = text.partition("/")
        if is_valid_id(tenant) and is_valid_id(campaign):
            index.setdefault(campaign, []).append(tenant)
    return {campaign: tuple(sorted(tenants)) for campaign, tenants in index.items()}


@dataclass(frozen=True)
class CampaignOwnership:
    """What Redis says about a campaign id: its recorded owner and the tenants the index lists."""

    campaign: str
    owner: str | None
    indexed: tuple[str, ...] = ()

    @property
    def tenant(self) -> str | None:
        """Whose campaign the id is: the recorded owner, else the one tenant the index lists."""
        if self.owner is not None:
            return self.owner
        return self.indexed[0] if len(self.indexed) == 1 else None

    @property
    def conflict(self) -> tuple[str, ...]:
        """Tenants other than the owner that the index lists for the id (state from before owners)."""
        if self.owner is None:
            return self.indexed if len(self.indexed) > 1 else ()
        return tuple(t for t in self.indexed if t != self.owner)

    def claimant(self, tenant: str) -> str:
        """Who `tenant`'s claim of an id with no recorded owner records as its owner.

        Raises `CampaignOwnerError` when the index lists several other tenants for it.
        """
        if not self.indexed or tenant in self.indexed:
            return tenant
        if len(self.indexed) == 1:
            return self.indexed[0]
        raise CampaignOwnerError(
            f"campaign {self.campaign!r} was published by several tenants ({', '.join(self.indexed)}) "
            f"before owners were recorded; tenant {tenant!r} cannot publish it (choose another campaign id)",
            campaign=self.campaign,
            owner=None,
            tenant=tenant,
            field="campaign",
        )


def read_ownership(client: redis.Redis, campaign: str) -> CampaignOwnership:
    """The id's recorded owner and indexed tenants (two single-key reads)."""
    raw_owner = client.get(keys.campaign_owner_key(campaign))
    fields = cast(Iterable[bytes], client.hkeys(keys.campaigns_index_key()))
    indexed = parse_campaigns_index(fields).get(campaign, ())
    return CampaignOwnership(campaign, _tenant_of(raw_owner), indexed)


def refuse_other_tenant(ownership: CampaignOwnership, tenant: str, *, action: str = "use") -> None:
    """Raise `CampaignOwnerError` when the id is another tenant's (an id nobody owns passes)."""
    owner = ownership.tenant
    if owner is None or owner == tenant:
        return
    fix = "choose another campaign id" if action == "publish" else "campaign ids are unique per deployment"
    raise CampaignOwnerError(
        f"campaign {ownership.campaign!r} belongs to tenant {owner!r}; "
        f"tenant {tenant!r} cannot {action} it ({fix})",
        campaign=ownership.campaign,
        owner=owner,
        tenant=tenant,
        field="campaign",
    )


def claim_campaign(client: redis.Redis, tenant: str, campaign: str) -> None:
    """Record `tenant` as the id's owner, or refresh its claim; `CampaignOwnerError` when it is another's.

    The first write of every publish: a refused tenant has written nothing.
    """
    ownership = read_ownership(client, campaign)
    claimant = ownership.owner if ownership.owner is not None else ownership.claimant(tenant)
    key = keys.campaign_owner_key(campaign)
    raw = client.register_script(_CLAIM_LUA)(keys=[key], args=[claimant, tenant, keys.CAMPAIGN_OWNER_TTL_S])
    owner = _tenant_of(raw)
    if owner is None:
        raise StoredValueError(key, f"the owner of campaign {campaign!r} is not a tenant id: {raw!r}")
    if owner != tenant:
        refuse_other_tenant(CampaignOwnership(campaign, owner, ownership.indexed), tenant, action="publish")


def _tenant_of(raw: object) -> str | None:
    """A stored owner as a tenant id; anything else (missing, not an id) as no owner."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    return raw if isinstance(raw, str) and is_valid_id(raw) else None
