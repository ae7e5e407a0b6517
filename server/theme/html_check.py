"""A theme's HTML read the way a browser reads it, and the fixed sets of what a theme may use.

Python's `html.parser` and a browser disagree on markup a browser recovers from: `<!-->`
and `--!>` end a comment early in a browser, `<![CDATA[>` is a comment up to the first `>`,
`<img/onerror=…>` has a handler. A check that reads such markup one way while Chromium
reads it another passes a theme that redirects visitors. So both theme checks read HTML
with html5lib's tokenizer, which follows the WHATWG tokenization algorithm browsers
implement, and refuse what a browser might read differently:

- any comment, CDATA section, processing instruction (`<?…>`), markup declaration other
  than `<!doctype html>` (`<!x…>`) and bogus end tag (`</ x>`): a browser reads them all as
  comments that may end where a reader does not expect (notes go in `{# #}`);
- any tokenizer parse error (a browser's recovery from it is where readers disagree);
- an element outside `ELEMENTS` (a frame of text, links and images: nothing that loads,
  frames, submits, redirects or switches the tokenizer into another mode, so the tokenizer's
  reading is the browser's), and foreign content (`<svg>`, `<math>`): an SVG is a file of
  the theme, shown with `<img>`;
- an attribute outside `GLOBAL_ATTRIBUTES`, `data-*` and the element's own set in
  `ELEMENT_ATTRIBUTES`: no event handler (`on…`), no `style`, no `referrerpolicy`, `ping`,
  `srcset`, `hidden`; `data-wm-zone` and `data-wm-rung` only on the renderer's zones;
- a `<meta>` other than `<meta charset="utf-8">` and `<meta name="…" content="…">` with a
  name in `META_NAMES` (viewport, description, theme-color, color-scheme, robots, author):
  never `http-equiv` (refresh, set-cookie, content-security-policy) nor `referrer`;
- a `<link>` whose `rel` is not in `LINK_RELS`.

Where a URL may point is the caller's rule (`UrlRule`): the template check reads `{{ }}`
placeholders, the rendered-page check reads the URLs as served.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from html5lib._tokenizer import HTMLTokenizer
from html5lib.constants import tokenTypes

__all__ = [
    "ELEMENTS",
    "ELEMENT_ATTRIBUTES",
    "GLOBAL_ATTRIBUTES",
    "LINK_RELS",
    "META_NAMES",
    "URL_ATTRIBUTES",
    "ZONE_ATTRIBUTES",
    "HtmlReading",
    "UrlRule",
    "attribute_allowed",
    "read_html",
]

ELEMENTS = frozenset(
    """html head body title meta link header footer main nav section article aside div span p a img
    h1 h2 h3 h4 h5 h6 ul ol li dl dt dd strong em b i u s small br hr blockquote q cite abbr time
    address figure figcaption table thead tbody tfoot tr th td caption colgroup col sup sub mark code
    pre kbd samp var wbr bdi bdo details summary""".split()
)
GLOBAL_ATTRIBUTES = frozenset(
    "class id lang dir title role translate aria-label aria-labelledby aria-describedby aria-current".split()
)
ELEMENT_ATTRIBUTES: Mapping[str, frozenset[str]] = {
    "meta": frozenset({"charset", "name", "content"}),
    "link": frozenset({"rel", "href", "type", "sizes", "media"}),
    "a": frozenset({"href", "rel", "target", "hreflang"}),
    "img": frozenset({"src", "alt", "width", "height", "loading", "decoding"}),
    "td": frozenset({"colspan", "rowspan", "headers"}),
    "th": frozenset({"colspan", "rowspan", "headers", "scope", "abbr"}),
    "col": frozenset({"span"}),
    "colgroup": frozenset({"span"}),
    "ol": frozenset({"start", "reversed", "type"}),
    "li": frozenset({"value"}),
    "time": frozenset({"datetime"}),
    "details": frozenset({"open"}),
}
# The attributes whose value is a URL, among those allowed.
URL_ATTRIBUTES = frozenset({"href", "src"})
META_NAMES = frozenset({"viewport", "description", "theme-color", "color-scheme", "robots", "author"})
LINK_RELS = frozenset({"stylesheet", "icon", "shortcut icon", "apple-touch-icon"})
# Only the renderer's zone elements carry these: a theme faking one would fool the zone check.
ZONE_ATTRIBUTES = frozenset({"data-wm-zone", "data-wm-rung"})
_DATA_ATTRIBUTE = re.compile(r"data-[a-z0-9]+(?:-[a-z0-9]+)*")
# Elements a theme may not have, named in the message (everything outside ELEMENTS is refused).
_LOADS = frozenset(
    "script style iframe frame frameset object embed applet base form portal noscript template svg math "
    "textarea xmp plaintext noembed noframes".split()
)
_AS_COMMENT = ", which a browser reads as a comment ending at the first >; themes have none"
_COMMENT_ERRORS = {
    "expected-dashes-or-doctype": "has a markup declaration (<!…>, CDATA included)" + _AS_COMMENT,
    "expected-tag-name-but-got-question-mark": "has a processing instruction (<?…>)" + _AS_COMMENT,
    "expected-closing-tag-but-got-char": "has a malformed end tag (</ …>)" + _AS_COMMENT,
}
_COMMENT = (
    "has an HTML comment: browsers end comments where other readers do not (<!-->, --!>), so themes "
    "have none; write notes as {# … #}"
)

# (tag, attribute, value) -> a problem, or None when the URL is allowed there.
UrlRule = Callable[[str, str, str], "str | None"]


@dataclass
class HtmlReading:
    """What `read_html` found: problems as (line, message) in file order, and the page's zones."""

    problems: list[tuple[int, str]] = field(default_factory=list)
    zones: dict[str, str] = field(default_factory=dict)  # zone id -> rung
    stylesheets: list[str] = field(default_factory=list)
    # (line, source text, name, attributes) of each start tag, for checks that need the source.
    start_tags: list[tuple[int, str, str, dict[str, str]]] = field(default_factory=list)

    def first(self) -> tuple[int, str] | None:
        """The problem on the earliest line (the first found there), if any."""
        return min(self.problems, key=lambda p: p[0]) if self.problems else None


