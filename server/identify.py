"""Who is visiting: signed link token ▸ signed cookie ▸ IP range ▸ anonymous.

Every step fails closed to the next: a token that is malformed, tampered, expired, from
the future, signed with a retired key, or issued for another tenant or campaign is
counted and ignored, never an error page (the visitor still gets a good page, the
anonymous one). Tokens are verified only by `welcomemat.security.tokens.TokenSigner`. A genuine
token issued before its account (or contact) was erased is revoked (`welcomemat.records.erasure`):
counted as `revoked` and ignored the same way, checked on every request (remembered
verifications included).

The client address comes from `X-Forwarded-For` only when the TCP peer is one of the
configured trusted proxies; then the rightmost hop that is not itself a trusted proxy
is the client (hops further left were written by the client and prove nothing).
"""

from __future__ import annotations

import enum
import ipaddress
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

from server.cookies import identity_cookie_header
from server.ip_index import IpAddress, IpRangeIndex, normalise_ip
from welcomemat.errors import TokenBadSignature, TokenError, TokenExpired, TokenFromFuture, TokenMalformed
from welcomemat.records.erasure import Revocations
from welcomemat.security.tokens import DEFAULT_COOKIE_TTL_S, TokenClaims, TokenKind, TokenSigner

__all__ = [
    "ANONYMOUS",
    "MEMO_ENTRIES",
    "MEMO_TTL_S",
    "Identifier",
    "Identity",
    "IdentityMethod",
    "Trust",
    "TrustedProxies",
    "client_address",
    "token_failure_reason",
]

# (peer, X-Forwarded-For) pairs whose client address is remembered (`TrustedProxies`).
_ADDRESSES_REMEMBERED = 10_000
# More hops than this in X-Forwarded-For is not a real proxy chain; only the last ones matter.
_MAX_FORWARDED_HOPS = 16
# Verified tokens remembered, and for how long: a returning visitor's cookie then costs a
# dict lookup instead of an HMAC and a payload decode (a sizeable share of a cached page).
# After a key is removed from WELCOMEMAT_SECRET, tokens it signed stop working within
# MEMO_TTL_S on every renderer. A link or QR token's entry also keeps the cookie its
# arrival sets (`arrival_cookie`), so a second click costs no signing either.
MEMO_ENTRIES = 20_000  # as `RendererTuning.token_memo_entries`
MEMO_TTL_S = 60.0


class IdentityMethod(enum.StrEnum):
    LINK = "link"
    QR = "qr"
    COOKIE = "cookie"
    IP = "ip"
    ANONYMOUS = "anonymous"


@dataclass(frozen=True, slots=True)
class Identity:
    """The account (and contact) a request is attributed to, and how we know."""

    method: IdentityMethod
    account: str | None = None
    contact: str | None = None

    @classmethod
    def from_claims(cls, method: IdentityMethod, claims: TokenClaims) -> Identity:
        return cls(method, claims.account, claims.contact)


ANONYMOUS = Identity(IdentityMethod.ANONYMOUS)


@dataclass(slots=True)
class _Verified:
    """A memo entry: a token `TokenSigner.verify` accepted, when, the `Set-Cookie` header
    its arrival earned (signed on first use), and whether a later request brought it again."""

    claims: TokenClaims
    verified_at: float
    cookie: tuple[bytes, bytes] | None = None
    seen_again: bool = False


class Trust(NamedTuple):
    """How long what was built from a remembered token may stand (`Identifier.trust`)."""

    until_monotonic: float  # the monotonic time its memo entry stops being trusted
    expires_at: int  # the token's own expiry, Unix seconds
    seen_again: bool  # a request after the one that verified it brought it again


