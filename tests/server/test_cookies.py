"""Reading the campaign's cookie out of a Cookie header: the same answer as Starlette's parser."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st
from starlette.requests import cookie_parser

from server.cookies import cookie_value

NAME = "wm_q4-pipeline"
# Pieces a Cookie header is made of, including the awkward ones: quotes, escapes,
# repeated names, empty pairs, stray separators, spaces, non-ASCII (latin-1 decoded).
PIECES = st.sampled_from(
    [NAME, "wm_q4", "_ga", "=", ";", "; ", " ", '"', "\\", "\\073", "\\\\", "a.b-c_d", "é", "\t", "tok.en"]
)
HEADERS = st.lists(st.one_of(PIECES, st.text(max_size=4)), max_size=12).map("".join)


@given(header=HEADERS)
@example(header=f'{NAME}="a\\073b"; {NAME}=second')
@example(header=f" {NAME} = spaced ;other=1")
@example(header=f"{NAME}")
@example(header=f'{NAME}="quoted\\"value"')
def test_cookie_value_is_what_starlettes_parser_finds(header: str) -> None:
    assert cookie_value(header, NAME) == cookie_parser(header).get(NAME)


def test_last_pair_of_the_name_wins_and_is_unquoted() -> None:
    assert cookie_value(f'_ga=1; {NAME}="a\\073b"; {NAME}=second', NAME) == "second"
    assert cookie_value(f'_ga=1; {NAME}="a\\073b"', NAME) == "a;b"
    assert cookie_value("_ga=1; wm_q4=x", NAME) is None
