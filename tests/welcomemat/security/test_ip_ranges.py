"""An account's `ip_ranges`: no range wider than /8 or /32, no special-purpose space, unless allowed.

`0.0.0.0/0`, `::/0` and loopback used to be accepted, and every visitor (every proxied one,
for loopback) became that account (issue 25). The oracle for "special-purpose" in the
property tests is the standard library's `ipaddress` properties, not the module's own table.
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from welcomemat.campaign.tenant_policy import load_tenant_policy
from welcomemat.records.accounts import read_accounts
from welcomemat.security.ip_ranges import (
    IPV4_WIDEST_PREFIX,
    IPV6_WIDEST_PREFIX,
    IpRangeRefused,
    IpRangeRules,
    check_ip_range,
    hard_rule_problem,
)

ALLOW = IpRangeRules(allow_private=True)

# Refused whatever the tenant allows: too wide, or space no company's visitors come from.
ALWAYS_REFUSED = [
    "0.0.0.0/0",
    "::/0",
    "0.0.0.0/1",
    "8.0.0.0/7",
    "2001:4860::/16",
    "2000::/3",
    "fc00::/7",  # private, but wider than /32: the width bound is never lifted
    "fe80::/10",
    "127.0.0.1",
    "127.0.0.0/8",
    "127.1.2.3/32",
    "::1",
    "::1/128",
    "0.0.0.0",
    "0.0.0.0/8",
    "::",
    "224.0.0.0/4",
    "239.255.255.250/32",
    "ff02::1",
    "ff00::/8",
    "240.0.0.0/4",
    "255.255.255.255",
    "198.18.0.0/15",
    "192.0.0.0/24",
    "192.0.0.8/29",
    "192.88.99.0/24",
    "2001::/32",
    "2001::/23",
    "2002::/16",
    "2002:a00::/40",
    "64:ff9b::/96",
    "100::/64",
    "::ffff:0.0.0.0/96",
    "::ffff:127.0.0.1",
    "::ffff:127.0.0.0/104",
    "::ffff:224.0.0.0/100",
    "::127.0.0.1",
    "::/96",
    "4000::/32",
    "fec0::/10",
    "fec0::/48",
    " 0.0.0.0/0 ",
    "2001:db8::%eth0/48",  # an interface zone means nothing in a range
    "fe80::%eth0/64",
    "not a range",
    "10.0.0.0/33",
    "",
]
# Refused unless the tenant allows private ranges (`tenant.yaml` ip_ranges.allow_private).
PRIVATE = [
    "10.0.0.0/8",
    "10.1.2.0/24",
    "172.16.0.0/12",
    "172.31.255.0/24",
    "192.168.0.0/16",
    "192.168.1.7/32",
    "100.64.0.0/10",
    "100.127.0.0/16",
    "169.254.0.0/16",
    "169.254.169.254/32",
    "fc00::/32",
    "fd12:3456:789a::/48",
    "fd00::/32",
    "fe80::/32",
    "fe80::/64",
    "::ffff:10.0.0.0/104",
    "::ffff:192.168.1.0/120",
    "::ffff:169.254.169.254/128",
    "172.0.0.0/8",  # holds 172.16.0.0/12
    "100.0.0.0/8",  # holds 100.64.0.0/10
    "192.168.0.0/15",
]
ACCEPTED = {
    "203.0.113.7/24": "203.0.113.0/24",
    "2001:db8::/32": "2001:db8::/32",
    "2001:db8:d1a::/48": "2001:db8:d1a::/48",
    "192.0.2.48/28": "192.0.2.48/28",
    "8.8.8.0/24": "8.8.8.0/24",
    "17.0.0.0/8": "17.0.0.0/8",
    "1.1.1.1": "1.1.1.1/32",
    "2a00:1450::/32": "2a00:1450::/32",
    "2606:4700:4700::1111/128": "2606:4700:4700::1111/128",
    "::ffff:8.8.8.0/120": "8.8.8.0/24",  # stored as the IPv4 range the renderer looks up
    " 198.51.100.9/24 ": "198.51.100.0/24",
}
PRIVATE_SPACE = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16"]
DOCUMENTATION = [
    ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
]
SHARED = ipaddress.IPv4Network("100.64.0.0/10")


def special_by_stdlib(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether the standard library calls `address` special-purpose (documentation ranges aside)."""
    if any(address in n for n in DOCUMENTATION if n.version == address.version):
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return True  # an IPv6 range over mapped space is judged as IPv4 (a test below)
    return (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or (isinstance(address, ipaddress.IPv4Address) and address in SHARED)
    )


