"""Zone sets in Redis: publish (atomic, idempotent, versioned), read, roll back, review.

Per account and campaign the store keeps three keys (see `welcomemat.keys`): the current
zone set, the previous one (for rollback) and a version counter. Every write is one
WATCH + MULTI/EXEC transaction over those keys, retried a bounded number of times when
another writer got there first, and announces itself with a `ZoneSetChange` on the
campaign's pub/sub channel once it is written (PUBLISH names no key, so a Redis Cluster
refuses it inside a transaction; a batch publish's script announces from inside). All keys
share the campaign's hash tag, so each transaction and script runs in one Cluster slot.

Each of these writes also writes the account's row of the campaign overview
(`welcomemat.zones.overview_index`) in the same transaction or script.

Versions are monotonic per account: every state a reader can observe (a new publish, a
status flip, a rollback) gets the next number, so a cache or an ETag can compare them.

The injected client must use `decode_responses=False`: values are UTF-8 JSON bytes handed
to pydantic as they are, and a corrupt value is reported as `StoredValueError` instead of
failing inside redis-py's decoder.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import redis
from pydantic import BaseModel, ConfigDict, ValidationError
from redis.client import Pipeline, PubSub
from redis.exceptions import RedisError, WatchError

from welcomemat import keys
from welcomemat.errors import StoredValueError, StoreError
from welcomemat.ids import OpaqueId
from welcomemat.storage.redis_client import run_script
from welcomemat.zones.overview_index import (
    INDEX_LUA_FUNCTIONS,
    index_keys,
    index_row,
    queue_put,
    register_index_scripts,
)
from welcomemat.zones.zoneset import ZoneSet, ZoneSetStatus

__all__ = [
    "SCAN_COUNT",
    "TRANSACTION_ATTEMPTS_MAX",
    "PublishResult",
    "ZoneSetChange",
    "ZoneSetStore",
]

# Attempts of one WATCH/MULTI transaction before giving up: each retry means another
# writer changed the same account's keys in between, which is rare outside a stampede.
TRANSACTION_ATTEMPTS_MAX = 64
# Upper bound of the random pause between attempts, in seconds (spreads a stampede).
_RETRY_PAUSE_MAX_S = 0.002
# Keys per SCAN call: a hint to Redis of how much work one call may do.
SCAN_COUNT = 500
# How long subscribe_changes waits for Redis to confirm the subscription, in seconds.
_SUBSCRIBE_CONFIRM_TIMEOUT_S = 5.0

_T = TypeVar("_T")

# Compare-and-publish for one account, atomic in Redis: used by `publish_many` to publish a
# whole batch in one round trip. It writes only if the current zone set still has the
# version the caller decided on (else -1: the caller takes the one-by-one path). The new
# document arrives split around its version number, which only Redis can assign.
# KEYS: current, previous, counter, then the overview index's (`welcomemat.zones.overview_index`:
# ids, rows, tags, counts). ARGV: head, tail, expected current version (0: none), current TTL s,
# counter TTL s, move current to previous ("1"/"0"), previous TTL s, channel, change message
# head, the overview row after its version, its tags, the index's TTL s, the account id.
_PUBLISH_LUA = (
    INDEX_LUA_FUNCTIONS
    + """
local cur = redis.call('GET', KEYS[1])
local curv = 0
if cur then
  local ok, doc = pcall(cjson.decode, cur)
  if not ok or type(doc) ~= 'table' then return -1 end
  curv = tonumber(doc['version']) or -1
end
if curv ~= tonumber(ARGV[3]) then return -1 end
local raw = redis.call('GET', KEYS[3])
local counter = 0
if raw then
  counter = tonumber(raw)
  if not counter then return -1 end
end
local v = math.max(counter, curv) + 1
redis.call('SET', KEYS[3], v, 'EX', ARGV[5])
redis.call('SET', KEYS[1], ARGV[1] .. v .. ARGV[2], 'EX', ARGV[4])
if cur and ARGV[6] == '1' then redis.call('SET', KEYS[2], cur, 'EX', ARGV[7]) end
wm_index_put(KEYS[4], KEYS[5], KEYS[6], KEYS[7], ARGV[12], ARGV[13], v, ARGV[10], ARGV[11])
redis.call('PUBLISH', ARGV[8], ARGV[9] .. v .. '}')
return v
"""
)
# Where the version sits in a zone set's JSON (fields in declared order; ids hold no quotes).
_VERSION_SLOT = ',"version":0,'


class ZoneSetChange(BaseModel):
    """The message announcing that an account's current zone set changed.

    Version 0 announces an erasure (`welcomemat.records.subject_requests`): the account's zone sets are
    gone and its tokens revoked; a renderer reloads its revocations before dropping the account.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: OpaqueId
    campaign: OpaqueId
    account_id: OpaqueId
    version: int


