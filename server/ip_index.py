"""Which account a visitor's IP address belongs to: an in-memory interval index.

Built from the campaign's `ip_ranges_key` hash (account id -> JSON list of CIDRs, written
by precompute) and swapped whole when it is reloaded, so lookups never lock.

A stored block no account may claim, whatever its tenant allows (wider than /8 or /32,
loopback, multicast, reserved: `welcomemat.security.ip_ranges.hard_rule_problem`), is skipped and
counted like an unreadable one: a map written before precompute refused them (`0.0.0.0/0`
made every visitor one account) identifies no one by it.

CIDR blocks are either nested or disjoint, so the index flattens them into sorted,
non-overlapping intervals where the most specific block wins (a /28 an account owns
inside a hosting provider's /16 owned by another account). A lookup is one `bisect` per
address family. A block claimed by two accounts identifies neither: a wrong guess would
show one company another's page.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from welcomemat.security.ip_ranges import hard_rule_problem

__all__ = ["IpAddress", "IpRangeIndex", "normalise_ip", "parse_ip_ranges"]

log = logging.getLogger(__name__)

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# Claimed by more than one account: kept while flattening (it still shadows outer blocks),
# never returned.
_AMBIGUOUS = "\0ambiguous"


def normalise_ip(text: str) -> IpAddress | None:
    """Parse an address; IPv4-mapped IPv6 (`::ffff:203.0.113.9`) becomes IPv4. None if invalid.

    Dotted IPv4 text, the common case, is read by `inet_pton` (one C call, ~0.4 µs, against
    ~1.5 µs for `ipaddress`, which parses it in Python: the cost of an address not seen
    before). It accepts exactly what `ipaddress` does (four decimal octets of at most 255,
    no leading zeros; tests/server/test_ip_index.py compares them); anything else is left to
    `ipaddress`.
    """
    text = text.strip()
    try:
        return ipaddress.IPv4Address(int.from_bytes(socket.inet_pton(socket.AF_INET, text), "big"))
    except (OSError, ValueError):  # not dotted IPv4 (ValueError: an embedded NUL)
        pass
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.scope_id is not None:  # fe80::1%eth0: the zone means nothing here
            return ipaddress.IPv6Address(address.compressed.split("%", 1)[0])
    return address


@dataclass(frozen=True, slots=True)
class _Family:
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    owners: tuple[str, ...]

    def find(self, value: int) -> str | None:
        i = bisect_right(self.starts, value) - 1
        if i >= 0 and value <= self.ends[i]:
            owner = self.owners[i]
            return None if owner == _AMBIGUOUS else owner
        return None


def _flatten(blocks: Iterable[tuple[_Network, str]]) -> _Family:
    """Disjoint intervals from laminar CIDR blocks, the innermost block owning each address."""
    owner_of: dict[_Network, str] = {}
    for network, account in blocks:
        known = owner_of.get(network)
        owner_of[network] = account if known in (None, account) else _AMBIGUOUS
    # Outer blocks first at equal start, so a stack holds the chain of enclosing blocks.
    ordered = sorted(owner_of, key=lambda n: (int(n.network_address), n.prefixlen))
    starts: list[int] = []
    ends: list[int] = []
    owners: list[str] = []

    def emit(lo: int, hi: int, owner: str) -> None:
        if lo <= hi:
            starts.append(lo)
            ends.append(hi)
            owners.append(owner)

    stack: list[tuple[int, str]] = []  # (end, owner) of the enclosing blocks, innermost last
    cursor = 0
    for network in ordered:
        lo, hi = int(network.network_address), int(network.broadcast_address)
        while stack and stack[-1][0] < lo:  # close blocks that end before this one starts
            end, owner = stack.pop()
            emit(cursor, end, owner)
            cursor = end + 1
        if stack:
            emit(cursor, lo - 1, stack[-1][1])
        stack.append((hi, owner_of[network]))
        cursor = lo
    while stack:
        end, owner = stack.pop()
        emit(cursor, end, owner)
        cursor = end + 1
    return _Family(tuple(starts), tuple(ends), tuple(owners))


def parse_ip_ranges(raw: Mapping[bytes, bytes]) -> tuple[dict[str, list[_Network]], int]:
    """The stored hash as account -> networks, and how many entries were unusable or refused (skipped)."""
    parsed: dict[str, list[_Network]] = {}
    bad = 0
    for key, value in raw.items():
        account = key.decode("utf-8", "replace") if isinstance(key, bytes) else key
        try:
            cidrs = json.loads(value)
            if not isinstance(cidrs, list):
                raise ValueError("not a list")
        except ValueError:
            bad += 1
            continue
        for cidr in cidrs:
            try:
                network = ipaddress.ip_network(str(cidr), strict=False)
            except ValueError:
                bad += 1
                continue
            if hard_rule_problem(network) is not None:
                bad += 1
                continue
            parsed.setdefault(account, []).append(network)
    return parsed, bad


class IpRangeIndex:
    """Account lookup by address. Immutable: build a new one to change it."""

    def __init__(self, ranges: Mapping[str, Iterable[_Network]]) -> None:
        v4: list[tuple[_Network, str]] = []
        v6: list[tuple[_Network, str]] = []
        for account, networks in ranges.items():
            for network in networks:
                if isinstance(network, ipaddress.IPv6Network) and network.network_address.ipv4_mapped:
                    # ::ffff:a.b.c.d/n+96 is an IPv4 block; addresses are normalised to IPv4.
                    if network.prefixlen >= 96:
                        mapped = network.network_address.ipv4_mapped
                        network = ipaddress.IPv4Network((mapped, network.prefixlen - 96))
                (v4 if network.version == 4 else v6).append((network, account))
        self._v4 = _flatten(v4)
        self._v6 = _flatten(v6)
        self.size = len(v4) + len(v6)

    @classmethod
    def empty(cls) -> IpRangeIndex:
        return cls({})

    def same_ranges(self, other: IpRangeIndex) -> bool:
        """Whether `other` places every address where this one does (the same intervals and
        owners): a reload that changed nothing keeps the index it would replace."""
        return self._v4 == other._v4 and self._v6 == other._v6

    def lookup(self, address: IpAddress | None) -> str | None:
        """The account whose most specific block contains the address, or None."""
        if address is None:
            return None
        family = self._v4 if address.version == 4 else self._v6
        return family.find(int(address))
