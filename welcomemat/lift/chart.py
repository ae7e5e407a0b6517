"""The lift report as an SVG chart: per metric, a bar per arm with its interval whisker.

Server-rendered from `welcomemat.lift.svg`'s pieces (presentation attributes only, every text
through the one escaper); the admin pages show it as an `<img>` with a `data:` URI.
"""

from __future__ import annotations

import math

from welcomemat.arms import Arm
from welcomemat.lift.comparison import LiftReport, RateEstimate
from welcomemat.lift.svg import INK as _INK
from welcomemat.lift.svg import svg_data_uri, svg_escaped, svg_num, svg_text

__all__ = ["CHART_WIDTH", "chart_data_uri", "render_lift_chart"]

CHART_WIDTH = 720
_LABEL_W = 200  # left column: metric and arm names
_RIGHT_PAD = 90  # room for the value printed after a whisker
_TOP = 40
_GROUP_H = 78
_BAR_H = 20
_BAR_GAP = 8
_AXIS_H = 34
_COLOURS = {Arm.PERSONAL: "#2f6f4f", Arm.HOLDOUT: "#8a8f98"}
_GRID = "#d8dbe0"


def _scale_max(report: LiftReport) -> float:
    """The axis maximum: the highest interval bound, rounded up to a tidy step (at least 5%)."""
    top = max(
        [0.05]
        + [e.high for m in report.metrics for e in (m.variant_rate, m.reference_rate) if e.rate is not None]
    )
    step = 0.05 if top <= 0.5 else 0.1
    return min(1.0, math.ceil(top / step - 1e-9) * step)


def _bar(arm: Arm, estimate: RateEstimate, y: float, x0: float, width: float, top: float) -> list[str]:
    def at(value: float) -> float:
        return x0 + width * min(value, top) / top

    parts = [svg_text(x0 - 10, y + _BAR_H - 6, arm.value, anchor="end")]
    if estimate.rate is None:
        parts.append(svg_text(x0 + 4, y + _BAR_H - 6, "no data", size=11))
        return parts
    label = (
        f"{estimate.rate:.1%} ({estimate.successes}/{estimate.trials}), "
        f"interval {estimate.low:.1%} to {estimate.high:.1%}"
    )
    parts.append(
        f'<rect x="{svg_num(x0)}" y="{svg_num(y)}" width="{svg_num(at(estimate.rate) - x0)}" '
        f'height="{_BAR_H}" '
        f'fill="{_COLOURS[arm]}"><title>{svg_escaped(f"{arm.value}: {label}")}</title></rect>'
    )
    mid = y + _BAR_H / 2
    low, high = at(estimate.low), at(estimate.high)
    parts += [
        f'<line x1="{svg_num(low)}" y1="{svg_num(mid)}" x2="{svg_num(high)}" y2="{svg_num(mid)}" '
        f'stroke="{_INK}" stroke-width="1.5"/>',
        f'<line x1="{svg_num(low)}" y1="{svg_num(y + 4)}" x2="{svg_num(low)}" y2="{svg_num(y + _BAR_H - 4)}" '
        f'stroke="{_INK}" stroke-width="1.5"/>',
        f'<line x1="{svg_num(high)}" y1="{svg_num(y + 4)}" x2="{svg_num(high)}" '
        f'y2="{svg_num(y + _BAR_H - 4)}" '
        f'stroke="{_INK}" stroke-width="1.5"/>',
        svg_text(high + 6, y + _BAR_H - 6, f"{estimate.rate:.1%}", size=11),
    ]
    return parts


def render_lift_chart(report: LiftReport) -> str:
    """The report's rates as a standalone SVG document (UTF-8 text)."""
    height = _TOP + _GROUP_H * len(report.metrics) + _AXIS_H
    x0 = float(_LABEL_W)
    width = float(CHART_WIDTH - _LABEL_W - _RIGHT_PAD)
    top = _scale_max(report)
    title = (
        f"Lift, {report.tenant}/{report.campaign}: personal vs holdout per account assigned, "
        f"{report.confidence:.0%} intervals"
    )
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{CHART_WIDTH}" height="{height}" '
        f'viewBox="0 0 {CHART_WIDTH} {height}" role="img" font-family="sans-serif">',
        f"<title>{svg_escaped(title)}</title>",
        f"<desc>{svg_escaped(' '.join(m.conclusion for m in report.metrics))}</desc>",
        f'<rect x="0" y="0" width="{CHART_WIDTH}" height="{height}" fill="#ffffff"/>',
        svg_text(12, 22, title, size=13, weight="bold"),
    ]
    axis_y = _TOP + _GROUP_H * len(report.metrics)
    ticks = 5
    for i in range(ticks + 1):
        value = top * i / ticks
        x = x0 + width * i / ticks
        parts.append(
            f'<line x1="{svg_num(x)}" y1="{_TOP - 6}" x2="{svg_num(x)}" y2="{axis_y}" '
            f'stroke="{_GRID}" stroke-width="1"/>'
        )
        parts.append(svg_text(x, axis_y + 16, f"{value:.0%}", anchor="middle", size=11))
    for i, metric in enumerate(report.metrics):
        y = _TOP + _GROUP_H * i
        parts.append(svg_text(12, y + 6, metric.label.split(" (")[0], size=12, weight="bold"))
        for j, (arm, estimate) in enumerate(
            ((Arm.PERSONAL, metric.variant_rate), (Arm.HOLDOUT, metric.reference_rate))
        ):
            parts += _bar(arm, estimate, y + 14 + j * (_BAR_H + _BAR_GAP), x0, width, top)
    parts.append("</svg>")
    return "\n".join(parts)


def chart_data_uri(report: LiftReport) -> str:
    """The chart as a `data:image/svg+xml;base64,...` URI for an `<img src>`."""
    return svg_data_uri(render_lift_chart(report))
