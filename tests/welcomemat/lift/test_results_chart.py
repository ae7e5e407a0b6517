"""The results page's charts and CSV: any label stays text, any count is drawn, CSV cells stay values."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
from datetime import date, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from welcomemat.arms import Arm
from welcomemat.lift.daily import DailyCounts
from welcomemat.lift.results_chart import DAILY_MEASURES, render_daily_chart
from welcomemat.lift.svg import svg_text
from welcomemat.spreadsheet import SPREADSHEET_TRIGGERS, spreadsheet_safe

SVG = "{http://www.w3.org/2000/svg}"
_XML_LEGAL = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufffe\uffff")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=_XML_LEGAL, max_size=60))
def test_any_text_in_a_chart_is_text_and_reads_back_as_written(content: str) -> None:
    element = ET.fromstring(f'<svg xmlns="http://www.w3.org/2000/svg">{svg_text(1, 2, content)}</svg>')
    [text] = element.findall(f"{SVG}text")
    assert len(list(text)) == 0  # no element came out of the content
    legal = "".join(c if c >= " " or c in "\t\n\r" else "\ufffd" for c in content)
    # an XML reader ends lines with \n, whatever they were written with (XML 1.0, 2.11)
    assert (text.text or "") == legal.replace("\r\n", "\n").replace("\r", "\n")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=30),
    st.sampled_from(sorted(DAILY_MEASURES)),
)
def test_a_daily_chart_draws_a_point_per_day_per_group(counts: list[int], measure: str) -> None:
    first = date(2026, 11, 1)
    daily = [
        DailyCounts(
            day=first + timedelta(days=i),
            arm=arm,
            variant=variant,
            visits=n,
            reached_accounts=n,
            cta_clicks=n,
            conversions=n,
        )
        for arm, variant in ((Arm.PERSONAL, None), (Arm.HOLDOUT, None), (Arm.PERSONAL, "direct"))
        for i, n in enumerate(counts)
    ]
    root = ET.fromstring(render_daily_chart(daily, measure))
    lines = root.findall(f"{SVG}polyline")
    assert len(lines) == 3
    for line in lines:
        points = line.get("points", "").split()
        assert len(points) == len(counts)
        ys = [float(p.split(",")[1]) for p in points]
        # the highest count is drawn highest (smallest y); counts closer than the chart's
        # resolution (9,757 and 9,759 on a 10,000 scale) may share its height
        assert ys[counts.index(max(counts))] == min(ys)


@given(st.text(max_size=40))
def test_a_csv_text_cell_never_starts_a_formula_and_reads_back(cell: str) -> None:
    safe = spreadsheet_safe(cell)
    assert not safe.startswith(SPREADSHEET_TRIGGERS)
    out = io.StringIO()
    csv.writer(out).writerow([safe, "-0.25"])
    assert next(csv.reader(io.StringIO(out.getvalue()))) == [safe, "-0.25"]
