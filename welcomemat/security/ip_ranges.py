"""Which networks an account may claim in `ip_ranges`: bounded in width, none of them special-purpose.

A visitor whose address falls in an account's range *is* that account to the renderer
(`server/ip_index.py`), so one careless row decides who every matching visitor is. `0.0.0.0/0`
or `::/0` makes every visitor the account; loopback makes every request a reverse proxy
forwards without a client address the account; a private range does the same to every
visitor on the renderer's own network. So a range is refused when it is

- wider than `/8` (IPv4) or `/32` (IPv6): the largest blocks ever allotted to one
  organisation (a legacy class A; a registry's usual allocation to an ISP). No setting
  widens this: a company's own network is never bigger, an intranet's included.
- special-purpose address space (the IANA special-purpose registries), or a range that
  overlaps one. Private use (RFC 1918, ULA `fc00::/7`), shared address space (CGNAT
  `100.64.0.0/10`) and link-local are refused unless the tenant allows them
  (`tenant.yaml`: `ip_ranges: {allow_private: true}`, for a renderer that only intranet
  visitors reach); loopback, unspecified, multicast, reserved, benchmarking, the IETF
  protocol blocks and the IPv6 space outside global unicast `2000::/3` are refused always.

IPv4-mapped IPv6 ranges (`::ffff:10.0.0.0/104`) are judged, and stored, as the IPv4 range
they map (`10.0.0.0/8`): the renderer looks such visitors up as IPv4. The documentation
ranges (`192.0.2.0/24`, `198.51.100.0/24`, `203.0.113.0/24`, `2001:db8::/32`) are accepted:
no real visitor comes from them, and the examples use them.

`check_ip_range` applies every rule (the accounts file, at the door); `hard_rule_problem`
applies the rules no setting lifts (a renderer reading what is stored, which knows no
tenant setting).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo

__all__ = [
    "ALLOW_PRIVATE_SETTING",
    "IPV4_WIDEST_PREFIX",
    "IPV6_WIDEST_PREFIX",
    "IP_RULES_CONTEXT",
    "IpNetwork",
    "IpRangeRefused",
    "IpRangeRules",
    "check_ip_range",
    "hard_rule_problem",
    "validate_ip_range_entry",
]

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

IPV4_WIDEST_PREFIX = 8  # prefix length: /8, 16,777,216 addresses
IPV6_WIDEST_PREFIX = 32  # prefix length: /32, a registry's usual allocation to an ISP
# The key of a pydantic validation context that carries the IpRangeRules to apply.
IP_RULES_CONTEXT = "ip_range_rules"
ALLOW_PRIVATE_SETTING = "`ip_ranges: {allow_private: true}` in tenant.yaml"
_EXAMPLE = "the company's own public block, e.g. 203.0.113.0/24 or 2001:db8:d1a::/48"


class IpRangeRules(BaseModel):
    """`tenant.yaml` `ip_ranges`: what an account's IP ranges may be, beyond the rules no file lifts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    allow_private: bool = Field(
        default=False,
        description="Accept private-use (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7), shared "
        "(100.64.0.0/10) and link-local (169.254.0.0/16, fe80::/10) ranges in accounts' `ip_ranges`: only "
        "for a renderer that intranet visitors alone reach. Loopback, multicast, reserved space and ranges "
        "wider than /8 (IPv4) or /32 (IPv6) stay refused.",
        examples=[True],
    )


class IpRangeRefused(ValueError):
    """An `ip_ranges` entry that is not a range an account may claim; the message says why and what passes."""


@dataclass(frozen=True, slots=True)
class _Special:
    network: IpNetwork
    what: str  # "loopback", "private address space (RFC 1918)"...
    why: str  # why no account may claim it: who would be taken for the account, or why it is a mistake
    private: bool  # lifted by `allow_private`
    # First and last address as integers: the renderer checks every stored range at each
    # reload, and integer comparisons keep that about as cheap as parsing the range.
    first: int
    last: int


def _bounds(network: IpNetwork) -> tuple[int, int]:
    first = int(network.network_address)
    return first, first + network.num_addresses - 1


def _special(cidr: str, what: str, why: str, *, private: bool = False) -> _Special:
    network = ipaddress.ip_network(cidr)
    return _Special(network, what, why, private, *_bounds(network))


