"""The rules a theme's files keep, checked without Jinja2: names, sizes, and what each file may say.

These run wherever a theme is loaded (`welcomemat validate`, precompute, the renderer's
decode of the stored config), so a theme refused here never reaches a page. The rules on
what a template's `{{ }}` and `{% %}` may do need Jinja2's parser and live with the
renderer (`server.theme.templates`).

- `base.html`: the textual rules every built-in template keeps (no `|safe`, no `Markup(`,
  autoescape never off) plus what a theme may not carry at all: scripts, inline styles,
  event handlers, `javascript:` URLs, other templates pulled in.
- stylesheets, read by a CSS tokenizer as a browser reads them (`welcomemat.theme.css`):
  everything closed (the renderer serves each inside `@layer theme { … }`, and a stray `}`
  would step out of it), no `!important` (it would outrank the renderer's zone rules, which
  hold each zone's reserved space), no `@import`, `url()` only to the theme's own files (the
  page's CSP loads nothing from another origin anyway, so refusing says so at validate time
  instead of leaving a silently unstyled page), and nothing that could hide a zone on a
  selector that can reach one.
- SVG: an image, never a document that acts: no script, no event handler, no foreign
  content, no entity declarations, no reference outside the file.
- PNG, JPEG, GIF, WebP, WOFF2: the bytes start the way their name says they do (they are
  served with `X-Content-Type-Options: nosniff`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePath

from welcomemat.theme.css import custom_properties, stylesheet_problem
from welcomemat.theme.css_hiding import CustomProperties
from welcomemat.theme.frame import ZoneFrame, zone_frame

__all__ = [
    "ASSET_TYPES",
    "MAX_ASSET_BYTES",
    "MAX_FRAME_DEPTH",
    "MAX_TEMPLATE_BYTES",
    "MAX_THEME_BYTES",
    "MAX_THEME_FILES",
    "THEME_TEMPLATE",
    "ThemeProblem",
    "theme_problem",
]

THEME_TEMPLATE = "base.html"
# Every renderer re-reads the campaign config (which carries the theme) on a timer, so the
# theme stays small: logos and stylesheets, not photography.
MAX_THEME_FILES = 16  # base.html and the files it links
MAX_TEMPLATE_BYTES = 32 * 1024  # base.html
MAX_ASSET_BYTES = 128 * 1024  # any one stylesheet, image or font
MAX_THEME_BYTES = 256 * 1024  # everything together
# Elements from <html> down to a zone's text (the renderer's own take about 8): what a stylesheet
# check walks for every selector, so bounded.
MAX_FRAME_DEPTH = 48

# Suffix -> the Content-Type the renderer serves the file with.
ASSET_TYPES: Mapping[str, str] = {
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".woff2": "font/woff2",
}
# A file name, never a path: one flat folder, no leading dot, nothing to traverse.
_ASSET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_MAGIC: Mapping[str, tuple[bytes, ...]] = {
    ".png": (b"\x89PNG\r\n\x1a\n",),
    ".jpg": (b"\xff\xd8\xff",),
    ".jpeg": (b"\xff\xd8\xff",),
    ".gif": (b"GIF87a", b"GIF89a"),
    ".woff2": (b"wOF2",),
}


class ThemeProblem(Exception):
    """A theme file breaks a rule: which file, which line (1-based, when there is one), what rule.

    Not a ValueError, so it passes through pydantic validation untouched (like
    `yamlfile.FieldProblem`) and the loader can still name the file and line.
    """

    def __init__(self, file: str, line: int | None, message: str) -> None:
        self.file = file
        self.line = line
        self.message = message
        super().__init__(f"{file}:{line}: {message}" if line is not None else f"{file}: {message}")


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


# (pattern, message) pairs; the first match in a file is its problem.
_TEMPLATE_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\|\s*safe\b"), "uses |safe, which themes may not"),
    (re.compile(r"\{%-?\s*filter\s+safe\b"), "uses {% filter safe %}, which themes may not"),
    (re.compile(r"\bMarkup\s*\("), "uses Markup(, which themes may not"),
    (re.compile(r"\bautoescape\b", re.IGNORECASE), "mentions autoescape, which is always on in themes"),
    (re.compile(r"\bmark_safe\b|\bsafe_join\b|__html__"), "marks text safe, which themes may not"),
    (
        re.compile(r"\{%-?\s*(?:extends|include|import|from)\b"),
        "pulls in another template, which themes may not: a theme is one file, base.html",
    ),
    (
        re.compile(r"<\s*script\b", re.IGNORECASE),
        "has a <script>, which themes may not: a themed page runs only the renderer's own scripts",
    ),
    (
        re.compile(r"<\s*style\b", re.IGNORECASE),
        "has a <style> element: put styles in a .css file of the theme (the CSP allows no inline styles)",
    ),
    (
        re.compile(r"\sstyle\s*=", re.IGNORECASE),
        "has a style attribute: put styles in a .css file of the theme (the CSP allows no inline styles)",
    ),
    (
        re.compile(r"\son[a-z]+\s*=", re.IGNORECASE),
        "has an event handler attribute (on...=), which themes may not",
    ),
    (re.compile(r"javascript\s*:", re.IGNORECASE), "has a javascript: URL, which themes may not"),
)

_SVG_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"<\s*(?:\w+:)?script\b", re.IGNORECASE),
        "has a <script>: an SVG in a theme is an image only",
    ),
    (
        re.compile(r"<\s*(?:\w+:)?foreignObject\b", re.IGNORECASE),
        "has a <foreignObject>, which theme images may not",
    ),
    (re.compile(r"\son[a-z]+\s*=", re.IGNORECASE), "has an event handler attribute (on...=)"),
    (
        re.compile(r"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE),
        "declares a DOCTYPE or entities, which theme images may not",
    ),
    (re.compile(r"javascript\s*:", re.IGNORECASE), "has a javascript: URL"),
    (
        re.compile(r"@import", re.IGNORECASE),
        "imports a stylesheet: a theme image refers to nothing outside itself",
    ),
    (
        re.compile(r"""[\s:]href\s*=(?!\s*["']?\s*#)""", re.IGNORECASE),
        "links outside the file (href not starting with #): a theme image refers to nothing outside itself",
    ),
    (
        re.compile(r"""url\((?!\s*["']?\s*#)""", re.IGNORECASE),
        "has a url() outside the file: a theme image refers to nothing outside itself",
    ),
)


