"""Reading headers straight from the scope answers what Starlette's `Headers` answers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from starlette.datastructures import Headers

from server.scope_headers import header_value, joined_header

_NAMES = st.sampled_from([b"x-forwarded-for", b"user-agent", b"cookie", b"host", b"dnt"])
_HEADERS = st.lists(st.tuples(_NAMES, st.binary(max_size=40)), max_size=12)


@given(_HEADERS, _NAMES)
def test_one_header_is_the_first_of_its_name(headers: list[tuple[bytes, bytes]], name: bytes) -> None:
    scope = {"type": "http", "headers": headers}
    assert header_value(scope, name) == Headers(scope=scope).get(name.decode())


@given(_HEADERS, _NAMES)
def test_a_repeated_header_is_every_value_joined(headers: list[tuple[bytes, bytes]], name: bytes) -> None:
    """A proxy chain may send X-Forwarded-For several times: every hop counts, in order."""
    scope = {"type": "http", "headers": headers}
    values = Headers(scope=scope).getlist(name.decode())
    assert joined_header(scope, name) == (",".join(values) if values else None)


def test_two_forwarded_for_headers_name_the_rightmost_hop_last() -> None:
    scope = {
        "type": "http",
        "headers": [(b"x-forwarded-for", b"198.51.100.7"), (b"x-forwarded-for", b"203.0.113.9")],
    }
    assert joined_header(scope, b"x-forwarded-for") == "198.51.100.7,203.0.113.9"
    assert joined_header({"type": "http", "headers": []}, b"x-forwarded-for") is None