_INTERNAL = "visitors on the renderer's own network come from it and would all be taken for this account"
_NO_VISITOR = "no company's network is in it, so the entry is a mistake"
_LOOPBACK = (
    "requests a reverse proxy forwards without the client's address come from it and would all be taken "
    "for this account"
)
# The IANA IPv4 and IPv6 special-purpose registries, less the documentation ranges (accepted).
_SPECIAL: tuple[_Special, ...] = (
    _special("0.0.0.0/8", 'unspecified ("this network")', _NO_VISITOR),
    _special("10.0.0.0/8", "private address space (RFC 1918)", _INTERNAL, private=True),
    _special("100.64.0.0/10", "shared address space (CGNAT, RFC 6598)", _INTERNAL, private=True),
    _special("127.0.0.0/8", "loopback", _LOOPBACK),
    _special("169.254.0.0/16", "link-local", _INTERNAL, private=True),
    _special("172.16.0.0/12", "private address space (RFC 1918)", _INTERNAL, private=True),
    _special("192.0.0.0/24", "IETF protocol assignments", _NO_VISITOR),
    _special("192.88.99.0/24", "6to4 relay anycast (deprecated)", _NO_VISITOR),
    _special("192.168.0.0/16", "private address space (RFC 1918)", _INTERNAL, private=True),
    _special("198.18.0.0/15", "benchmarking", _NO_VISITOR),
    _special("224.0.0.0/4", "multicast", _NO_VISITOR),
    _special("240.0.0.0/4", "reserved (with the broadcast address)", _NO_VISITOR),
    _special("::/128", "unspecified", _NO_VISITOR),
    _special("::1/128", "loopback", _LOOPBACK),
    _special("ff00::/8", "multicast", _NO_VISITOR),
    _special("fc00::/7", "unique local address space (ULA)", _INTERNAL, private=True),
    _special("fe80::/10", "link-local", _INTERNAL, private=True),
    _special("2001::/23", "IETF protocol assignments (Teredo...)", _NO_VISITOR),
    _special("2002::/16", "6to4 (deprecated)", "its addresses stand for other networks' IPv4 addresses"),
)
_GLOBAL_UNICAST_V6 = _bounds(ipaddress.IPv6Network("2000::/3"))
_OUTSIDE_GLOBAL_V6 = "outside IPv6 global unicast 2000::/3 (IPv4-compatible, NAT64, reserved...)"


def _as_ipv4_if_mapped(network: IpNetwork) -> IpNetwork:
    """`::ffff:a.b.c.d/n` (n >= 96) as the IPv4 range it maps; anything else unchanged."""
    if isinstance(network, ipaddress.IPv6Network) and network.prefixlen >= 96:
        mapped = network.network_address.ipv4_mapped
        if mapped is not None:
            return ipaddress.IPv4Network((mapped, network.prefixlen - 96))
    return network


def _problem(network: IpNetwork, *, allow_private: bool) -> str | None:
    """Why an account may not claim `network` (None: it may)."""
    widest = IPV4_WIDEST_PREFIX if network.version == 4 else IPV6_WIDEST_PREFIX
    if network.prefixlen < widest:
        return (
            f"spans /{network.prefixlen}, wider than the /{IPV4_WIDEST_PREFIX} (IPv4) or "
            f"/{IPV6_WIDEST_PREFIX} (IPv6) an account may claim, so visitors of many other networks "
            f"would be shown this account's page; give {_EXAMPLE}"
        )
    first, last = _bounds(network)
    allowed_private = False  # inside a private block `allow_private` lets through
    for special in _SPECIAL:
        if special.network.version != network.version or last < special.first or special.last < first:
            continue
        inside = special.first <= first and last <= special.last
        if special.private and allow_private:
            allowed_private = allowed_private or inside
            continue
        where = "is" if inside else f"includes {special.network},"
        tail = f"; or, for a renderer only intranet visitors reach, set {ALLOW_PRIVATE_SETTING}"
        return f"{where} {special.what}: {special.why}; give {_EXAMPLE}{tail if special.private else ''}"
    outside_global = not (_GLOBAL_UNICAST_V6[0] <= first and last <= _GLOBAL_UNICAST_V6[1])
    # ULA and link-local lie outside 2000::/3 too: the loop above let them through only if allowed.
    if network.version == 6 and outside_global and not allowed_private:
        return f"is {_OUTSIDE_GLOBAL_V6}: {_NO_VISITOR}; give {_EXAMPLE}"
    return None


def check_ip_range(text: str, rules: IpRangeRules | None = None) -> IpNetwork:
    """The range `text` names (host bits dropped, IPv4-mapped as IPv4) if an account may claim it.

    Raises IpRangeRefused saying why, and what would pass. `rules` default: `IpRangeRules()`
    (no private ranges).
    """
    raw = text.strip()
    try:
        network = _as_ipv4_if_mapped(ipaddress.ip_network(raw, strict=False))
    except ValueError as exc:
        raise IpRangeRefused(f"{text!r} is not an IP range (CIDR): {exc}; give {_EXAMPLE}") from None
    if isinstance(network, ipaddress.IPv6Network) and network.network_address.scope_id is not None:
        # A zone (`%eth0`) names an interface of one host: it means nothing in a visitor's address.
        raise IpRangeRefused(f"{raw!r} carries an interface zone (%...); give the range without it")
    problem = _problem(network, allow_private=(rules or IpRangeRules()).allow_private)
    if problem is not None:
        raise IpRangeRefused(f"{raw!r} {problem}")
    return network


def hard_rule_problem(network: IpNetwork) -> str | None:
    """Why no account may claim `network`, whatever the tenant allows (None: some tenant may)."""
    return _problem(_as_ipv4_if_mapped(network), allow_private=True)


def validate_ip_range_entry(value: str, info: ValidationInfo) -> str:
    """An `ip_ranges` entry, checked with the context's IpRangeRules (`IP_RULES_CONTEXT`).

    Without them (a record read back from storage or a work stream, checked when its file was
    read) only the rules no setting lifts apply, so a range its tenant allowed still reads back.
    """
    context = info.context if isinstance(info.context, dict) else {}
    rules = context.get(IP_RULES_CONTEXT)
    if not isinstance(rules, IpRangeRules):
        rules = IpRangeRules(allow_private=True)
    return str(check_ip_range(value, rules))
