"""The campaign overview's index: one compact row per account, written with its zone set.

An admin page lists a campaign's accounts a page at a time, filtered and searched, at 100,000
accounts; SCANning the zone sets per page view would read them all. So every write of a zone
set (`welcomemat.zones.store`: publish, a batch's script, a status flip, a revision, a rollback)
also writes the account's row in the same transaction or script, and an erasure removes it in
the erasure's transaction (`welcomemat.records.subject_requests`). Four keys, all in the
campaign's hash slot (`welcomemat.keys`, `overview_*`):

- `ids`: a sorted set of account ids (score 0: ZRANGEBYLEX reads them in id order, so a prefix
  search and a page after a cursor are one range each);
- `rows`: account id -> the row (JSON: version, status, mode, variant, segment, each zone's
  rung and reason, when it was written, and its tags);
- `tags`: `<field>=<value>/<account id>` for each filter value the row has (`status=`,
  `variant=` (`-`: none), `rung=` and `reason=` (any zone's)), so one filter value's accounts
  are one range, in id order too;
- `counts`: `<field>=<value>` -> how many accounts have it, kept by the same scripts (a tag
  counts once it is added and stops once it is removed, never twice).

Versions only grow (`welcomemat.zones.store`), so a row never replaces a newer one: a rebuild
that read a zone set before a publish cannot undo it. A row is written only while its zone set
exists, so a rebuild racing an erasure cannot bring the account back.
"""

from __future__ import annotations

import json
from typing import Any

from redis.commands.core import Script

from welcomemat import keys
from welcomemat.ids import is_valid_id
from welcomemat.storage.redis_client import run_script
from welcomemat.zones.zoneset import ZoneSet

__all__ = [
    "INDEX_LUA_FUNCTIONS",
    "NO_VARIANT",
    "TAG_FIELDS",
    "index_keys",
    "index_row",
    "queue_prune",
    "queue_put",
    "reason_code",
    "register_index_scripts",
]

# The value of `variant=` for a zone set written outside any copy experiment (not an id).
NO_VARIANT = "-"
TAG_FIELDS = ("status", "variant", "rung", "reason")

# Shared by the put and prune scripts here and the store's batch publish script: each runs in
# one slot (every key shares the campaign's hash tag), declared in KEYS.
INDEX_LUA_FUNCTIONS = """
local function wm_untag(tags, counts, id, list)
  if type(list) ~= 'string' then return end
  for tag in string.gmatch(list, '%S+') do
    if redis.call('ZREM', tags, tag .. '/' .. id) == 1 then
      if redis.call('HINCRBY', counts, tag, -1) <= 0 then redis.call('HDEL', counts, tag) end
    end
  end
end
local function wm_old_row(rows, id)
  local old = redis.call('HGET', rows, id)
  if not old then return nil end
  local ok, doc = pcall(cjson.decode, old)
  if ok and type(doc) == 'table' then return doc end
  return {}
end
local function wm_index_put(ids, rows, tags, counts, ttl, id, v, tail, list)
  local old = wm_old_row(rows, id)
  if old then
    if (tonumber(old['v']) or 0) > v then return 0 end
    wm_untag(tags, counts, id, old['t'])
  end
  redis.call('HSET', rows, id, '{"v":' .. v .. tail)
  redis.call('ZADD', ids, 0, id)
  for tag in string.gmatch(list, '%S+') do
    if redis.call('ZADD', tags, 0, tag .. '/' .. id) == 1 then redis.call('HINCRBY', counts, tag, 1) end
  end
  for _, key in ipairs({ids, rows, tags, counts}) do redis.call('EXPIRE', key, ttl) end
  return 1
end
local function wm_index_drop(ids, rows, tags, counts, id)
  local old = wm_old_row(rows, id)
  if old then wm_untag(tags, counts, id, old['t']) end
  redis.call('HDEL', rows, id)
  return redis.call('ZREM', ids, id)
end
"""

# KEYS: ids, rows, tags, counts, the account's current zone set. ARGV: account, version, row
# after its version, tags, TTL s. Written only while the zone set exists (see the docstring).
_PUT_LUA = (
    INDEX_LUA_FUNCTIONS
    + """
if redis.call('EXISTS', KEYS[5]) == 0 then return 0 end
return wm_index_put(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[5], ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4])
"""
)
# KEYS: as above. ARGV: account. Removes the row unless the zone set exists (erased, expired).
_PRUNE_LUA = (
    INDEX_LUA_FUNCTIONS
    + """
if redis.call('EXISTS', KEYS[5]) == 1 then return 0 end
return wm_index_drop(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1])
"""
)


def register_index_scripts(client: Any) -> tuple[Script, Script]:
    """The (put, prune) scripts registered on `client` (nothing is sent until first run)."""
    return client.register_script(_PUT_LUA), client.register_script(_PRUNE_LUA)


def index_keys(tenant: str, campaign: str) -> list[str]:
    """The index's keys in the order its scripts take them: ids, rows, tags, counts."""
    return [
        keys.overview_ids_key(tenant, campaign),
        keys.overview_rows_key(tenant, campaign),
        keys.overview_tags_key(tenant, campaign),
        keys.overview_counts_key(tenant, campaign),
    ]


def reason_code(reason: str) -> str:
    """`personal` of `personal:funding+hiring;unknown_segment` (`welcomemat.reasons`)."""
    return reason.partition(";")[0].partition(":")[0]


def index_row(zone_set: ZoneSet) -> tuple[str, str]:
    """(the row's JSON after its version, as the scripts complete it; its tags, space-separated).

    The version is left out because a batch publish learns it only inside Redis.
    """
    tags = [f"status={zone_set.status.value}", f"variant={zone_set.variant or NO_VARIANT}"]
    tags += sorted({f"rung={z.rung.value}" for z in zone_set.zones})
    # A stored reason may be older than this code (`welcomemat.reasons`): only an id becomes a tag.
    tags += sorted({f"reason={c}" for z in zone_set.zones if is_valid_id(c := reason_code(z.reason))})
    listed = " ".join(tags)
    row = {
        "s": zone_set.status.value,
        "m": zone_set.mode.value,
        "x": zone_set.variant,
        "g": zone_set.segment,
        "c": zone_set.created_at.isoformat(),
        "z": [[z.zone_id, z.rung.value, z.reason] for z in zone_set.zones],
        "t": listed,
    }
    return "," + json.dumps(row, separators=(",", ":"))[1:], listed


def queue_put(target: Any, script: Script, zone_set: ZoneSet, version: int) -> None:
    """Write `zone_set`'s row (at `version`) on a client, or queue it on a pipeline or transaction."""
    tail, tags = index_row(zone_set)
    tenant, campaign, account = zone_set.tenant, zone_set.campaign, zone_set.account_id
    run_script(
        target,
        script,
        [*index_keys(tenant, campaign), keys.zone_set_key(tenant, campaign, account)],
        [account, version, tail, tags, keys.OVERVIEW_TTL_S],
    )


def queue_prune(target: Any, script: Script, tenant: str, campaign: str, account: str) -> None:
    """Remove the account's row unless it has a current zone set (run after an erasure's deletes)."""
    run_script(
        target,
        script,
        [*index_keys(tenant, campaign), keys.zone_set_key(tenant, campaign, account)],
        [account],
    )
