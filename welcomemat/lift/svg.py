"""The pieces every server-drawn SVG chart is made of: escaped text, numbers, a `data:` URI.

Charts are drawn on the server (no chart library, no script in the browser) with
presentation attributes only (`fill`, `stroke`, `font-size`; never a `style` attribute or a
`<style>` element), so they render under the admin pages' Content-Security-Policy. Every
piece of text goes through `_escaped`: XML-legal characters only, then
`welcomemat.security.markup.escape` (the one escaper). Pages show a chart as an `<img>` with a `data:`
URI (CSP `img-src 'self' data:`), so nothing in it is ever parsed as the page's HTML.
"""

from __future__ import annotations

import base64
import re

from welcomemat.security.markup import escape

__all__ = ["INK", "svg_data_uri", "svg_escaped", "svg_num", "svg_text"]

INK = "#1d2129"
# Characters XML 1.0 does not allow anywhere (C0 controls but tab/LF/CR, surrogates, U+FFFE/F).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def svg_escaped(content: str) -> str:
    """Text for an SVG element or attribute: XML-legal characters only, then the one escaper."""
    return str(escape(_NOT_XML.sub("\ufffd", content)))


def svg_num(value: float) -> str:
    """A coordinate, to a tenth of a pixel."""
    return f"{value:.1f}"


def svg_text(
    x: float,
    y: float,
    content: str,
    *,
    anchor: str = "start",
    size: int = 12,
    weight: str = "",
    fill: str = INK,
) -> str:
    """A `<text>` element holding `content`, escaped."""
    bold = f' font-weight="{weight}"' if weight else ""
    return (
        f'<text x="{svg_num(x)}" y="{svg_num(y)}" text-anchor="{anchor}" font-size="{size}"{bold} '
        f'fill="{fill}">{svg_escaped(content)}</text>'
    )


def svg_data_uri(svg: str) -> str:
    """An SVG document as a `data:image/svg+xml;base64,...` URI for an `<img src>`."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode("ascii")
