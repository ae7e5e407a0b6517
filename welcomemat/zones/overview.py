"""The campaign overview: a page of its accounts (arm, each zone's rung and reason, copy variant,
status, version, last visit), filtered, searched by id prefix and paged, from its index.

The index (`welcomemat.zones.overview_index`) is written with every zone set, so a page costs a
few range reads, whatever the campaign's size:

- without a filter, the page walks the id-ordered `ids` set from its cursor (`ZRANGEBYLEX`),
  a prefix search being the range `[prefix, prefix + 0xff)`;
- with filters, it walks the smallest of their `tags` ranges (`status=pending_review/...`, its
  size known from `counts`) and checks each row against the others; the arm is not stored
  (it follows the campaign's current `holdout_fraction`, `welcomemat.arms`): it is computed for
  each row walked. A walk reads at most `ROWS_SCANNED_MAX` rows: a rare combination of filters
  then returns a short page and the cursor to go on from, never an unbounded read.

Cursors are account ids: `after` (the next page starts past it) and `before` (the previous
page ends before it); every account appears on exactly one page of a walk. A row whose zone
set has gone (expired on its own) is dropped from the index as a page meets it.

A campaign whose first config is published with the index is marked built then (nothing of it
predates the index: `precompute.published_config`). The index of a campaign published before
the index existed is built once, from a SCAN of its
zone sets (`rebuild_overview`; `@built` in `counts` once done, one rebuild at a time), by the
first read that finds it unmarked: the renderer's overview page starts it on a thread and
shows what the index holds meanwhile (`building`).

Query values are checked (`OverviewQuery.from_params`: ids, enums, a bounded page size) before
any key is built: a bad one is an `InputError` naming the parameter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import redis

from welcomemat import keys
from welcomemat.arms import Arm, assign_arm
from welcomemat.errors import InputError
from welcomemat.ids import is_valid_id
from welcomemat.records.account_records import last_seen_many
from welcomemat.replies import reply_text
from welcomemat.zones.overview_index import (
    NO_VARIANT,
    TAG_FIELDS,
    queue_prune,
    queue_put,
    register_index_scripts,
)
from welcomemat.zones.published import PUBLISHED_BATCH, zone_set_batch
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneSetStatus

__all__ = [
    "BUILT_FIELD",
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "QUERY_PARAMS",
    "ROWS_SCANNED_MAX",
    "SCAN_BATCH",
    "OverviewPage",
    "OverviewQuery",
    "OverviewRow",
    "ZoneLine",
    "mark_overview_built",
    "overview_built",
    "read_overview",
    "rebuild_overview",
]

DEFAULT_PAGE_SIZE = 50  # rows
MAX_PAGE_SIZE = 200  # rows: a bigger page is refused, so one request's work stays bounded
SCAN_BATCH = 500  # at most this many ids per range read (and rows per HMGET) while walking
ROWS_SCANNED_MAX = 20_000  # rows a walk may read for one page before it stops with a cursor
# The URL parameters of a page (`OverviewQuery.from_params`).
QUERY_PARAMS = frozenset({"q", "status", "rung", "reason", "variant", "arm", "after", "before", "limit"})
BUILT_FIELD = "@built"  # in `counts`: the index holds the zone sets published before it existed

_PREFIX = re.compile(r"[A-Za-z0-9_.-]{0,64}")
_LIMIT = re.compile(r"[0-9]{1,4}")
_TOP = b"\xff"  # sorts after every id character: `prefix + _TOP` ends a prefix's range


@dataclass(frozen=True)
class OverviewQuery:
    """One page's filters, search and cursor, checked (`from_params`)."""

    prefix: str = ""
    status: ZoneSetStatus | None = None
    rung: Rung | None = None
    reason: str | None = None
    variant: str | None = None  # `NO_VARIANT`: outside any copy experiment
    arm: Arm | None = None
    after: str | None = None
    before: str | None = None
    limit: int = DEFAULT_PAGE_SIZE

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> OverviewQuery:
        """The query of a page's URL parameters (`q`, `status`, `rung`, `reason`, `variant`, `arm`,
        `after`, `before`, `limit`); an empty value is no filter (a form's "any").

        Raises InputError naming the parameter for a value that is not one of its kind.
        """

        def get(name: str) -> str | None:
            value = params.get(name)
            return value if value else None

        def enum_value(name: str, kind: Any) -> Any:
            value = get(name)
            if value is None:
                return None
            if value not in {m.value for m in kind}:
                allowed = ", ".join(m.value for m in kind)
                raise InputError(f"{name} must be one of {allowed}, not {value[:80]!r}", field=name)
            return kind(value)

        def id_value(name: str, *, extra: str | None = None) -> str | None:
            value = get(name)
            if value is not None and value != extra and not is_valid_id(value):
                raise InputError(f"{name} {value[:80]!r} is not a valid id", field=name)
            return value

        prefix = params.get("q", "")
        if not _PREFIX.fullmatch(prefix):
            raise InputError(
                "q (an account id prefix) takes at most 64 of letters, digits and '_.-'", field="q"
            )
        raw_limit = get("limit")
        limit = DEFAULT_PAGE_SIZE
        if raw_limit is not None:
            if not _LIMIT.fullmatch(raw_limit) or not 1 <= int(raw_limit) <= MAX_PAGE_SIZE:
                raise InputError(f"limit must be a whole number from 1 to {MAX_PAGE_SIZE}", field="limit")
            limit = int(raw_limit)
        after, before = id_value("after"), id_value("before")
        if after is not None and before is not None:
            raise InputError("give after or before, not both", field="before")
        return cls(
            prefix=prefix,
            status=enum_value("status", ZoneSetStatus),
            rung=enum_value("rung", Rung),
            reason=id_value("reason"),
            variant=id_value("variant", extra=NO_VARIANT),
            arm=enum_value("arm", Arm),
            after=after,
            before=before,
            limit=limit,
        )

    def tags(self) -> list[str]:
        """The index tags a row must have (the arm is checked apart: it is not stored)."""
        found = [
            ("status", self.status.value if self.status else None),
            ("rung", self.rung.value if self.rung else None),
            ("reason", self.reason),
            ("variant", self.variant),
        ]
        return [f"{name}={value}" for name, value in found if value is not None]

    def params(self, **changes: str | None) -> dict[str, str]:
        """The query as URL parameters (empty ones left out), with `changes` (None: drop it)."""
        values: dict[str, str | None] = {
            "q": self.prefix or None,
            "status": self.status.value if self.status else None,
            "rung": self.rung.value if self.rung else None,
            "reason": self.reason,
            "variant": self.variant,
            "arm": self.arm.value if self.arm else None,
            "limit": str(self.limit) if self.limit != DEFAULT_PAGE_SIZE else None,
            **changes,
        }
        return {k: v for k, v in values.items() if v}


