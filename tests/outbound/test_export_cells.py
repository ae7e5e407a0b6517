"""The export's cell choke point: attack strings from the shared corpora never leave in a cell."""

from __future__ import annotations

import csv
import io
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from outbound.export import write_export
from tests.corpora import corpus_lines
from welcomemat.outreach.export_cells import CellRefusal, export_cell
from welcomemat.spreadsheet import spreadsheet_safe

ATTACKS = (
    corpus_lines("xss/IntrudersXSS.txt")
    + corpus_lines("xss/RSNAKE_XSS.txt")
    + corpus_lines("xss/XSS_Polyglots.txt")
)
# Server-side template injection as sequencers, mail merges and template engines read it.
TEMPLATES = [
    "{{7*7}}",
    "{{ first_name | default: 'x' }}",
    "{% raw %}",
    "${7*7}",
    "#{7*7}",
    "*{7*7}",
    "<%= 7*7 %>",
    "[[${7*7}]]",
    "{{constructor.constructor('alert(1)')()}}",
    "%FIRST_NAME%",
    "{company}",
]
ACTIVE = re.compile(r"<[A-Za-z/!?%]|\{\{|\{%|\$\{|#\{|<%|\[\[|&#?\w+;|\\|(?i:javascript\s*:)")
INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def assert_clean(cell: str) -> None:
    assert ACTIVE.search(cell) is None, cell
    assert INVISIBLE.search(cell) is None, cell
    assert cell == cell.strip()


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(ATTACKS + TEMPLATES),
    st.sampled_from(["Acme ", "", "Congrats on the Series A, "]),
    st.sampled_from(["", " Inc.", "\n\u202e"]),
)
def test_no_attack_string_leaves_in_a_cell(payload: str, before: str, after: str) -> None:
    cell = export_cell(before + payload + after)
    if isinstance(cell, CellRefusal):
        assert cell.reason in {"html_in_text", "template_in_text"}
    else:
        assert_clean(cell)


@pytest.mark.parametrize("payload", TEMPLATES)
def test_every_template_marker_is_refused(payload: str) -> None:
    cell = export_cell(f"Congrats on the Series A {payload}")
    assert isinstance(cell, CellRefusal), payload


@given(st.text())
def test_any_text_is_clean_or_refused_and_cleaning_twice_changes_nothing(text: str) -> None:
    cell = export_cell(text)
    if isinstance(cell, str):
        assert INVISIBLE.search(cell) is None
        assert export_cell(cell) == cell


@pytest.mark.parametrize(
    "value",
    [
        "joram.de_vries@dymaxa.com",
        "https://acme.example/c/q4-pipeline?wm=abc__def-ghi",
        "Mid-size SaaS teams cut SDR ramp time from 90 to 45 days (50%)",
        "Dymaxa B.V.",
        "Monday.com",
        "Ørsted A/S",
        "R&D lead",
        "2026-11-26",
    ],
)
def test_ordinary_cells_pass_unchanged(value: str) -> None:
    assert export_cell(value) == value


def test_control_characters_become_spaces_and_missing_is_empty() -> None:
    assert export_cell("Head of\r\nSales\t\x00 \u202eEMEA") == "Head of Sales EMEA"
    assert export_cell(None) == "" and export_cell("  ") == ""


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(ATTACKS + TEMPLATES + ["=cmd|' /C calc'!A0", "@SUM(1)", "-2+3"]), min_size=3))
def test_the_csv_writer_is_the_last_choke_point(payloads: list[str]) -> None:
    """Even a row that never went through the row builder leaves clean, one cell per column."""
    header = tuple(f"c{i}" for i in range(len(payloads)))
    out = io.StringIO()
    write_export(header, [dict(zip(header, payloads, strict=True))], out, "csv")
    [row] = list(csv.DictReader(io.StringIO(out.getvalue(), newline="")))
    for cell in row.values():
        assert_clean(cell)
        assert spreadsheet_safe(cell) == cell  # nothing a spreadsheet would run


GATE_TOKENS = [
    *"onONx =\"'`<>&\\{}%[]()$#.;_/:\t\u00e9",
    "onclick",
    "OnLoad",
    "document.",
    "Window.",
    "location.",
    "alert(",
    "https://a.example/?x=1",
    "&amp;",
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(GATE_TOKENS), max_size=12).map("".join))
def test_the_quick_gate_never_hides_what_the_full_scan_finds(text: str) -> None:
    """Cells skip the full scan when the gate says nothing can be there: it must be right."""
    from welcomemat.security import markup_scan

    if not markup_scan._may_be_active(text):
        assert markup_scan._html_at(text) < 0, text
        assert markup_scan._script_at(text.lower(), "." in text, "(" in text) < 0, text
        assert markup_scan.find_template_marker(text) is None, text
