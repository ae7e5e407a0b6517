"""accounts.jsonl reading: bad lines reported with file, line and field; nothing else lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from welcomemat.errors import InputError
from welcomemat.records.accounts import (
    MAX_LINE_BYTES,
    Account,
    PostalAddress,
    iter_account_lines,
    read_accounts,
)

GOOD = {
    "account_id": "acct_dymaxa",
    "name": "Dymaxa B.V.",
    "domain": "Dymaxa.COM",
    "segment": "saas-mid",
    "tier": 1,
    "employee_count": 60,
    "ip_ranges": ["203.0.113.7/24", "2001:db8::/32"],
    "contacts": [{"contact_id": "c_joram", "email": "joram@dymaxa.com", "first_name": "Joram", "shoe": 44}],
    "facts": [
        {
            "id": "f1",
            "type": "funding",
            "statement": "Dymaxa raised a Series A",
            "published_at": "last week",
            "round": "Series A",
        }
    ],
    "crm_owner": "sam@acme.example",
    "custom": {"nested": [1, 2, 3]},
}


def write_lines(tmp_path: Path, lines: list[str | bytes]) -> Path:
    path = tmp_path / "accounts.jsonl"
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    return path


def test_good_line_keeps_unknown_fields_and_normalises(tmp_path: Path) -> None:
    report = read_accounts(write_lines(tmp_path, [json.dumps(GOOD)]))
    assert report.problems == []
    (account,) = report.accounts
    dumped = account.model_dump()
    assert dumped["crm_owner"] == "sam@acme.example"
    assert dumped["custom"] == {"nested": [1, 2, 3]}
    assert dumped["contacts"][0]["shoe"] == 44
    assert dumped["facts"][0]["round"] == "Series A"
    assert account.domain == "dymaxa.com"
    assert account.ip_ranges == ["203.0.113.0/24", "2001:db8::/32"]
    # A fact with an unparseable date is kept for the trust policy to reject, not the line.
    assert account.facts[0].published_at == "last week"


def test_bad_lines_are_reported_with_line_and_field_and_the_rest_goes_on(tmp_path: Path) -> None:
    bad_email = dict(GOOD, account_id="a3", contacts=[{"contact_id": "c1", "email": "not-an-email"}])
    lines: list[str | bytes] = [
        json.dumps(GOOD),
        "{not json",
        json.dumps(dict(GOOD, account_id="has space")),
        json.dumps(bad_email),
        "",
        json.dumps(dict(GOOD, account_id="a5", tier="gold")),
        b'{"account_id": "a6", "name": "\xff"}',
        json.dumps([1, 2]),
        json.dumps(dict(GOOD, account_id="a8", ip_ranges=["198.51.100.0/24", "10.0.0.300/24"])),
        json.dumps(dict(GOOD, account_id="a9")),
    ]
    path = write_lines(tmp_path, lines)
    report = read_accounts(path)
    assert [a.account_id for a in report.accounts] == ["acct_dymaxa", "a9"]
    got = [(p.line, p.field) for p in report.problems]
    assert got == [
        (2, None),
        (3, "account_id"),
        (4, "contacts.0.email"),
        (6, "tier"),
        (7, None),
        (8, None),
        (9, "ip_ranges.1"),  # the entry, not only the field
    ]
    for problem in report.problems:
        assert problem.file == str(path)
        assert str(path) in str(problem) and f":{problem.line}" in str(problem)
    assert "not valid JSON" in report.problems[0].message
    assert "not UTF-8" in report.problems[4].message
    assert "10.0.0.300/24" in report.problems[6].message
    assert report.skipped == 7


def test_duplicate_ids_reported_first_kept(tmp_path: Path) -> None:
    second = dict(GOOD, name="Dymaxa again")
    report = read_accounts(write_lines(tmp_path, [json.dumps(GOOD), json.dumps(second)]))
    assert [a.name for a in report.accounts] == ["Dymaxa B.V."]
    (problem,) = report.problems
    assert problem.line == 2 and problem.field == "account_id"
    assert "first on line 1" in problem.message


def test_unicode_bom_and_crlf(tmp_path: Path) -> None:
    names = ["Müller & Söhne GmbH", "Škoda Digital a.s.", "株式会社テスト", "شركة الاختبار", "Café 🚀 Ltd"]
    lines = [
        json.dumps(dict(GOOD, account_id=f"u{i}", name=n), ensure_ascii=False) for i, n in enumerate(names)
    ]
    path = tmp_path / "accounts.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode("utf-8") + b"\r\n")
    report = read_accounts(path)
    assert report.problems == []
    assert [a.name for a in report.accounts] == names


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    try:
        read_accounts(tmp_path / "nope.jsonl")
    except InputError as exc:
        assert "nope.jsonl" in str(exc) and "not found" in str(exc)
    else:
        raise AssertionError("expected InputError")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=200).filter(lambda b: b"\n" not in b), max_size=8))
def test_any_bytes_yield_accounts_or_located_errors(tmp_path_factory: object, raw_lines: list[bytes]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "a.jsonl"
        path.write_bytes(b"\n".join(raw_lines))
        for line_no, item in iter_account_lines(path):
            assert isinstance(item, Account | InputError)
            if isinstance(item, InputError):
                assert item.line == line_no and item.file == str(path)


def test_hostile_lines_cost_their_own_line_only(tmp_path: Path) -> None:
    """A number too long for Python's int, nesting past the limit, NaN, a repeated key: each is
    that line's problem (file, line, field), never a traceback, and the lines after it are read."""
    lines: list[str | bytes] = [
        '{"account_id": "a1", "employee_count": ' + "1" * 5000 + "}",
        '{"account_id": "a2", "custom": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"account_id": "a3", "employee_count": NaN}',
        '{"account_id": "a4", "account_id": "a5"}',
        '{"account_id": "a6", "employee_count": 1e999}',
        json.dumps(dict(GOOD, account_id="a7")),
    ]
    path = write_lines(tmp_path, lines)
    report = read_accounts(path)
    assert [a.account_id for a in report.accounts] == ["a7"]
    got = [(p.line, p.field) for p in report.problems]
    assert got == [
        (1, "employee_count"),
        (2, None),  # refused before it is parsed: no field to name yet
        (3, "employee_count"),
        (4, "account_id"),
        (5, "employee_count"),
    ]
    messages = [p.message for p in report.problems]
    assert "5000 digits" in messages[0]
    assert "nested deeper than" in messages[1]
    assert "NaN" in messages[2]
    assert "duplicate key 'account_id'" in messages[3]
    assert "out of range" in messages[4]