@dataclass(frozen=True)
class ZoneLine:
    """One zone of a row: its rung and the reason code behind it."""

    zone_id: str
    rung: str
    reason: str


@dataclass(frozen=True)
class OverviewRow:
    """One account of the overview, as its current zone set and record say."""

    account_id: str
    arm: Arm
    version: int
    status: str
    mode: str
    variant: str | None
    segment: str | None
    written_at: str  # when the zone set was created (ISO 8601)
    zones: tuple[ZoneLine, ...]
    last_visit_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "account_id": self.account_id,
            "arm": self.arm.value,
            "version": self.version,
            "status": self.status,
            "mode": self.mode,
            "variant": self.variant,
            "segment": self.segment,
            "written_at": self.written_at,
            "zones": [{"zone_id": z.zone_id, "rung": z.rung, "reason": z.reason} for z in self.zones],
            "last_visit_ms": self.last_visit_ms,
        }


@dataclass(frozen=True)
class OverviewPage:
    """A page of rows, the cursors to the pages beside it, and the campaign's counts.

    `matched` is how many accounts match the query when the index can say so in one read (no
    filter, or one, and no arm), else None. `counts` is filter -> value -> accounts, for the
    whole campaign. `complete` is False when the walk stopped at `ROWS_SCANNED_MAX` rows:
    the page may be short, and `next_after` goes on from where it stopped. `building`: the index
    is still being built from the zone sets published before it (some accounts may be missing).
    """

    rows: list[OverviewRow]
    next_after: str | None
    prev_before: str | None
    total: int
    matched: int | None
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    complete: bool = True
    building: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": [r.to_json() for r in self.rows],
            "next_after": self.next_after,
            "prev_before": self.prev_before,
            "total": self.total,
            "matched": self.matched,
            "counts": self.counts,
            "complete": self.complete,
            "building": self.building,
        }


def overview_built(client: redis.Redis, tenant: str, campaign: str) -> bool:
    """Whether the campaign's index holds the zone sets published before it existed."""
    return bool(client.hexists(keys.overview_counts_key(tenant, campaign), BUILT_FIELD))


