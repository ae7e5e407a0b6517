"""A returning visitor's answer, remembered: who the tokens say they are (or the IP range
placed them, or no one), their arm, and the page (or zones payload) they were served, by the
tokens the request carries (`KnownVisitors`) or, without tokens, by the account its address
places it in, or none (`KnownAddresses`).

For a returning visitor every page view asks the same questions and gets the same answers:
the token verification memo, the arm's hash, the zone-set cache (a lock and an LRU move),
the variant at `now`, the rendered-page cache. Together that is about a quarter of a cached
page's interpreter work. One dictionary look-up replaces it, for as long as none of the
inputs can have changed. An entry stops being used as soon as:

- the campaign's config is reloaded (`state.view` is then a new object);
- any zone set is invalidated by a change message, or a campaign's zone sets are cleared
  after a reconnect (`ZoneSetCache.changes` moves). Coarse, but change messages are rare next
  to page views, and a stale entry only means the full path, never stale copy;
- the zone-set cache entry it was built from reaches its TTL, or the verification memo of a
  token it was built from does (monotonic time);
- a token expires, or the personal zone set's `valid_until` passes (the renderer's clock);
- for an answer remembered by address: the campaign's IP ranges change (the watcher swaps in
  a new `state.ip_index`, which is part of the key, when a reload would place some address
  otherwise; it reloads them every `ip_refresh_s`, soon after change messages and at once
  after an erasure), or `ADDRESS_TTL_S` passes.

Only answers where every token the request carried was verified are remembered, and only
when the zone set served is the one the zone-set cache holds. So refused tokens cannot fill
it, and a Redis fault's fallback copy is never remembered. A request whose tokens were all
refused takes the full path every time (it is keyed by its tokens, which are never
remembered). One without tokens is keyed by the account its client address falls in
(`server.visitor.placed_account`: the address worked out from its TCP peer and
`X-Forwarded-For` as the full path does, `TrustedProxies`, then the campaign's ranges), or
None: everything the full path answers such a visitor (the IP or anonymous identity, the arm,
the zone set, the page) follows from that account alone. So every address of an account's
ranges shares one answer, and an address not seen before (an office's next visitor, a
company's other site) costs an address look-up, not the full path; a header no trusted proxy
wrote is placed as the full path would place it, never as another's. Bounded: the oldest
entries go first, and entries whose time is up are dropped as new ones come in.

Remembered from a visitor's second request, not the first: every token the request carried
must have come back after the request that verified it (`Identifier.trust`, the
verification memo doubling as the cache's doorkeeper). Most link clicks and QR scans come
once: remembering each cost a send's or a mail drop's first arrivals ~8 µs apiece, and their
entries pushed the visitors who do return out of the bound (bench/README.md). A returning
visitor takes the full path twice, then the remembered answer. The same holds for an
account placed by address (a bounded set of keys seen once is its doorkeeper), whose second
visitor is usually seconds behind the first.

Event-loop only (no lock): `ZoneSetCache.changes` is written by watcher threads, and reading
an int is atomic.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from server.identify import MEMO_TTL_S, Identifier, IdentityMethod
from server.ip_index import IpRangeIndex
from server.visitor import Visit, Visitor
from server.zone_cache import ZoneSetCache
from welcomemat.campaign.view import CampaignView
from welcomemat.security.tokens import TokenKind

__all__ = ["ADDRESS_TTL_S", "AddressKey", "Known", "KnownAddresses", "KnownVisitors", "VisitorKey"]

T = TypeVar("T")

# (campaign id, page id or route, link token, cookie token)
VisitorKey = tuple[str, str, str | None, str | None]
# (campaign id, page id or route, the account the client address places the visitor in or None,
# the IP ranges looked up): every visitor without tokens whom no range places is anonymous, and
# they share one entry.
AddressKey = tuple[str, str, str | None, IpRangeIndex]
K = TypeVar("K", VisitorKey, AddressKey)

# How long an answer remembered by address stands at most (an IP-identified one also only
# while its zone set's cache entry does): as long as a verified token's.
ADDRESS_TTL_S = MEMO_TTL_S

_TOKEN_METHODS = (IdentityMethod.LINK, IdentityMethod.COOKIE)
_ADDRESS_METHODS = (IdentityMethod.IP, IdentityMethod.ANONYMOUS)


@dataclass(slots=True)
class Known(Visit[T]):
    """A remembered answer: what the full path decided, and until when it stands."""

    changes: int
    until_monotonic: float
    until_clock: float


class _KnownAnswers(Generic[K, T]):
    """`K` -> `Known[T]`, for one kind of answer (pages, or zones payloads): the look-up, the
    bound and what an entry needs to be kept; when one may be kept is the subclass's."""

    def __init__(
        self,
        zone_cache: ZoneSetCache,
        *,
        max_entries: int,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must be >= 0, got {max_entries}")
        self._zone_cache = zone_cache
        self._max = max_entries
        self._clock = clock
        self._monotonic = monotonic  # the clock of the token memo's and zone cache's TTLs
        # Oldest first. An OrderedDict: dropping a plain dict's first key costs O(size) in
        # CPython (`next(iter())` walks the deleted slots at its front).
        self._entries: OrderedDict[K, Known[T]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K, view: CampaignView) -> Known[T] | None:
        """The remembered answer, if every input it was built from still stands."""
        known = self._entries.get(key)
        if known is None:
            return None
        if (
            known.view is view
            and known.changes == self._zone_cache.changes
            and self._monotonic() < known.until_monotonic
            and self._clock() < known.until_clock
        ):
            return known
        del self._entries[key]
        return None

    def _store(
        self,
        key: K,
        view: CampaignView,
        changes: int,
        visitor: Visitor,
        result: T,
        until_monotonic: float,
        until_clock: float,
    ) -> Known[T] | None:
        """Keep the answer within the caller's bounds, and for an account only while the zone
        set it was built from is the one the zone-set cache holds and still valid; the entry
        kept, or None.

        `changes` is `ZoneSetCache.changes` read before the visitor was identified (a change
        message arriving meanwhile then voids the entry).
        """
        identity, zone_set = visitor.identity, visitor.zone_set
        if identity.account is not None:
            account_key = (view.tenant, key[0], identity.account)  # key[0]: the campaign id
            cached_until = self._zone_cache.cached_until(account_key, zone_set)
            if cached_until is None:
                return None  # not what the cache holds: a fault's fallback, or already replaced
            until_monotonic = min(until_monotonic, cached_until)
        if zone_set is not None and zone_set.valid_until is not None:
            # Personal copy stops at valid_until; for segment copy this is only early.
            until_clock = min(until_clock, zone_set.valid_until.timestamp())
        now = self._monotonic()
        if until_monotonic <= now or until_clock <= self._clock():
            return None
        self._prune(now)
        known = self._entries[key] = Known(
            identity=identity,
            cookie_claims=visitor.cookie_claims,
            arm=visitor.arm,
            result=result,
            view=view,
            changes=changes,
            until_monotonic=until_monotonic,
            until_clock=until_clock,
        )
        return known

    def _prune(self, now: float) -> None:
        """Make room for one entry: drop the oldest while over size, and a couple of the
        oldest once their time is up (entries live at most a TTL, ~30-60 s, and come in
        insertion order), so memory follows the visitors of the last minute, not the cap."""
        entries = self._entries
        while len(entries) >= self._max:
            entries.popitem(last=False)
        for _ in range(2):
            oldest = next(iter(entries), None)
            if oldest is None or entries[oldest].until_monotonic > now:
                break
            del entries[oldest]


class KnownVisitors(_KnownAnswers[VisitorKey, T]):
    """Answers remembered by the tokens a request carries (link and cookie)."""

    def __init__(
        self,
        identifier: Identifier,
        zone_cache: ZoneSetCache,
        *,
        max_entries: int,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(zone_cache, max_entries=max_entries, clock=clock, monotonic=monotonic)
        self._identifier = identifier

    def remember(
        self,
        key: VisitorKey,
        view: CampaignView,
        changes: int,
        visitor: Visitor,
        result: T,
    ) -> Known[T] | None:
        """Remember what the full path answered for a request carrying tokens, when it may be
        (see the module docstring); the entry remembered, or None. `changes`: see `_store`."""
        if self._max == 0:
            return None
        identity = visitor.identity
        if identity.method not in _TOKEN_METHODS or identity.account is None:
            return None
        campaign, _, link_token, cookie_token = key
        tenant = view.tenant
        # Every token the request carried must have been verified: a refused one could
        # become valid later (one from the future), and a refusal must not take room here.
        if link_token is not None and identity.method is not IdentityMethod.LINK:
            return None
        if cookie_token is not None and visitor.cookie_claims is None:
            return None
        until_monotonic, until_clock = float("inf"), float("inf")
        for kind, token in ((TokenKind.LINK, link_token), (TokenKind.COOKIE, cookie_token)):
            if token is None:
                continue
            trust = self._identifier.trust(kind, token, tenant=tenant, campaign=campaign)
            if trust is None or not trust.seen_again:
                return None  # not verified, or only once so far (the module docstring)
            until_monotonic = min(until_monotonic, trust.until_monotonic)
            until_clock = min(until_clock, trust.expires_at)
        return self._store(key, view, changes, visitor, result, until_monotonic, until_clock)


class KnownAddresses(_KnownAnswers[AddressKey, T]):
    """Answers remembered for requests without tokens by the account their client address
    places them in (or None) and the IP-range index that placed it."""

    def __init__(
        self,
        zone_cache: ZoneSetCache,
        *,
        max_entries: int,
        ttl_s: float = ADDRESS_TTL_S,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(zone_cache, max_entries=max_entries, clock=clock, monotonic=monotonic)
        self._ttl_s = ttl_s
        # The doorkeeper: keys the full path answered once (insertion order, bounded).
        self._seen: OrderedDict[AddressKey, None] = OrderedDict()

    def remember(
        self,
        key: AddressKey,
        view: CampaignView,
        changes: int,
        visitor: Visitor,
        result: T,
    ) -> Known[T] | None:
        """Remember what the full path answered for a request that carried no token, from the
        second time its key comes; the entry remembered, or None. `changes`: see `_store`.
        Only when the full path placed the visitor in the key's account (it works the address
        out again, from the same inputs)."""
        if self._max == 0 or visitor.identity.method not in _ADDRESS_METHODS:
            return None
        if visitor.identity.account != key[2]:
            return None  # pragma: no cover - the same inputs place the visitor alike
        seen = self._seen
        if key not in seen:
            if len(seen) >= self._max:
                seen.popitem(last=False)
            seen[key] = None
            return None
        del seen[key]
        until_monotonic = self._monotonic() + self._ttl_s
        return self._store(key, view, changes, visitor, result, until_monotonic, float("inf"))