def test_a_line_over_the_limit_is_never_read_whole(tmp_path: Path) -> None:
    """A 'line' of many megabytes with no newline: refused by its length, the next line read."""
    path = tmp_path / "accounts.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"account_id": "big", "name": "' + b"x" * (3 * MAX_LINE_BYTES) + b'"}\n')
        handle.write(json.dumps(dict(GOOD, account_id="after")).encode() + b"\n")
    report = read_accounts(path)
    assert [a.account_id for a in report.accounts] == ["after"]
    (problem,) = report.problems
    assert problem.line == 1 and f"longer than {MAX_LINE_BYTES} bytes" in problem.message


# -- postal addresses (direct mail) ----------------------------------------------------------------

_ADDRESS = {"line1": "Keizersgracht 62", "city": "Amsterdam", "postal_code": "1015 CS", "country": "NL"}
_ONE_LINE = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=20
).filter(lambda s: s.strip() != "" and s.isprintable())


@given(part=st.sampled_from(["line1", "line2", "city", "region", "postal_code"]), text=_ONE_LINE)
def test_an_address_part_on_one_line_is_kept_as_written(part: str, text: str) -> None:
    address = PostalAddress.model_validate({**_ADDRESS, part: text})
    assert getattr(address, part) == text.strip()


@given(
    part=st.sampled_from(["line1", "line2", "city", "region", "postal_code"]),
    before=_ONE_LINE,
    control=st.characters(whitelist_categories=("Cc",)),
    after=_ONE_LINE,
)
def test_an_address_part_with_a_line_break_or_control_is_refused_naming_it(
    part: str, before: str, control: str, after: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        PostalAddress.model_validate({**_ADDRESS, part: f"{before}{control}{after}"})
    assert refused.value.errors()[0]["loc"] == (part,)


def _is_code(text: str) -> bool:
    code = text.strip()
    return len(code) == 2 and code.isascii() and code.isupper() and code.isalpha()


@given(country=st.text(max_size=4).filter(lambda c: not _is_code(c)))
def test_a_country_is_a_two_letter_code(country: str) -> None:
    with pytest.raises(ValidationError):
        PostalAddress.model_validate({**_ADDRESS, "country": country})