def attribute_allowed(tag: str, name: str, *, renderer_page: bool) -> bool:
    """Whether `name` may appear on `<tag>` (`renderer_page`: the zone attributes too)."""
    if name in ZONE_ATTRIBUTES:
        return renderer_page
    return (
        name in GLOBAL_ATTRIBUTES
        or name in ELEMENT_ATTRIBUTES.get(tag, ())
        or _DATA_ATTRIBUTE.fullmatch(name) is not None
    )


def read_html(source: str, url_rule: UrlRule, *, renderer_page: bool) -> HtmlReading:
    """Tokenize `source` as a browser would and collect every rule it breaks (with its line)."""
    text = source.replace("\r\n", "\n").replace("\r", "\n")  # as the tokenizer's stream does
    line_starts = [0, *(m.end() for m in re.finditer("\n", text))]
    reading = HtmlReading()
    tokenizer = HTMLTokenizer(text)
    for token in tokenizer:
        kind = token["type"]
        line, column = tokenizer.stream.position()
        if kind == tokenTypes["ParseError"]:
            code = str(token["data"])
            message = _COMMENT_ERRORS.get(code)
            if message is None and "comment" in code:
                message = _COMMENT
            if message is None:
                message = (
                    f"is not clean HTML here (the HTML parser reports {code}): browsers recover from it "
                    "in ways a check cannot follow; fix the markup"
                )
            reading.problems.append((line, message))
        elif kind == tokenTypes["Comment"]:
            reading.problems.append((line, _COMMENT))
        elif kind == tokenTypes["Doctype"]:
            if token["name"] != "html" or token["publicId"] is not None or token["systemId"] is not None:
                reading.problems.append((line, "has a doctype other than <!doctype html>"))
        elif kind == tokenTypes["EndTag"]:
            if token["name"] not in ELEMENTS:
                reading.problems.append((line, _element_problem(token["name"])))
        elif kind in (tokenTypes["StartTag"], tokenTypes["EmptyTag"]):
            end = line_starts[line - 1] + column
            start = text.rfind("<", 0, end)
            start_line = bisect.bisect_right(line_starts, start) if start >= 0 else line
            attrs = {str(k): str(v) for k, v in token["data"].items()}
            reading.start_tags.append((start_line, text[max(start, 0) : end], token["name"], attrs))
            for message in _tag_problems(token["name"], attrs, url_rule, renderer_page=renderer_page):
                reading.problems.append((start_line, message))
            _collect(reading, token["name"], attrs)
            if token["name"] == "title":
                # As a browser's tree builder does (the only allowed element that switches
                # modes): its content is text up to </title>, tags included.
                tokenizer.state = tokenizer.rcdataState
    return reading


