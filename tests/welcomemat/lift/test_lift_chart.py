"""The lift chart: a well-formed SVG, bars and whiskers where the rates are, no style, text escaped."""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.welcomemat.lift.test_lift import population
from welcomemat.arms import Arm
from welcomemat.lift.chart import chart_data_uri, render_lift_chart
from welcomemat.lift.comparison import AccountOutcome, LiftReport, Metric, build_lift_report

SVG = "{http://www.w3.org/2000/svg}"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def report(outcomes: list[AccountOutcome]) -> LiftReport:
    return build_lift_report(
        outcomes, tenant="acme", campaign="q4-pipeline", holdout_fraction=0.1, generated_at=NOW
    )


def bars(svg: str) -> list[ET.Element]:
    return ET.fromstring(svg).findall(f".//{SVG}rect[{SVG}title]")


def test_one_bar_per_arm_and_metric_with_lengths_in_proportion() -> None:
    chart = render_lift_chart(
        report(
            population(Arm.PERSONAL, 400, 200, 60, 20, "p") + population(Arm.HOLDOUT, 400, 100, 30, 10, "h")
        )
    )
    found = bars(chart)
    assert len(found) == 2 * len(Metric)
    widths = {
        b.findtext(f"{SVG}title", "").split(":")[0] + str(i // 2): float(b.get("width", "0"))
        for i, b in enumerate(found)
    }
    # per account assigned: reach 50% vs 25%; CTA 15% vs 7.5%; conversion 5% vs 2.5%: personal bars
    # twice the holdout's
    for i in range(len(Metric)):
        assert abs(widths[f"personal{i}"] - 2 * widths[f"holdout{i}"]) < 0.2
    titles = [b.findtext(f"{SVG}title", "") for b in found]
    assert titles[0] == "personal: 50.0% (200/400), interval 45.1% to 54.9%"


def test_no_style_no_script_so_it_renders_under_the_csp() -> None:
    chart = render_lift_chart(report(population(Arm.PERSONAL, 50, 20, 5, 1, "p")))
    root = ET.fromstring(chart)
    for element in root.iter():
        assert element.tag not in (f"{SVG}style", f"{SVG}script", f"{SVG}foreignObject")
        assert "style" not in element.attrib
        assert not any(name.startswith("on") for name in element.attrib)


def test_an_arm_without_data_says_so_instead_of_drawing_a_bar() -> None:
    chart = render_lift_chart(report(population(Arm.PERSONAL, 50, 20, 5, 1, "p")))
    assert len(bars(chart)) == len(Metric)  # holdout is empty: no bars for it
    assert chart.count(">no data</text>") == len(Metric)


def titled(tenant: str) -> str:
    hostile = report(population(Arm.PERSONAL, 10, 5, 1, 0, "p")).model_copy(
        update={"tenant": tenant, "campaign": "\"&amp;'>"}
    )
    chart = render_lift_chart(hostile)
    assert "<script>" not in chart
    return ET.fromstring(chart).findtext(f"{SVG}title", "")


@settings(max_examples=50)
@given(st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=40))
def test_every_text_is_escaped(name: str) -> None:
    # what a browser reads back is exactly the text, whatever markup it holds
    assert titled(f"<script>{name}</script>").startswith(f"Lift, <script>{name}</script>/\"&amp;'>:")


def test_characters_xml_cannot_hold_become_replacement_characters() -> None:
    assert titled("a\x00b\x1fc\ud800d").startswith("Lift, a\ufffdb\ufffdc\ufffdd/")


def test_data_uri_carries_the_same_svg() -> None:
    r = report(population(Arm.PERSONAL, 40, 20, 5, 1, "p") + population(Arm.HOLDOUT, 40, 20, 2, 1, "h"))
    uri = chart_data_uri(r)
    assert uri.startswith("data:image/svg+xml;base64,")
    assert base64.b64decode(uri.split(",", 1)[1]).decode() == render_lift_chart(r)
