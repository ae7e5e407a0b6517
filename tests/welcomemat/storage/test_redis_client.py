"""`REDIS_URL`'s cluster form: parsed one way, refused with a reason, never echoing a password.

The clients themselves run against a real cluster in tests/cluster/.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from welcomemat.errors import ConfigError
from welcomemat.settings import Settings
from welcomemat.storage.redis_client import is_cluster_url, parse_cluster_url

_HOST = st.one_of(
    st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,10}){0,2}", fullmatch=True),
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(lambda ip: f"[{ip}]"),
)
_NODE = st.tuples(_HOST, st.integers(1, 65535))


@given(nodes=st.lists(_NODE, min_size=1, max_size=6), tls=st.booleans(), auth=st.booleans())
def test_every_node_is_a_startup_node_and_the_first_carries_the_rest_of_the_url(
    nodes: list[tuple[str, int]], tls: bool, auth: bool
) -> None:
    scheme = "rediss" if tls else "redis"
    credentials = "user:p%40ss@" if auth else ""
    url = f"{scheme}+cluster://{credentials}" + ",".join(f"{h}:{p}" for h, p in nodes) + "?ssl_cert_reqs=none"
    assert is_cluster_url(url)
    parsed = parse_cluster_url(url)
    first_host, first_port = nodes[0]
    assert parsed.first_node_url == f"{scheme}://{credentials}{first_host}:{first_port}?ssl_cert_reqs=none"
    assert parsed.other_nodes == tuple((h.strip("[]"), p) for h, p in nodes[1:])


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("redis+cluster://", "must be host:port"),
        ("redis+cluster://cache.internal", "must be host:port"),
        ("redis+cluster://a:6379,b", "'b' must be host:port"),
        ("redis+cluster://a:6379,,b:6379", "must be host:port"),
        ("redis+cluster://a:0", "must be host:port"),
        ("redis+cluster://a:65536", "must be host:port"),
        ("redis+cluster://a:63x9", "must be host:port"),
        ("redis+cluster://a:6379/2", "database 0 only"),
        ("redis+cluster://a:6379#x", "fragment"),
    ],
)
def test_a_bad_cluster_url_is_refused_with_its_reason(url: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_cluster_url(url)
    with pytest.raises(ConfigError, match=f"REDIS_URL: .*{reason}"):
        Settings.from_env({"REDIS_URL": url})


def test_settings_take_either_form_and_refuse_others_without_echoing_a_password() -> None:
    for url in ("redis://r:6379/0", "unix:///run/redis.sock", "redis+cluster://a:7000,b:7001"):
        assert Settings.from_env({"REDIS_URL": url}).redis_url == url
    with pytest.raises(ConfigError, match=r"must start with one of .*redis\+cluster://") as refused:
        Settings.from_env({"REDIS_URL": "memcached://admin:hunter2@cache:11211"})
    assert "hunter2" not in str(refused.value)
    with pytest.raises(ConfigError) as bad_node:
        Settings.from_env({"REDIS_URL": "redis+cluster://admin:hunter2@a:6379,b"})
    assert "hunter2" not in str(bad_node.value)