class TrustedProxies:
    """The networks whose peers may speak for the client (`WELCOMEMAT_TRUSTED_PROXIES`)."""

    def __init__(self, cidrs: Iterable[str], *, remembered: int = _ADDRESSES_REMEMBERED) -> None:
        networks = [ipaddress.ip_network(c, strict=False) for c in cidrs]
        # Each network as (its address type, first, last) integers: a test is then comparisons
        # of ints (~0.3 µs), not `address in network` per network (~1.2-1.5 µs for one), and an
        # address not seen before is tested twice (the peer, then the client it speaks for).
        self._ranges = tuple(
            (type(n.network_address), int(n.network_address), int(n.broadcast_address)) for n in networks
        )
        self._max = remembered
        # (peer, X-Forwarded-For) -> the client address: depends on nothing else
        self._addresses: OrderedDict[tuple[str | None, str | None], IpAddress | None] = OrderedDict()

    def client_address(self, peer: str | None, forwarded_for: str | None) -> IpAddress | None:
        """`client_address(peer, forwarded_for, self)`, remembered (a few thousand pairs: the
        same proxies and visitors come back, and parsing addresses costs)."""
        key = (peer, forwarded_for)
        try:
            return self._addresses[key]
        except KeyError:
            pass
        address = client_address(peer, forwarded_for, self)
        if self._max:
            if len(self._addresses) >= self._max:
                self._addresses.popitem(last=False)  # the oldest (insertion order)
            self._addresses[key] = address
        return address

    def __bool__(self) -> bool:
        return bool(self._ranges)

    def __contains__(self, address: object) -> bool:
        if not isinstance(address, ipaddress.IPv4Address | ipaddress.IPv6Address):
            return False
        value = int(address)
        for family, first, last in self._ranges:
            if first <= value <= last and isinstance(address, family):
                return True
        return False


def _hop_address(hop: str) -> IpAddress | None:
    hop = hop.strip()
    address = normalise_ip(hop)
    if address is not None:
        return address
    if hop.startswith("["):  # [2001:db8::1]:443
        return normalise_ip(hop[1:].split("]", 1)[0])
    if hop.count(":") == 1:  # 203.0.113.9:443
        return normalise_ip(hop.split(":", 1)[0])
    return None


def client_address(peer: str | None, forwarded_for: str | None, proxies: TrustedProxies) -> IpAddress | None:
    """The visitor's address: the peer, or what trusted proxies say in `X-Forwarded-For`.

    A trusted proxy that forwards garbage gets no benefit of the doubt: None (no IP
    identification) rather than a guess.
    """
    address = normalise_ip(peer) if peer else None
    if address is None or not forwarded_for or address not in proxies:
        return address
    hops = forwarded_for.split(",")[-_MAX_FORWARDED_HOPS:]
    candidate: IpAddress | None = None
    for hop in reversed(hops):
        candidate = _hop_address(hop)
        if candidate is None:
            return None
        if candidate not in proxies:
            return candidate
    return candidate  # every hop is a proxy of ours: the leftmost is as close as we get


def token_failure_reason(exc: TokenError) -> str:
    """A short, stable reason code for metrics."""
    if isinstance(exc, TokenExpired):
        return "expired"
    if isinstance(exc, TokenFromFuture):
        return "from_future"
    if isinstance(exc, TokenBadSignature):
        return "bad_signature"
    if isinstance(exc, TokenMalformed):
        return "malformed"
    return "invalid"