def rebuild_overview(client: redis.Redis, tenant: str, campaign: str) -> int | None:
    """Index every current zone set of the campaign (a SCAN, in batches) and mark the index built.

    One at a time per campaign (`keys.overview_rebuild_key`): None, doing nothing, while another
    runs. Safe beside publishes and erasures (rows never go back a version, nor outlive their
    zone set). Returns how many zone sets were indexed; one that does not decode is left out.
    """
    lock = keys.overview_rebuild_key(tenant, campaign)
    if not client.set(lock, b"1", nx=True, ex=keys.OVERVIEW_REBUILD_TTL_S):
        return None
    try:
        return _rebuild(client, tenant, campaign)
    finally:
        client.delete(lock)


def _rebuild(client: redis.Redis, tenant: str, campaign: str) -> int:
    store = ZoneSetStore(client)
    put, _ = register_index_scripts(client)
    indexed = 0
    batch: list[str] = []

    def flush() -> int:
        found, _ = zone_set_batch(store, tenant, campaign, batch)
        pipe = client.pipeline(transaction=False)
        for zone_set in found.values():
            queue_put(pipe, put, zone_set, zone_set.version)
        if found:
            pipe.execute()
        batch.clear()
        return len(found)

    for account_id in store.iter_account_ids(tenant, campaign):
        batch.append(account_id)
        if len(batch) >= PUBLISHED_BATCH:
            indexed += flush()
    if batch:
        indexed += flush()
    mark_overview_built(client, tenant, campaign)
    return indexed


def mark_overview_built(client: redis.Redis, tenant: str, campaign: str) -> None:
    """Mark the index as holding every zone set: after a rebuild, or for a campaign whose first
    config is being published (nothing of it predates the index, so there is nothing to rebuild)."""
    counts_key = keys.overview_counts_key(tenant, campaign)
    pipe = client.pipeline(transaction=False)
    pipe.hset(counts_key, BUILT_FIELD, "1")
    pipe.expire(counts_key, keys.OVERVIEW_TTL_S)  # every key gets a TTL
    pipe.execute()


def read_overview(
    client: redis.Redis,
    tenant: str,
    campaign: str,
    query: OverviewQuery,
    *,
    holdout_fraction: float,
    build_missing: bool = True,
) -> OverviewPage:
    """The page of the campaign's overview `query` asks for.

    An index not built yet is built first (`build_missing`), else read as it is, the page saying
    so (`building`): the caller builds it meanwhile (a renderer, on a thread of its own).
    """
    counts_key = keys.overview_counts_key(tenant, campaign)
    building = not overview_built(client, tenant, campaign)
    if building and build_missing:
        building = rebuild_overview(client, tenant, campaign) is None
    raw_counts: Mapping[Any, Any] = client.hgetall(counts_key)
    tag_counts = {reply_text(k): int(reply_text(v)) for k, v in raw_counts.items()}
    counts: dict[str, dict[str, int]] = {name: {} for name in TAG_FIELDS}
    for tag, n in tag_counts.items():
        name, sep, value = tag.partition("=")
        if sep and name in counts and n > 0:
            counts[name][value] = n
    total = int(client.zcard(keys.overview_ids_key(tenant, campaign)))
    walk = _Walk(client, tenant, campaign, query, holdout_fraction, tag_counts)
    rows, more, stop, complete = walk.run(forward=query.before is None)
    rows = _live(client, tenant, campaign, rows)
    seen = last_seen_many(client, tenant, campaign, [r.account_id for r in rows])
    rows = [_with_visit(r, seen.get(r.account_id)) for r in rows]
    if query.before is None:
        next_after = stop if more else None
        prev_before = rows[0].account_id if query.after is not None and rows else None
    else:
        next_after = rows[-1].account_id if rows else query.before
        prev_before = stop if more else None
    return OverviewPage(
        rows=rows,
        next_after=next_after,
        prev_before=prev_before,
        total=total,
        matched=walk.matched(),
        counts=counts,
        complete=complete,
        building=building,
    )


