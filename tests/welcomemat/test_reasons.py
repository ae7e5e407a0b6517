"""Zone reason codes: one meaning each, and any stored reason reads back, old codes too."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from welcomemat.reasons import (
    CLAIM_REASON_DOCS,
    PROVIDER_DECLINES,
    REASON_DOCS,
    ClaimReason,
    ZoneReason,
    parse_reason,
    zone_reason,
)


def test_every_code_has_one_line_of_meaning() -> None:
    assert set(REASON_DOCS) == set(ZoneReason)
    for code in ZoneReason:
        assert code.doc == REASON_DOCS[code] and code.doc.strip() and "\n" not in code.doc
        assert code.value == code.value.lower() and ":" not in code.value and ";" not in code.value


def test_every_claim_class_has_one_line_of_meaning_and_is_no_zone_reason() -> None:
    assert set(CLAIM_REASON_DOCS) == set(ClaimReason)
    for code in ClaimReason:
        assert code.doc == CLAIM_REASON_DOCS[code] and code.doc.strip() and "\n" not in code.doc
        assert "|" not in code.doc  # it is a docs table cell
        assert code.value == code.value.lower() and ":" not in code.value and ";" not in code.value
    assert not {c.value for c in ClaimReason} & {z.value for z in ZoneReason}
    check = parse_reason(zone_reason(ZoneReason.CHECK, ClaimReason.FLATTERY))
    assert (check.code, check.detail) == (ZoneReason.CHECK, "flattery")


def test_a_provider_gives_only_codes_about_a_missing_draft() -> None:
    decided_around_it = {
        ZoneReason.PERSONAL,
        ZoneReason.APPROVED,  # a person's decision, long after the provider
        ZoneReason.NOT_SPECIFIC,  # decided on a written draft, after the checks
        ZoneReason.IDENTITY,
        ZoneReason.NO_TRUSTED_FACT,
        ZoneReason.PROVIDER_UNAVAILABLE,
        ZoneReason.CHECK,
        ZoneReason.CTA_LINK_REFUSED,
    }
    assert PROVIDER_DECLINES == set(ZoneReason) - decided_around_it


@pytest.mark.parametrize(
    ("raw", "code", "detail", "unknown_segment"),
    [
        ("personal:funding+hiring", ZoneReason.PERSONAL, "funding+hiring", False),
        ("check:low_confidence", ZoneReason.CHECK, "low_confidence", False),
        ("identity:freemail_domain;unknown_segment", ZoneReason.IDENTITY, "freemail_domain", True),
        ("self_review_rejected", ZoneReason.SELF_REVIEW_REJECTED, None, False),
        ("no_trusted_fact;unknown_segment", ZoneReason.NO_TRUSTED_FACT, None, True),
    ],
)
def test_a_stored_reason_comes_apart(
    raw: str, code: ZoneReason, detail: str | None, unknown_segment: bool
) -> None:
    parsed = parse_reason(raw)
    assert (parsed.code, parsed.name, parsed.detail, parsed.unknown_segment) == (
        code,
        code.value,
        detail,
        unknown_segment,
    )
    assert parsed.doc == code.doc and parsed.raw == raw


def test_a_code_an_older_version_wrote_is_read_by_name_without_a_meaning() -> None:
    for raw in ("declined", "declined;unknown_segment", "pending"):
        parsed = parse_reason(raw)
        assert parsed.code is None and parsed.doc is None and parsed.name == raw.split(";")[0]


def test_the_stored_form() -> None:
    assert zone_reason(ZoneReason.NO_ANSWER) == "no_answer"
    assert zone_reason(ZoneReason.CHECK, "too_many_words") == "check:too_many_words"
    assert type(zone_reason(ZoneReason.NO_ANSWER)) is str  # stored as plain text, not the enum


@given(st.text(max_size=60))
def test_any_text_parses(raw: str) -> None:
    parsed = parse_reason(raw)
    assert parsed.raw == raw
    assert parsed.code is None or raw.startswith(parsed.code.value)
