"""Registrable domains against the Public Suffix List's own tests, plus sanity cases."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.corpora import corpus_path
from welcomemat.security.domains import email_domain, registrable_domain


def _psl_cases() -> list[tuple[int, str | None, str | None]]:
    """(line number, input, expected) from psl/tests.txt; `null` is None, `//` a comment."""
    cases = []
    text = corpus_path("psl/tests.txt").read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("//"):
            continue
        given_, expected = line.split()
        cases.append((number, None if given_ == "null" else given_, None if expected == "null" else expected))
    return cases


PSL_CASES = _psl_cases()


def test_psl_corpus_every_case() -> None:
    wrong = [
        f"line {n}: {given_!r} -> {registrable_domain(given_)!r}, want {want!r}"
        for n, given_, want in PSL_CASES
        if registrable_domain(given_) != want
    ]
    nulls = sum(1 for *_, want in PSL_CASES if want is None)
    assert not wrong, f"{len(wrong)} of {len(PSL_CASES)} PSL cases wrong:\n" + "\n".join(wrong)
    assert len(PSL_CASES) == 78 and nulls == 26, (len(PSL_CASES), nulls)


@pytest.mark.parametrize(
    ("host", "want"),
    [
        ("mail.google.com", "google.com"),
        ("dymaxa.com", "dymaxa.com"),
        ("www.dymaxa.com", "dymaxa.com"),
        ("foo.co.uk", "foo.co.uk"),
        ("a.b.foo.co.uk", "foo.co.uk"),
        ("co.uk", None),
        ("  Mail.Google.COM ", "google.com"),
        ("x.github.io", "x.github.io"),  # private section
        ("github.io", None),
        ("bücher.example", "bücher.example"),
        ("www.BÜCHER.example", "bücher.example"),
        ("www.xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("_dmarc.example.com", "example.com"),
        (None, None),
        ("", None),
        ("   ", None),
        (".example.com", None),
        ("example.com.", None),
        ("a..example.com", None),
        ("127.0.0.1", None),
        ("0x7f.1", None),
        ("10.1", None),
        ("[::1]", None),
        ("::1", None),
        ("https://example.com", None),
        ("example.com/path", None),
        ("example.com:443", None),
        ("user@example.com", None),
        ("*.example.com", None),
        ("exa mple.com", None),
        ("xn--pokxncvks.com", None),
    ],
)
def test_registrable_domain(host: str | None, want: str | None) -> None:
    assert registrable_domain(host) == want


@pytest.mark.parametrize(
    ("email", "want"),
    [
        ("Jane.Doe@Mail.Google.com", "mail.google.com"),
        ("  jane@dymaxa.com  ", "dymaxa.com"),
        ("a@b@foo.co.uk", "foo.co.uk"),
        ('"a@b"@example.com', "example.com"),
        ("jane@bücher.example", "bücher.example"),
        ("jane@", None),
        ("@example.com", None),
        ("jane.example.com", None),
        ("", None),
        ("jane@exa mple.com", None),
        ("jane@[192.0.2.1]", None),
        ("jane@192.0.2.1", None),
        ("Jane <jane@example.com>", None),
        ("jane@example.com.", None),
    ],
)
def test_email_domain(email: str, want: str | None) -> None:
    assert email_domain(email) == want


ANY_TEXT = st.text(alphabet=st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=60)
HOSTISH = st.from_regex(r"[a-zA-Z0-9_.-]{0,12}(\.[a-zA-Z0-9-]{1,10}){0,4}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(st.one_of(ANY_TEXT, HOSTISH))
def test_property_never_raises(text: str) -> None:
    result = registrable_domain(text)
    if result is not None:
        assert result == result.lower().strip() and result
        assert registrable_domain(result) == result
        if text.isascii():
            lowered = text.strip().lower()
            assert lowered == result or lowered.endswith("." + result)
    domain = email_domain(text)
    assert domain is None or (domain == domain.strip().lower() and "@" not in domain and domain)
    if "@" not in text:
        assert email_domain(f"someone@{text}") in (None, text.strip().lower())