class _Walk:
    """One page's walk over the index: a range of `ids`, or of one filter's `tags`."""

    def __init__(
        self,
        client: redis.Redis,
        tenant: str,
        campaign: str,
        query: OverviewQuery,
        holdout_fraction: float,
        tag_counts: Mapping[str, int],
    ) -> None:
        self.client, self.tenant, self.campaign, self.query = client, tenant, campaign, query
        self.holdout_fraction = holdout_fraction
        self.required = query.tags()
        # The rarest filter drives the walk: fewest rows read to fill a page.
        self.driver = min(self.required, key=lambda t: tag_counts.get(t, 0), default=None)
        self.empty = any(tag_counts.get(t, 0) <= 0 for t in self.required)
        self.key = (
            keys.overview_tags_key(tenant, campaign)
            if self.driver is not None
            else keys.overview_ids_key(tenant, campaign)
        )
        self.base = f"{self.driver}/" if self.driver is not None else ""
        self.rows_key = keys.overview_rows_key(tenant, campaign)

    def matched(self) -> int | None:
        if self.query.arm is not None or len(self.required) > 1:
            return None
        if self.empty:
            return 0
        low = f"[{self.base}{self.query.prefix}".encode()
        return int(self.client.zlexcount(self.key, low, low + _TOP))

    def run(self, *, forward: bool) -> tuple[list[OverviewRow], bool, str | None, bool]:
        """(rows in id order, whether more lie beyond, the cursor to go on from, complete)."""
        if self.empty:
            return [], False, None, True
        query, base = self.query, self.base
        low = f"[{base}{query.prefix}".encode()
        high = f"({base}{query.prefix}".encode() + _TOP
        bound = query.after if forward else query.before
        if bound is not None:
            if forward and bound >= query.prefix:
                low = f"({base}{bound}".encode()
            elif not forward and bound < query.prefix + "\xff":
                high = f"({base}{bound}".encode()
        found: list[OverviewRow] = []
        scanned = 0
        last: str | None = None
        # A page's worth first (what an unfiltered page needs), then more per round.
        batch = min(SCAN_BATCH, query.limit + 1)
        while True:
            if forward:
                page = self.client.zrangebylex(self.key, low, high, start=0, num=batch)
            else:
                page = self.client.zrevrangebylex(self.key, high, low, start=0, num=batch)
            ids = [reply_text(m)[len(base) :] for m in page]
            if not ids:
                break
            raws = self.client.hmget(self.rows_key, ids)
            for account_id, raw in zip(ids, raws, strict=True):
                scanned += 1
                last = account_id
                row = self._match(account_id, raw)
                if row is None:
                    continue
                found.append(row)
                if len(found) > query.limit:
                    shown = found[: query.limit]
                    if not forward:
                        shown.reverse()
                    return shown, True, found[query.limit - 1].account_id, True
            if len(ids) < batch:
                break
            batch = min(SCAN_BATCH, batch * 4)
            if scanned >= ROWS_SCANNED_MAX:  # bounded work: a short page, and where to go on
                if not forward:
                    found.reverse()
                return found, True, last, False
            if forward:
                low = f"({base}{ids[-1]}".encode()
            else:
                high = f"({base}{ids[-1]}".encode()
        if not forward:
            found.reverse()
        return found, False, None, True

    def _match(self, account_id: str, raw: object) -> OverviewRow | None:
        if raw is None:  # listed in a range but its row is gone: removed meanwhile
            return None
        try:
            doc = json.loads(raw)  # type: ignore[arg-type]
            tags = set(str(doc["t"]).split())
            if any(t not in tags for t in self.required):
                return None
            arm = assign_arm(self.tenant, self.campaign, account_id, self.holdout_fraction)
            if self.query.arm is not None and arm is not self.query.arm:
                return None
            return OverviewRow(
                account_id=account_id,
                arm=arm,
                version=int(doc["v"]),
                status=str(doc["s"]),
                mode=str(doc["m"]),
                variant=doc.get("x"),
                segment=doc.get("g"),
                written_at=str(doc["c"]),
                zones=tuple(ZoneLine(str(z[0]), str(z[1]), str(z[2])) for z in doc["z"]),
            )
        except (ValueError, TypeError, KeyError, IndexError):  # a row that does not decode is not shown
            return None


def _live(client: redis.Redis, tenant: str, campaign: str, rows: list[OverviewRow]) -> list[OverviewRow]:
    """The rows whose zone set still exists; the others' rows are dropped from the index."""
    if not rows:
        return rows
    pipe = client.pipeline(transaction=False)
    for row in rows:
        pipe.exists(keys.zone_set_key(tenant, campaign, row.account_id))
    exists = pipe.execute()
    gone = [r.account_id for r, e in zip(rows, exists, strict=True) if not e]
    if gone:
        _, prune = register_index_scripts(client)
        pipe = client.pipeline(transaction=False)
        for account_id in gone:
            queue_prune(pipe, prune, tenant, campaign, account_id)
        pipe.execute()
    return [r for r, e in zip(rows, exists, strict=True) if e]


def _with_visit(row: OverviewRow, last_ms: int | None) -> OverviewRow:
    return OverviewRow(**{**row.__dict__, "last_visit_ms": last_ms})
