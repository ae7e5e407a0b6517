"""A returning visitor's answer, remembered: who the tokens say they are, their arm, and the
page (or zones payload) they were served, by the tokens the request carries.

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
- a token expires, or the personal zone set's `valid_until` passes (the renderer's clock).

Only answers where every token the request carried was verified are remembered, and only
when the zone set served is the one the zone-set cache holds. So refused tokens cannot fill
it, a Redis fault's fallback copy is never remembered, and an IP-identified or anonymous
visitor (no token) always takes the full path. Bounded: the oldest entries go first, and
entries whose time is up are dropped as new ones come in.

Remembered from a visitor's second request, not the first: every token the request carried
must have come back after the request that verified it (`Identifier.trust`, the
verification memo doubling as the cache's doorkeeper). Most link clicks and QR scans come
once: remembering each cost a send's or a mail drop's first arrivals ~8 µs apiece, and their
entries pushed the visitors who do return out of the bound (bench/README.md). A returning
visitor takes the full path twice, then the remembered answer.

Event-loop only (no lock): `ZoneSetCache.changes` is written by watcher threads, and reading
an int is atomic.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from server.identify import Identifier, IdentityMethod
from server.visitor import Visit, Visitor
from server.zone_cache import ZoneSetCache
from welcomemat.campaign.view import CampaignView
from welcomemat.security.tokens import TokenKind

__all__ = ["Known", "KnownVisitors", "VisitorKey"]

T = TypeVar("T")

# (campaign id, page id or route, link token, cookie token)
VisitorKey = tuple[str, str, str | None, str | None]

_REMEMBERED_METHODS = (IdentityMethod.LINK, IdentityMethod.COOKIE)


@dataclass(slots=True)
class Known(Visit[T]):
    """A remembered answer: what the full path decided, and until when it stands."""

    changes: int
    until_monotonic: float
    until_clock: float


class KnownVisitors(Generic[T]):
    """`VisitorKey` -> `Known[T]`, for one kind of answer (pages, or zones payloads)."""

    def __init__(
        self,
        identifier: Identifier,
        zone_cache: ZoneSetCache,
        *,
        max_entries: int,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must be >= 0, got {max_entries}")
        self._identifier = identifier
        self._zone_cache = zone_cache
        self._max = max_entries
        self._clock = clock
        self._monotonic = monotonic  # the clock of the token memo's and zone cache's TTLs
        # Oldest first. An OrderedDict: dropping a plain dict's first key costs O(size) in
        # CPython (`next(iter())` walks the deleted slots at its front).
        self._entries: OrderedDict[VisitorKey, Known[T]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: VisitorKey, view: CampaignView) -> Known[T] | None:
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

    def remember(
        self,
        key: VisitorKey,
        view: CampaignView,
        changes: int,
        visitor: Visitor,
        result: T,
    ) -> Known[T] | None:
        """Remember what the full path answered, when it may be (see the module docstring);
        the entry remembered, or None.

        `changes` is `ZoneSetCache.changes` read before the visitor was identified (a change
        message arriving meanwhile then voids the entry).
        """
        if self._max == 0:
            return None
        identity = visitor.identity
        if identity.method not in _REMEMBERED_METHODS or identity.account is None:
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
        cached_until = self._zone_cache.cached_until((tenant, campaign, identity.account), visitor.zone_set)
        if cached_until is None:
            return None  # not what the cache holds: a fault's fallback, or already replaced
        until_monotonic = min(until_monotonic, cached_until)
        zone_set = visitor.zone_set
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