def _matches(text: str, rules: tuple[tuple[re.Pattern[str], str], ...]) -> list[tuple[int, str]]:
    """(offset, message) of each rule's first match."""
    found = []
    for pattern, message in rules:
        match = pattern.search(text)
        if match is not None:
            found.append((match.start(), message))
    return found


def _earliest(text: str, file: str, found: list[tuple[int, str]]) -> ThemeProblem | None:
    """The problem that comes first in the file (a person fixes files top to bottom)."""
    if not found:
        return None
    offset, message = min(found)
    return ThemeProblem(file, _line(text, offset), message)


@dataclass(frozen=True)
class _Stylesheets:
    """What a theme's stylesheets are checked against: where its zones sit, its custom properties."""

    frame: ZoneFrame
    custom: CustomProperties


def _css_problem(name: str, text: str, names: frozenset[str], sheets: _Stylesheets) -> ThemeProblem | None:
    if sheets.frame.depth > MAX_FRAME_DEPTH:
        return ThemeProblem(
            THEME_TEMPLATE,
            None,
            f"wraps the zones in more than {MAX_FRAME_DEPTH} elements; a frame needs a few",
        )
    found = stylesheet_problem(text, names, sheets.frame, sheets.custom)
    return None if found is None else ThemeProblem(name, found[0], found[1])


def _text(name: str, data: bytes) -> tuple[str, ThemeProblem | None]:
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return "", ThemeProblem(name, None, f"is not UTF-8 ({exc.reason} at byte {exc.start})")


def _asset_problem(
    name: str, data: bytes, names: frozenset[str], sheets: Callable[[], _Stylesheets]
) -> ThemeProblem | None:
    suffix = PurePath(name).suffix.lower()
    if suffix == ".css":
        text, problem = _text(name, data)
        return problem or _css_problem(name, text, names, sheets())
    if suffix == ".svg":
        text, problem = _text(name, data)
        if problem is not None:
            return problem
        if "<svg" not in text:
            return ThemeProblem(name, None, "is not an SVG image (no <svg> element)")
        return _earliest(text, name, _matches(text, _SVG_RULES))
    if suffix == ".webp":
        ok = data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    else:
        ok = data.startswith(_MAGIC[suffix])
    if not ok:
        return ThemeProblem(name, None, f"is not a {suffix[1:].upper()} file (its first bytes say otherwise)")
    return None


def _name_problem(name: str) -> str | None:
    if name.lower().endswith(".html"):
        return (
            f"a theme overrides {THEME_TEMPLATE} only; pages and zone partials stay the renderer's "
            "(they carry data-wm-zone and data-wm-rung)"
        )
    if not _ASSET_NAME.fullmatch(name) or PurePath(name).suffix.lower() not in ASSET_TYPES:
        kinds = ", ".join(sorted(ASSET_TYPES))
        return f"is not a file a theme may hold: {THEME_TEMPLATE} and files named like logo.svg ({kinds})"
    return None


def theme_problem(base_html: str, files: Mapping[str, bytes]) -> ThemeProblem | None:
    """The first rule the theme breaks (file names relative to the theme folder), or None."""
    if 1 + len(files) > MAX_THEME_FILES:
        return ThemeProblem(
            ".", None, f"a theme holds at most {MAX_THEME_FILES} files, this one {1 + len(files)}"
        )
    total = len(base_html.encode("utf-8"))
    if total > MAX_TEMPLATE_BYTES:
        return ThemeProblem(THEME_TEMPLATE, None, f"is {total} bytes; at most {MAX_TEMPLATE_BYTES}")
    names = frozenset(files)
    for name in sorted(files):
        message = _name_problem(name)
        if message is not None:
            return ThemeProblem(name, None, message)
        size = len(files[name])
        if size > MAX_ASSET_BYTES:
            return ThemeProblem(name, None, f"is {size} bytes; a theme file may be at most {MAX_ASSET_BYTES}")
        total += size
    if total > MAX_THEME_BYTES:
        return ThemeProblem(".", None, f"the theme is {total} bytes together; at most {MAX_THEME_BYTES}")
    problem = _earliest(base_html, THEME_TEMPLATE, _matches(base_html, _TEMPLATE_RULES))
    if problem is not None:
        return problem

    @functools.cache
    def sheets() -> _Stylesheets:  # read once, and only when there is a stylesheet
        texts = [files[n].decode("utf-8", "replace") for n in files if n.lower().endswith(".css")]
        return _Stylesheets(zone_frame(base_html), custom_properties(texts))

    for name in sorted(files):
        problem = _asset_problem(name, files[name], names, sheets)
        if problem is not None:
            return problem
    return None