class Identifier:
    """Applies the identification order for one campaign's request.

    `signer` is None when no `WELCOMEMAT_SECRET` is configured: tokens then identify no
    one (IP ranges still do).
    """

    def __init__(
        self,
        signer: TokenSigner | None,
        *,
        clock: Callable[[], float] = time.time,
        on_reject: Callable[[TokenKind, str], None] = lambda kind, reason: None,
        memo_entries: int = MEMO_ENTRIES,
    ) -> None:
        if memo_entries < 0:
            raise ValueError(f"memo_entries must be >= 0, got {memo_entries}")
        self.signer = signer
        self._memo_entries = memo_entries
        self._clock = clock
        self._on_reject = on_reject
        # (kind, tenant, campaign, token) -> its claims, the monotonic time it was verified, its cookie
        # An OrderedDict: dropping a plain dict's first key is O(size) in CPython (`next(iter())`
        # walks the deleted slots at its front), paid again for every new token once full.
        self._memo: OrderedDict[tuple[TokenKind, str, str, str], _Verified] = OrderedDict()

    def verify(
        self,
        kind: TokenKind,
        token: str | None,
        *,
        tenant: str,
        campaign: str,
        revocations: Revocations | None = None,
    ) -> TokenClaims | None:
        """The claims of a genuine, unrevoked token for this tenant and campaign, else None (counted).

        Only `TokenSigner.verify` decides that a token is genuine. A token string it accepted
        is remembered for `MEMO_TTL_S`; on a hit only time can have changed the answer, so
        expiry is checked again (`issued_at` only moves further into the past). Refusals are
        not remembered: they cannot fill the memo.
        """
        if not token or self.signer is None:
            return None
        key = (kind, tenant, campaign, token)
        memo = self._memo.get(key)
        if memo is not None:
            claims = memo.claims
            if time.monotonic() - memo.verified_at < MEMO_TTL_S and self._clock() < claims.expires_at:
                memo.seen_again = True
                return self._unrevoked(kind, claims, revocations)
            del self._memo[key]
        try:
            claims = self.signer.verify(kind, token, tenant=tenant, campaign=campaign)
        except TokenError as exc:
            self._on_reject(kind, token_failure_reason(exc))
            return None
        if self._memo_entries:
            if len(self._memo) >= self._memo_entries:
                self._memo.popitem(last=False)  # the oldest entry (insertion order)
            self._memo[key] = _Verified(claims, time.monotonic())
        return self._unrevoked(kind, claims, revocations)

    def _unrevoked(
        self, kind: TokenKind, claims: TokenClaims, revocations: Revocations | None
    ) -> TokenClaims | None:
        if revocations and revocations.revoked(claims.account, claims.contact, claims.issued_at):
            self._on_reject(kind, "revoked")
            return None
        return claims

    def __len__(self) -> int:
        """Tokens remembered (each with the cookie its arrival earned, once signed)."""
        return len(self._memo)

    def trust(self, kind: TokenKind, token: str, *, tenant: str, campaign: str) -> Trust | None:
        """For a token `verify` accepted and still remembers: how long it stands, and whether
        it came back after the request that verified it; else None. Nothing is verified here."""
        memo = self._memo.get((kind, tenant, campaign, token))
        if memo is None:
            return None
        return Trust(memo.verified_at + MEMO_TTL_S, memo.claims.expires_at, memo.seen_again)

    def arrival_cookie(
        self, kind: TokenKind, token: str, account: str, contact: str | None, *, tenant: str, campaign: str
    ) -> tuple[bytes, bytes]:
        """The `Set-Cookie` header of the identification cookie that the arrival token `token`
        (a link or QR token `verify` just accepted for `account` and `contact`) earns: a
        COOKIE-kind token for the same tenant, campaign, account and contact, living
        `DEFAULT_COOKIE_TTL_S`.

        Signed once per memo entry and handed out again while the entry stands (the memo's
        TTL, bound and expiry check). Revocation is the caller's: its `verify` of this request,
        or a remembered answer (`server.known_visitors`), which new revocations void as soon as
        the renderer loads them (at once on an erasure's change message, `server.watcher`).
        A second click on the same link costs no signing, and gets the cookie the first got,
        issued at most `MEMO_TTL_S` earlier.
        """
        if self.signer is None:  # pragma: no cover - callers only get here after a verification
            raise RuntimeError("no signer configured")
        memo = self._memo.get((kind, tenant, campaign, token))
        if memo is not None and (memo.claims.account, memo.claims.contact) != (account, contact):
            memo = None  # pragma: no cover - a token's claims are its own
        if memo is not None and memo.cookie is not None:
            return memo.cookie
        if memo is not None:  # the verified claims: their ids need no second check
            cookie = self.signer.reissue(memo.claims, TokenKind.COOKIE, ttl_s=DEFAULT_COOKIE_TTL_S)
        else:
            cookie = self.signer.sign(
                TokenKind.COOKIE,
                tenant=tenant,
                campaign=campaign,
                account=account,
                contact=contact,
                ttl_s=DEFAULT_COOKIE_TTL_S,
            )
        header = identity_cookie_header(campaign, cookie, DEFAULT_COOKIE_TTL_S)
        if memo is not None:
            memo.cookie = header
        return header

    def identify(
        self,
        *,
        tenant: str,
        campaign: str,
        link_token: str | None,
        cookie_token: str | None,
        address: Callable[[], IpAddress | None],
        ip_index: IpRangeIndex,
        revocations: Revocations | None = None,
    ) -> tuple[Identity, TokenClaims | None]:
        """The identity, and the cookie claims if a valid cookie was presented (so a caller can
        tell whether the cookie already says what a link says). `revocations`: the tenant's.
        `address` is asked only when no token identifies the visitor (parsing costs)."""
        link = self.verify(
            TokenKind.LINK, link_token, tenant=tenant, campaign=campaign, revocations=revocations
        )
        cookie = self.verify(
            TokenKind.COOKIE, cookie_token, tenant=tenant, campaign=campaign, revocations=revocations
        )
        if link is not None:
            return Identity.from_claims(IdentityMethod.LINK, link), cookie
        if cookie is not None:
            return Identity.from_claims(IdentityMethod.COOKIE, cookie), cookie
        account = ip_index.lookup(address()) if ip_index.size else None
        if account is not None:
            return Identity(IdentityMethod.IP, account), None
        return ANONYMOUS, None
