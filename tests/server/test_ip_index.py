"""The IP-range index: most specific block wins, ambiguity identifies no one, both families."""

from __future__ import annotations

import ipaddress
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.ip_index import IpAddress, IpRangeIndex, normalise_ip, parse_ip_ranges
from tests.corpora import corpus_path


def index(ranges: dict[str, list[str]]) -> IpRangeIndex:
    return IpRangeIndex({a: [ipaddress.ip_network(c, strict=False) for c in cs] for a, cs in ranges.items()})


def lookup(idx: IpRangeIndex, address: str) -> str | None:
    return idx.lookup(normalise_ip(address))


def test_nested_blocks_innermost_wins_on_both_sides() -> None:
    idx = index({"host": ["10.0.0.0/8"], "tenant": ["10.1.0.0/16"], "desk": ["10.1.2.0/24"]})
    assert lookup(idx, "10.0.0.1") == "host"
    assert lookup(idx, "10.1.0.1") == "tenant"
    assert lookup(idx, "10.1.2.200") == "desk"
    assert lookup(idx, "10.1.3.0") == "tenant"  # after the inner block closes, the middle one resumes
    assert lookup(idx, "10.2.0.0") == "host"
    assert lookup(idx, "11.0.0.0") is None
    assert lookup(idx, "9.255.255.255") is None


def test_block_claimed_by_two_accounts_identifies_neither_but_still_shadows_outer() -> None:
    idx = index({"a": ["203.0.113.0/24", "203.0.0.0/16"], "b": ["203.0.113.0/24"]})
    assert lookup(idx, "203.0.113.5") is None
    assert lookup(idx, "203.0.5.5") == "a"


def test_ipv6_and_mapped_addresses() -> None:
    idx = index({"v6": ["2001:db8::/32"], "v4": ["192.0.2.0/24"], "mapped": ["::ffff:198.51.100.0/120"]})
    assert lookup(idx, "2001:db8:ffff::1") == "v6"
    assert lookup(idx, "::ffff:192.0.2.1") == "v4"
    assert lookup(idx, "198.51.100.7") == "mapped"
    assert lookup(idx, "2001:db9::1") is None
    assert lookup(idx, "fe80::1%eth0") is None
    assert idx.lookup(None) is None


def test_matches_a_brute_force_longest_prefix_search() -> None:
    rng = random.Random(7)
    ranges: dict[str, list[str]] = {}
    for i in range(200):
        prefix = rng.choice([8, 12, 16, 20, 24, 28, 32])
        base = ipaddress.IPv4Address(rng.getrandbits(32) & 0x0FFFFFFF)  # clustered so blocks nest
        ranges.setdefault(f"a{i % 60}", []).append(
            str(ipaddress.ip_network(f"{base}/{prefix}", strict=False))
        )
    idx = index(ranges)
    owners: dict[ipaddress.IPv4Network | ipaddress.IPv6Network, set[str]] = {}
    for account, cidrs in ranges.items():
        for cidr in cidrs:
            owners.setdefault(ipaddress.ip_network(cidr), set()).add(account)
    for _ in range(3000):
        address = ipaddress.IPv4Address(rng.getrandbits(32) & 0x0FFFFFFF)
        containing = [n for n in owners if address in n]
        expected = None
        if containing:
            best = max(containing, key=lambda n: n.prefixlen)
            expected = next(iter(owners[best])) if len(owners[best]) == 1 else None
        assert idx.lookup(address) == expected, address


def test_parse_skips_bad_entries_and_counts_them() -> None:
    raw = {
        b"good": json.dumps(["203.0.113.0/24", "203.0.113.7/24"]).encode(),
        b"bad_json": b"{not json",
        b"not_list": b'"203.0.113.0/24"',
        b"bad_cidr": json.dumps(["999.1.1.1/8", "2001:db8::/32"]).encode(),
    }
    parsed, bad = parse_ip_ranges(raw)
    assert bad == 3
    assert sorted(parsed) == ["bad_cidr", "good"]
    assert [str(n) for n in parsed["good"]] == ["203.0.113.0/24", "203.0.113.0/24"]


