"""The results page's daily series as SVG line charts: one chart per count, a line per group.

Drawn from numbers only with `welcomemat.lift.svg`'s pieces (presentation attributes, every text
escaped by the one escaper); the page shows each as an `<img>` with a `data:` URI, so it
works without JavaScript and nothing in it is parsed as the page's HTML.
"""

from __future__ import annotations

from collections.abc import Sequence

from welcomemat.arms import Arm
from welcomemat.lift.daily import DailyCounts
from welcomemat.lift.svg import INK, svg_escaped, svg_num, svg_text

__all__ = ["DAILY_MEASURES", "render_daily_chart"]

# The counts charted, and their titles.
DAILY_MEASURES = {
    "visits": "Visits per day",
    "reached_accounts": "Reached accounts per day",
    "cta_clicks": "CTA clicks per day",
    "conversions": "Conversions per day",
}
_W, _H = 720, 240
_LEFT, _RIGHT, _TOP, _BOTTOM = 48, 150, 34, 30
_GRID = "#d8dbe0"
# Arms first, then variants: distinct, colour-blind-safe (Okabe-Ito) hues.
_COLOURS = ("#2f6f4f", "#8a8f98", "#0072b2", "#e69f00", "#cc79a7")


def _label(d: DailyCounts) -> str:
    return d.arm.value if d.variant is None else f"{Arm.PERSONAL.value}: {d.variant}"


def render_daily_chart(daily: Sequence[DailyCounts], measure: str) -> str:
    """One measure of the series (`DAILY_MEASURES`) as a standalone SVG document."""
    title = DAILY_MEASURES[measure]
    lines: dict[str, list[tuple[str, int]]] = {}
    for d in daily:
        lines.setdefault(_label(d), []).append((d.day.isoformat(), int(getattr(d, measure))))
    days = sorted({d.day.isoformat() for d in daily})
    top = max([1] + [v for points in lines.values() for _, v in points])
    width, height = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def x(i: int) -> float:
        return _LEFT + (width * i / (len(days) - 1) if len(days) > 1 else width / 2)

    def y(value: int) -> float:
        return _TOP + height - height * value / top

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" '
        'role="img" font-family="sans-serif">',
        f"<title>{svg_escaped(title)}</title>",
        f'<rect x="0" y="0" width="{_W}" height="{_H}" fill="#ffffff"/>',
        svg_text(12, 20, title, size=13, weight="bold"),
    ]
    for tick in sorted({0, top // 2, top}):
        parts.append(
            f'<line x1="{_LEFT}" y1="{svg_num(y(tick))}" x2="{_LEFT + width}" y2="{svg_num(y(tick))}" '
            f'stroke="{_GRID}" stroke-width="1"/>'
        )
        parts.append(svg_text(_LEFT - 6, y(tick) + 4, str(tick), anchor="end", size=11))
    if days:
        parts.append(svg_text(x(0), _H - 10, days[0], anchor="start", size=11))
        parts.append(svg_text(x(len(days) - 1), _H - 10, days[-1], anchor="end", size=11))
    for n, (label, points) in enumerate(lines.items()):
        colour = _COLOURS[n % len(_COLOURS)]
        coords = " ".join(f"{svg_num(x(days.index(day)))},{svg_num(y(v))}" for day, v in points)
        parts.append(
            f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2">'
            f"<title>{svg_escaped(f'{label}: {sum(v for _, v in points)} in all')}</title></polyline>"
        )
        ly = _TOP + 16 * n + 6
        parts.append(
            f'<line x1="{_W - _RIGHT + 12}" y1="{ly}" x2="{_W - _RIGHT + 30}" y2="{ly}" '
            f'stroke="{colour}" stroke-width="3"/>'
        )
        parts.append(svg_text(_W - _RIGHT + 36, ly + 4, label, size=11, fill=INK))
    parts.append("</svg>")
    return "\n".join(parts)