def _collect(reading: HtmlReading, tag: str, attrs: Mapping[str, str]) -> None:
    if "data-wm-zone" in attrs:
        reading.zones[attrs["data-wm-zone"]] = attrs.get("data-wm-rung", "")
    if tag == "link" and attrs.get("rel", "").strip().lower() == "stylesheet":
        reading.stylesheets.append(attrs.get("href", ""))


def _element_problem(tag: str) -> str:
    if tag in _LOADS:
        return f"has <{tag}>, which themes may not (nothing that runs, loads, frames, submits or redirects)"
    return f"has <{tag}>, which themes may not: a theme's frame uses {', '.join(sorted(ELEMENTS))}"


def _tag_problems(tag: str, attrs: Mapping[str, str], url_rule: UrlRule, *, renderer_page: bool) -> list[str]:
    if tag not in ELEMENTS:
        return [_element_problem(tag)]
    problems: list[str] = []
    for name, value in attrs.items():
        if tag == "meta" and not name.startswith("on") and name != "style":
            continue  # `_meta_problems` says what a <meta> may be
        if name.startswith("on"):
            problems.append(f"has an event handler attribute ({name}=), which themes may not")
        elif name == "style":
            problems.append(
                "has a style attribute: put styles in a .css file of the theme "
                "(the CSP allows no inline styles)"
            )
        elif name in ZONE_ATTRIBUTES and not renderer_page:
            problems.append(f"has {name}=, which only the renderer's zones carry")
        elif not attribute_allowed(tag, name, renderer_page=renderer_page):
            allowed = sorted(GLOBAL_ATTRIBUTES | ELEMENT_ATTRIBUTES.get(tag, frozenset()))
            problems.append(
                f"has {name}= on <{tag}>, which themes may not (it may have {', '.join(allowed)}, data-*)"
            )
        elif name in URL_ATTRIBUTES:
            problem = url_rule(tag, name, value)
            if problem is not None:
                problems.append(problem)
    if tag == "meta":
        problems.extend(_meta_problems(attrs))
    if tag == "link" and attrs.get("rel", "").strip().lower() not in LINK_RELS:
        rels = ", ".join(sorted(LINK_RELS))
        problems.append(f"has <link rel={attrs.get('rel', '')!r}>: themes link {rels} only")
    return problems


def _meta_problems(attrs: Mapping[str, Any]) -> list[str]:
    names = set(attrs)
    if names == {"charset"} and attrs["charset"].strip().lower() == "utf-8":
        return []
    if names == {"name", "content"} and attrs["name"].lower() in META_NAMES:
        return []
    if "http-equiv" in names:
        what = "<meta http-equiv>"
    elif "name" in names and attrs["name"].lower() in META_NAMES and names - {"name", "content"}:
        what = f"<meta name={attrs['name']!r}> with {', '.join(sorted(names - {'name', 'content'}))}"
    elif "name" in names and attrs["name"].lower() in META_NAMES:
        what = f"<meta name={attrs['name']!r}> without content"
    elif "name" in names:
        what = f"<meta name={attrs['name']!r}>"
    else:
        what = f"<meta {' '.join(sorted(names))}>"
    return [
        f'has {what}, which themes may not: only <meta charset="utf-8"> and <meta name=… content=…> '
        f"named {', '.join(sorted(META_NAMES))} (never http-equiv or referrer)"
    ]