@dataclass(frozen=True)
class PublishResult:
    """What a write left current. `changed` is False when nothing was written."""

    version: int
    changed: bool
    zone_set: ZoneSet


class ZoneSetStore:
    """Published zone sets of every campaign, in one Redis database."""

    def __init__(self, client: redis.Redis) -> None:
        if client.get_connection_kwargs().get("decode_responses"):
            raise ValueError("ZoneSetStore needs a Redis client with decode_responses=False")
        self._client = client
        self._publish_script = client.register_script(_PUBLISH_LUA)
        self._index_put, _ = register_index_scripts(client)

    # -- writes -------------------------------------------------------------------

    def publish(self, zone_set: ZoneSet) -> PublishResult:
        """Make `zone_set` current with the next version, unless it already is.

        Idempotent: when the current zone set has the same `input_hash` and `status` and
        is still valid when `zone_set` was created, nothing is written and the current one
        is returned with `changed=False`. New content moves the old current to the previous
        slot (for rollback); a status-only difference, or a rebuild of an expired set from
        the same inputs, keeps the previous slot as it is. The `version` of `zone_set` is
        ignored.
        """
        tenant, campaign, account_id = zone_set.tenant, zone_set.campaign, zone_set.account_id
        key = keys.zone_set_key(tenant, campaign, account_id)
        prev_key = keys.previous_zone_set_key(tenant, campaign, account_id)
        ver_key = keys.zone_set_version_key(tenant, campaign, account_id)

        def write(pipe: Pipeline) -> PublishResult:
            current_raw = pipe.get(key)
            current = self._decode(key, current_raw, tenant, campaign, account_id)
            if current is not None and _same_publication(current, zone_set):
                return PublishResult(current.version, False, current)
            version = self._next_version(pipe, ver_key, current)
            new = zone_set.model_copy(update={"version": version})
            pipe.multi()
            pipe.set(ver_key, version, ex=keys.ZONE_SET_VERSION_TTL_S)
            pipe.set(key, new.model_dump_json().encode(), ex=keys.ZONE_SET_TTL_S)
            if current is not None and current.input_hash != zone_set.input_hash:
                pipe.set(prev_key, _as_bytes(current_raw), ex=keys.PREVIOUS_ZONE_SET_TTL_S)
            queue_put(pipe, self._index_put, new, version)
            pipe.execute()
            self._announce(new)
            return PublishResult(version, True, new)

        return self._transact("publish", key, [key, ver_key], write)

    def publish_many(
        self, zone_sets: Sequence[ZoneSet], current: Mapping[str, ZoneSet | None] | None = None
    ) -> list[PublishResult]:
        """`publish` for a batch of one campaign's accounts, in about one round trip.

        Same outcome as calling `publish` for each: `current` (what the caller read, e.g.
        with `get_many`) decides which need a write; each write is an atomic
        compare-and-publish that falls back to `publish` if the account changed meanwhile.
        """
        if not zone_sets:
            return []
        tenant, campaign = zone_sets[0].tenant, zone_sets[0].campaign
        if any((z.tenant, z.campaign) != (tenant, campaign) for z in zone_sets):
            raise ValueError("publish_many takes zone sets of one campaign")
        if current is None:
            current = self.get_many(tenant, campaign, [z.account_id for z in zone_sets])
        results: dict[int, PublishResult] = {}
        pending: list[tuple[int, ZoneSet]] = []
        pipe = self._client.pipeline(transaction=False)
        channel = keys.changes_channel(tenant, campaign)
        overview_keys = index_keys(tenant, campaign)
        for i, zone_set in enumerate(zone_sets):
            existing = current.get(zone_set.account_id)
            if existing is not None and _same_publication(existing, zone_set):
                results[i] = PublishResult(existing.version, False, existing)
                continue
            doc = zone_set.model_copy(update={"version": 0}).model_dump_json()
            head, slot, tail = doc.partition(_VERSION_SLOT)
            if not slot:  # the model's field order changed: keep working, one by one
                results[i] = self.publish(zone_set)
                continue
            message = ZoneSetChange(
                tenant=tenant, campaign=campaign, account_id=zone_set.account_id, version=0
            )
            moves = existing is not None and existing.input_hash != zone_set.input_hash
            row_tail, row_tags = index_row(zone_set)
            run_script(
                pipe,
                self._publish_script,
                [
                    keys.zone_set_key(tenant, campaign, zone_set.account_id),
                    keys.previous_zone_set_key(tenant, campaign, zone_set.account_id),
                    keys.zone_set_version_key(tenant, campaign, zone_set.account_id),
                    *overview_keys,
                ],
                [
                    head + ',"version":',
                    "," + tail,
                    existing.version if existing else 0,
                    keys.ZONE_SET_TTL_S,
                    keys.ZONE_SET_VERSION_TTL_S,
                    "1" if moves else "0",
                    keys.PREVIOUS_ZONE_SET_TTL_S,
                    channel,
                    message.model_dump_json().removesuffix("0}"),
                    row_tail,
                    row_tags,
                    keys.OVERVIEW_TTL_S,
                    zone_set.account_id,
                ],
            )
            pending.append((i, zone_set))
        if pending:
            try:
                replies = pipe.execute()
            except RedisError as exc:
                raise StoreError(
                    f"Redis batch publish of {len(pending)} zone sets of {tenant}/{campaign} failed: {exc}"
                ) from exc
            for (i, zone_set), reply in zip(pending, replies, strict=True):
                version = int(reply)
                if version > 0:
                    results[i] = PublishResult(
                        version, True, zone_set.model_copy(update={"version": version})
                    )
                else:  # changed under us, or a stored value that does not decode: the careful path
                    results[i] = self.publish(zone_set)
        return [results[i] for i in range(len(zone_sets))]

    def rollback(self, tenant: str, campaign: str, account_id: str) -> ZoneSet | None:
        """Make the previous zone set current again, under the next version.

        Returns the now-current zone set, or None when there is no previous one. The
        previous slot is consumed: a second rollback in a row has nothing to go back to
        (it never re-serves what was just rolled back).
        """
        key = keys.zone_set_key(tenant, campaign, account_id)
        prev_key = keys.previous_zone_set_key(tenant, campaign, account_id)
        ver_key = keys.zone_set_version_key(tenant, campaign, account_id)

        def write(pipe: Pipeline) -> ZoneSet | None:
            previous = self._decode(prev_key, pipe.get(prev_key), tenant, campaign, account_id)
            if previous is None:
                return None
            try:
                current = self._decode(key, pipe.get(key), tenant, campaign, account_id)
            except StoredValueError:
                current = None  # rolling back is how a broken current set gets replaced
            version = self._next_version(pipe, ver_key, current)
            restored = previous.model_copy(update={"version": version})
            pipe.multi()
            pipe.set(ver_key, version, ex=keys.ZONE_SET_VERSION_TTL_S)
            pipe.set(key, restored.model_dump_json().encode(), ex=keys.ZONE_SET_TTL_S)
            pipe.delete(prev_key)
            queue_put(pipe, self._index_put, restored, version)
            pipe.execute()
            self._announce(restored)
            return restored

        return self._transact("rollback", key, [key, prev_key, ver_key], write)

    def set_status(
        self,
        tenant: str,
        campaign: str,
        account_id: str,
        status: ZoneSetStatus,
        *,
        expected_version: int | None = None,
    ) -> PublishResult | None:
        """Flip the current zone set's status (review), same content, next version.

        None when the account has no current zone set. Nothing is written (`changed=False`,
        the current set returned) when it already has `status`, or when `expected_version`
        is given and the current version differs: a reviewer approves what they saw, not
        what was published since.
        """
        key = keys.zone_set_key(tenant, campaign, account_id)
        ver_key = keys.zone_set_version_key(tenant, campaign, account_id)

        def write(pipe: Pipeline) -> PublishResult | None:
            current = self._decode(key, pipe.get(key), tenant, campaign, account_id)
            if current is None:
                return None
            stale = expected_version is not None and current.version != expected_version
            if stale or current.status == status:
                return PublishResult(current.version, False, current)
            version = self._next_version(pipe, ver_key, current)
            updated = current.model_copy(update={"version": version, "status": status})
            pipe.multi()
            pipe.set(ver_key, version, ex=keys.ZONE_SET_VERSION_TTL_S)
            pipe.set(key, updated.model_dump_json().encode(), ex=keys.ZONE_SET_TTL_S)
            queue_put(pipe, self._index_put, updated, version)
            pipe.execute()
            self._announce(updated)
            return PublishResult(version, True, updated)

        return self._transact("set_status", key, [key, ver_key], write)

    def revise(self, revised: ZoneSet, *, expected_version: int) -> PublishResult | None:
        """Publish a person's change to the current zone set (e.g. a held draft approved).

        `revised` keeps the current set's inputs (its `input_hash`: a rerun on the same
        inputs leaves the decision standing) but is new content, so it takes the next
        version and the current set moves to the previous slot (`rollback` undoes it).
        None when the account has no current set; nothing written (`changed=False`) when the
        current version is not `expected_version`.
        """
        tenant, campaign, account_id = revised.tenant, revised.campaign, revised.account_id
        key = keys.zone_set_key(tenant, campaign, account_id)
        prev_key = keys.previous_zone_set_key(tenant, campaign, account_id)
        ver_key = keys.zone_set_version_key(tenant, campaign, account_id)

        def write(pipe: Pipeline) -> PublishResult | None:
            current_raw = pipe.get(key)
            current = self._decode(key, current_raw, tenant, campaign, account_id)
            if current is None:
                return None
            if current.version != expected_version:
                return PublishResult(current.version, False, current)
            version = self._next_version(pipe, ver_key, current)
            new = revised.model_copy(update={"version": version})
            pipe.multi()
            pipe.set(ver_key, version, ex=keys.ZONE_SET_VERSION_TTL_S)
            pipe.set(key, new.model_dump_json().encode(), ex=keys.ZONE_SET_TTL_S)
            pipe.set(prev_key, _as_bytes(current_raw), ex=keys.PREVIOUS_ZONE_SET_TTL_S)
            queue_put(pipe, self._index_put, new, version)
            pipe.execute()
            self._announce(new)
            return PublishResult(version, True, new)

        return self._transact("revise", key, [key, ver_key], write)

    # -- reads --------------------------------------------------------------------

    def get(self, tenant: str, campaign: str, account_id: str) -> ZoneSet | None:
        """The current zone set of an account, or None."""
        return self._get(keys.zone_set_key(tenant, campaign, account_id), tenant, campaign, account_id)

    def get_previous(self, tenant: str, campaign: str, account_id: str) -> ZoneSet | None:
        """The zone set a rollback would restore, or None."""
        key = keys.previous_zone_set_key(tenant, campaign, account_id)
        return self._get(key, tenant, campaign, account_id)

    def _get(self, key: str, tenant: str, campaign: str, account_id: str) -> ZoneSet | None:
        try:
            raw = self._client.get(key)
        except RedisError as exc:
            raise StoreError(f"Redis GET {key!r} failed: {exc}") from exc
        return self._decode(key, raw, tenant, campaign, account_id)

    def get_many(self, tenant: str, campaign: str, account_ids: Iterable[str]) -> dict[str, ZoneSet | None]:
        """Current zone sets of several accounts of one campaign, in one MGET."""
        ids = list(dict.fromkeys(account_ids))
        if not ids:
            return {}
        key_list = [keys.zone_set_key(tenant, campaign, a) for a in ids]
        try:
            raws = self._client.mget(key_list)
        except RedisError as exc:
            raise StoreError(
                f"Redis MGET of {len(key_list)} zone sets of {tenant}/{campaign} failed: {exc}"
            ) from exc
        return {
            a: self._decode(k, raw, tenant, campaign, a)
            for a, k, raw in zip(ids, key_list, raws, strict=True)
        }

    def iter_account_ids(self, tenant: str, campaign: str) -> Iterator[str]:
        """Ids of every account with a current zone set in a campaign (SCAN, unordered).

        Each id once. Accounts published or expired during the scan may or may not appear.
        """
        pattern = keys.zone_set_scan_pattern(tenant, campaign)  # validates ids now
        return self._scan_ids(pattern)

    def subscribe_changes(self, tenant: str, campaign: str) -> PubSub:
        """A PubSub subscribed to the campaign's changes (confirmed by Redis on return).

        Messages carry a `ZoneSetChange` as JSON: `ZoneSetChange.model_validate_json(m["data"])`.
        The caller closes it.
        """
        channel = keys.changes_channel(tenant, campaign)
        pubsub: PubSub = self._client.pubsub()  # type: ignore[no-untyped-call]
        try:
            pubsub.subscribe(channel)
            deadline = time.monotonic() + _SUBSCRIBE_CONFIRM_TIMEOUT_S
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise StoreError(f"Redis did not confirm the subscription to {channel!r}")
                message = pubsub.get_message(timeout=remaining)
                if message is not None and message["type"] in ("subscribe", b"subscribe"):
                    break
        except RedisError as exc:
            pubsub.close()
            raise StoreError(f"Redis SUBSCRIBE {channel!r} failed: {exc}") from exc
        except BaseException:
            pubsub.close()
            raise
        pubsub.ignore_subscribe_messages = True
        return pubsub

    # -- internals ----------------------------------------------------------------

    def _transact(self, op: str, key: str, watched: list[str], write: Callable[[Pipeline], _T]) -> _T:
        for _ in range(TRANSACTION_ATTEMPTS_MAX):
            try:
                with self._client.pipeline(transaction=True) as pipe:
                    pipe.watch(*watched)  # type: ignore[no-untyped-call]
                    return write(pipe)
            except WatchError:
                time.sleep(random.uniform(0, _RETRY_PAUSE_MAX_S))
            except RedisError as exc:
                raise StoreError(f"Redis {op} of {key!r} failed: {exc}") from exc
        raise StoreError(
            f"Redis {op} of {key!r} gave up: the keys changed under it "
            f"{TRANSACTION_ATTEMPTS_MAX} times in a row"
        )

    @staticmethod
    def _next_version(pipe: Pipeline, ver_key: str, current: ZoneSet | None) -> int:
        raw = pipe.get(ver_key)
        try:
            counter = 0 if raw is None else int(raw)
        except ValueError as exc:
            raise StoredValueError(ver_key, f"not an integer: {raw!r}") from exc
        # The current set's own version guards against a lost counter (evicted, deleted).
        return max(counter, current.version if current is not None else 0) + 1

    def _announce(self, zone_set: ZoneSet) -> None:
        """Announce a written change. A lost announcement costs a renderer only its cache TTL
        (as one sent while it was not listening), so a failure here does not undo the write."""
        change = ZoneSetChange(
            tenant=zone_set.tenant,
            campaign=zone_set.campaign,
            account_id=zone_set.account_id,
            version=zone_set.version,
        )
        channel = keys.changes_channel(zone_set.tenant, zone_set.campaign)
        with contextlib.suppress(RedisError):
            self._client.publish(channel, change.model_dump_json())

    @staticmethod
    def _decode(key: str, raw: object, tenant: str, campaign: str, account_id: str) -> ZoneSet | None:
        if raw is None:
            return None
        try:
            zone_set = ZoneSet.model_validate_json(_as_bytes(raw))
        except ValidationError as exc:
            details = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(value)'}: {err['msg']}"
                for err in exc.errors()[:3]
            )
            more = exc.error_count() - 3
            raise StoredValueError(key, details + (f" (and {more} more)" if more > 0 else "")) from exc
        # A value under another account's key must never be served as this account's.
        owner = (zone_set.tenant, zone_set.campaign, zone_set.account_id)
        if owner != (tenant, campaign, account_id):
            raise StoredValueError(key, f"belongs to {'/'.join(owner)}, not {tenant}/{campaign}/{account_id}")
        return zone_set

    def _scan_ids(self, pattern: str) -> Iterator[str]:
        prefix = pattern[:-1]  # the pattern is the key prefix followed by '*'
        seen: set[str] = set()
        try:
            for raw_key in self._client.scan_iter(match=pattern, count=SCAN_COUNT):
                account_id = _as_bytes(raw_key).decode("utf-8", "replace")[len(prefix) :]
                if account_id not in seen:
                    seen.add(account_id)
                    yield account_id
        except RedisError as exc:
            raise StoreError(f"Redis SCAN {pattern!r} failed: {exc}") from exc


def _as_bytes(raw: object) -> bytes:
    if isinstance(raw, bytes):
        return raw
    if isinstance(raw, str):
        return raw.encode()
    raise TypeError(f"unexpected Redis reply type {type(raw).__name__}")


def _same_publication(current: ZoneSet, new: ZoneSet) -> bool:
    """Same inputs and status, and the current one has not expired by the time `new` was made.

    Same inputs mean no new version (a model may word things differently each time; that
    is not a change). A zone set past its `valid_until` is replaced even by one built from
    the same inputs: otherwise an expired set would block its own rebuild forever.
    """
    return (
        current.input_hash == new.input_hash
        and current.status == new.status
        and current.theme_refused == new.theme_refused  # a page's frame changed: a new version
        and (current.valid_until is None or new.created_at < current.valid_until)
    )