def write(tmp_path: Path, rows: list[list[str]]) -> Path:
    path = tmp_path / "accounts.jsonl"
    lines = [
        json.dumps(
            {
                "account_id": f"acct_{i}",
                "name": f"Co {i}",
                "domain": f"c{i}.example",
                "segment": "s",
                "ip_ranges": r,
            }
        )
        for i, r in enumerate(rows, start=1)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


# -- reproduces issue 25: each refused at the door, naming line and entry ------------------------


@pytest.mark.parametrize("cidr", ALWAYS_REFUSED + PRIVATE)
def test_a_hostile_range_costs_its_line_and_names_the_entry(tmp_path: Path, cidr: str) -> None:
    path = write(tmp_path, [["203.0.113.0/24"], ["198.51.100.0/24", cidr], ["192.0.2.0/28"]])
    report = read_accounts(path)
    assert [a.account_id for a in report.accounts] == ["acct_1", "acct_3"]  # one bad row, only itself
    (problem,) = report.problems
    assert (problem.file, problem.line, problem.field) == (str(path), 2, "ip_ranges.1")
    if cidr.strip() in ("not a range", "10.0.0.0/33", ""):
        assert "is not an IP range" in problem.message
    assert "give the " in problem.message  # what would pass
    if cidr in PRIVATE:
        assert "allow_private: true" in problem.message and "tenant.yaml" in problem.message


@pytest.mark.parametrize("cidr", ALWAYS_REFUSED)
def test_no_setting_lets_a_wide_or_special_range_through(cidr: str) -> None:
    with pytest.raises(IpRangeRefused):
        check_ip_range(cidr, ALLOW)
    if cidr.strip() not in ("not a range", "10.0.0.0/33", "") and "%" not in cidr:
        assert hard_rule_problem(ipaddress.ip_network(cidr.strip(), strict=False)) is not None


@pytest.mark.parametrize("cidr", PRIVATE)
def test_private_ranges_pass_only_where_the_tenant_allows_them(cidr: str) -> None:
    with pytest.raises(IpRangeRefused, match="allow_private"):
        check_ip_range(cidr)
    assert check_ip_range(cidr, ALLOW).prefixlen >= IPV4_WIDEST_PREFIX
    assert hard_rule_problem(ipaddress.ip_network(cidr, strict=False)) is None  # the renderer keeps it


@pytest.mark.parametrize(("cidr", "stored"), ACCEPTED.items())
def test_a_companys_public_range_passes_as_it_is_stored(tmp_path: Path, cidr: str, stored: str) -> None:
    assert str(check_ip_range(cidr)) == stored
    (account,) = read_accounts(write(tmp_path, [[cidr]])).accounts
    assert account.ip_ranges == [stored]


def test_wider_than_the_bound_says_the_bound(tmp_path: Path) -> None:
    (problem,) = read_accounts(write(tmp_path, [["0.0.0.0/0"]])).problems
    assert "'0.0.0.0/0' spans /0, wider than the /8 (IPv4) or /32 (IPv6)" in problem.message
    (problem,) = read_accounts(write(tmp_path, [["::ffff:0.0.0.0/96"]])).problems
    assert "spans /0" in problem.message  # every IPv4 address, written as IPv6


def test_an_overlap_names_the_special_block_inside(tmp_path: Path) -> None:
    (problem,) = read_accounts(write(tmp_path, [["172.0.0.0/8"]])).problems
    assert "includes 172.16.0.0/12, private address space (RFC 1918)" in problem.message


def test_tenant_yaml_allows_private_ranges_and_read_accounts_honours_it(tmp_path: Path) -> None:
    tenant = tmp_path / "tenant.yaml"
    tenant.write_text("tenant: acme\nip_ranges:\n  allow_private: true\n")
    rules = load_tenant_policy(tenant).ip_ranges
    path = write(tmp_path, [["10.20.0.0/16"], ["127.0.0.0/8"], ["fd00:1::/48"]])
    report = read_accounts(path, rules)
    assert [(a.account_id, a.ip_ranges) for a in report.accounts] == [
        ("acct_1", ["10.20.0.0/16"]),
        ("acct_3", ["fd00:1::/48"]),
    ]
    assert [(p.line, p.field) for p in report.problems] == [(2, "ip_ranges.0")]  # loopback: never
    assert load_tenant_policy(_yaml(tmp_path, "tenant: acme\n")).ip_ranges.allow_private is False


def _yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "other.yaml"
    path.write_text(text)
    return path


def test_tenant_yaml_refuses_an_unknown_ip_ranges_key(tmp_path: Path) -> None:
    from welcomemat.errors import ContractError

    with pytest.raises(ContractError) as caught:
        load_tenant_policy(_yaml(tmp_path, "tenant: acme\nip_ranges:\n  allow_wide: true\n"))
    assert caught.value.field is not None and caught.value.field.startswith("ip_ranges")


# -- properties ---------------------------------------------------------------------------------------

_BASES_V4 = [ipaddress.IPv4Network(n) for n in ("0.0.0.0/0", *PRIVATE_SPACE, "127.0.0.0/8", "224.0.0.0/3")]
_BASES_V6 = [
    ipaddress.IPv6Network(n)
    for n in ("::/0", "2000::/3", "fc00::/7", "fe80::/10", "ff00::/8", "::/96", "::ffff:0:0/96", "2001::/23")
]


@st.composite
def networks(draw: st.DrawFn) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """Any network, drawn near special-purpose space often enough to land in and beside it."""
    public = [ipaddress.IPv4Network("0.0.0.0/0"), ipaddress.IPv6Network("2000::/3")]
    base = draw(st.sampled_from(_BASES_V4 + _BASES_V6) | st.sampled_from(public))
    offset = draw(st.integers(0, base.num_addresses - 1))
    address = type(base.network_address)(int(base.network_address) + offset)
    widest = IPV4_WIDEST_PREFIX if base.version == 4 else IPV6_WIDEST_PREFIX
    # Half of them within the width bound, where the special-purpose rules decide.
    prefix = draw(st.integers(0, base.max_prefixlen) | st.integers(widest, base.max_prefixlen))
    return ipaddress.ip_network(f"{address}/{prefix}", strict=False)


def _sample(
    network: ipaddress.IPv4Network | ipaddress.IPv6Network, pick: int
) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address inside `network`: its first plus `pick` (modulo its size)."""
    return type(network.network_address)(int(network.network_address) + pick % network.num_addresses)


@settings(max_examples=600, deadline=None)
@given(network=networks(), pick=st.integers(0, 2**128 - 1))
@example(network=ipaddress.ip_network("0.0.0.0/0"), pick=2**127)
@example(network=ipaddress.ip_network("::/0"), pick=2**127)
def test_an_accepted_range_is_bounded_and_not_special(
    network: ipaddress.IPv4Network | ipaddress.IPv6Network, pick: int
) -> None:
    try:
        accepted = check_ip_range(str(network))
    except IpRangeRefused:
        return
    widest = IPV4_WIDEST_PREFIX if accepted.version == 4 else IPV6_WIDEST_PREFIX
    assert accepted.prefixlen >= widest
    for address in (accepted.network_address, accepted.broadcast_address, _sample(accepted, pick)):
        assert not special_by_stdlib(address), (network, address)  # type: ignore[arg-type]


@settings(max_examples=600, deadline=None)
@given(network=networks(), pick=st.integers(0, 2**128 - 1))
def test_a_range_the_stdlib_calls_special_is_refused(
    network: ipaddress.IPv4Network | ipaddress.IPv6Network, pick: int
) -> None:
    inside = (network.network_address, network.broadcast_address, _sample(network, pick))
    if isinstance(network, ipaddress.IPv6Network) and network.prefixlen >= 96:
        mapped = network.network_address.ipv4_mapped
        if mapped is not None:  # judged as the IPv4 range it maps
            v4 = ipaddress.IPv4Network((mapped, network.prefixlen - 96))
            inside = (v4.network_address, v4.broadcast_address, _sample(v4, pick))
    if any(special_by_stdlib(a) for a in inside):  # type: ignore[arg-type]
        with pytest.raises(IpRangeRefused):
            check_ip_range(str(network))


@settings(max_examples=300, deadline=None)
@given(
    block=st.sampled_from([ipaddress.IPv4Network(n) for n in PRIVATE_SPACE]),
    offset=st.integers(0, 2**32 - 1),
    extra=st.integers(0, 24),
    mapped=st.booleans(),
)
def test_every_range_inside_private_space_is_refused_without_the_setting(
    block: ipaddress.IPv4Network, offset: int, extra: int, mapped: bool
) -> None:
    prefix = min(32, block.prefixlen + extra)
    address = ipaddress.IPv4Address(int(block.network_address) + offset % block.num_addresses)
    network = ipaddress.IPv4Network(f"{address}/{prefix}", strict=False)
    assert network.is_private or network.subnet_of(SHARED)  # the stdlib agrees it is special
    text = f"::ffff:{network.network_address}/{prefix + 96}" if mapped else str(network)
    with pytest.raises(IpRangeRefused, match="allow_private"):
        check_ip_range(text)
    assert check_ip_range(text, ALLOW) == network