@pytest.mark.parametrize("text", ["", "not an ip", "1.2.3", "::ffff:999.1.1.1"])
def test_normalise_rejects_garbage(text: str) -> None:
    assert normalise_ip(text) is None


def test_parse_skips_stored_ranges_no_tenant_may_allow() -> None:
    """A map written before precompute refused them: `0.0.0.0/0` made every visitor one account."""
    raw = {
        b"everyone": json.dumps(["0.0.0.0/0", "::/0"]).encode(),
        b"proxy": json.dumps(["127.0.0.0/8", "::ffff:127.0.0.1/128", "::1/128"]).encode(),
        b"office": json.dumps(["10.0.0.0/8", "203.0.113.0/24"]).encode(),  # a tenant may allow 10/8
    }
    parsed, bad = parse_ip_ranges(raw)
    assert bad == 5
    assert {a: [str(n) for n in ns] for a, ns in parsed.items()} == {
        "office": ["10.0.0.0/8", "203.0.113.0/24"]
    }
    idx = IpRangeIndex(parsed)
    assert lookup(idx, "198.51.100.1") is None and lookup(idx, "127.0.0.1") is None


def _parsed_by_ipaddress(text: str) -> IpAddress | None:
    """What `normalise_ip` answered before its IPv4 fast path: `ipaddress` alone."""
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.scope_id is not None:
            return ipaddress.IPv6Address(address.compressed.split("%", 1)[0])
    return address


_OCTET_ISH = st.one_of(
    st.integers(0, 300).map(str),
    st.integers(0, 255).map(lambda n: f"0{n}"),  # a leading zero
    st.sampled_from(["", "0x7f", "-1", "+1", "1e2", "٣", "１", " 1", "1 ", "\x00", "00"]),
)


@settings(max_examples=500)
@given(
    st.one_of(
        st.lists(_OCTET_ISH, min_size=1, max_size=6).map(".".join),
        st.ip_addresses().map(str),
        st.text(alphabet="0123456789.:abcdefx%[] \t\n\x00", max_size=45),
    )
)
def test_the_ipv4_fast_path_reads_exactly_what_ipaddress_reads(text: str) -> None:
    assert normalise_ip(text) == _parsed_by_ipaddress(text)
    assert normalise_ip(f" {text}\n") == _parsed_by_ipaddress(f" {text}\n")


def test_the_ipv4_fast_path_agrees_with_ipaddress_on_the_url_corpus_hosts() -> None:
    """Hosts written by browser vendors' URL tests (hex, octal, short, overlong forms)."""
    cases = json.loads(corpus_path("wpt-url/urltestdata.json").read_text(encoding="utf-8"))
    hosts = {c[key] for c in cases if isinstance(c, dict) for key in ("hostname", "input") if c.get(key)}
    assert len(hosts) > 500
    for host in hosts:
        assert normalise_ip(host) == _parsed_by_ipaddress(host), repr(host)
        assert normalise_ip(host.strip("[]")) == _parsed_by_ipaddress(host.strip("[]")), repr(host)


def test_an_index_of_the_same_ranges_places_every_address_the_same() -> None:
    """What lets a reload that changed nothing keep the index (and what was remembered by it)."""
    ranges = {
        "acct_a": [ipaddress.ip_network("203.0.113.0/24")],
        "acct_b": [ipaddress.ip_network("2001:db8::/48")],
    }
    index = IpRangeIndex(ranges)
    assert index.same_ranges(IpRangeIndex(dict(reversed(list(ranges.items())))))
    moved = {"acct_b": ranges["acct_a"], "acct_a": ranges["acct_b"]}
    assert not index.same_ranges(IpRangeIndex(moved))
    assert not index.same_ranges(IpRangeIndex({"acct_a": ranges["acct_a"]}))
    assert not index.same_ranges(IpRangeIndex.empty()) and IpRangeIndex.empty().same_ranges(
        IpRangeIndex.empty()
    )
