"""A sequencer e-mail template filled with an export row, as the sequencer would fill it.

Sequencers (lemlist, Smartlead, Outreach, Apollo) write variables Liquid-style: `{{ name }}`.
The one fallback syntax we support is Liquid's own filter, `{{ name | default: "text" }}`
(single or double quotes): no sequencer documentation we could confirm (docs/outbound.md, "Fallbacks
for empty variables, per sequencer") specifies another, so `{{name|text}}` is refused as an
unknown filter rather than guessed at.

The template is hostile input (an operator's file, or a form body on the admin preview):

- at most `MAX_TEMPLATE_BYTES` of UTF-8, `MAX_TAGS` variables, `MAX_TAG_CHARS` per tag and
  `MAX_FILTERS` filters per tag; tags do not nest (a `{{` inside a tag is an error), and
  Liquid's block tags (`{% ... %}`) are refused: the preview would not show what they do;
- every `{{` must close; a problem is a `TemplateError` naming the line and what is wrong.

Rendering never raises and never emits an unfilled `{{`: a variable the row has no column
for, or whose cell is empty with no default, renders as nothing and is listed as a
`TemplateIssue` (`unknown` / `empty`); a value holding a brace is treated as empty (a cell
that passed the export's choke point holds none). Plain-text templates get values as they
are (an e-mail body is not HTML); an HTML template gets each value through the project's
one escaper (`welcomemat.security.markup.escape`), and its own text untouched.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from welcomemat.errors import InputError
from welcomemat.security.markup import escape

__all__ = [
    "MAX_FILTERS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_TEMPLATE_BYTES",
    "EmailTemplate",
    "IssueKind",
    "RenderedEmail",
    "TemplateError",
    "TemplateIssue",
    "parse_template",
    "read_template",
]

MAX_TEMPLATE_BYTES = 65_536  # an e-mail body; sequencers cap theirs well below this
MAX_TAGS = 500  # variables per template
MAX_TAG_CHARS = 200  # characters between `{{` and `}}`
MAX_FILTERS = 4  # `| default: ...` links per tag

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")
_DEFAULT_RE = re.compile(r"""default\s*:\s*(?:"([^"]*)"|'([^']*)')\s*\Z""")


class TemplateError(InputError):
    """The template cannot be read as one: its size, encoding, or a tag on a line."""


class IssueKind(enum.StrEnum):
    UNKNOWN = "unknown"  # the export has no such column: the sequencer leaves it blank or refuses
    EMPTY = "empty"  # the column is empty for this contact and the tag has no default


@dataclass(frozen=True, slots=True)
class TemplateIssue:
    """A variable this rendering could not fill."""

    line: int
    variable: str
    kind: IssueKind

    def __str__(self) -> str:
        what = "no such export column" if self.kind is IssueKind.UNKNOWN else "empty, and no default"
        return f"line {self.line}: {{{{ {self.variable} }}}}: {what}"


@dataclass(frozen=True, slots=True)
class _Tag:
    line: int
    variable: str
    default: str | None


@dataclass(frozen=True, slots=True)
class RenderedEmail:
    text: str
    issues: tuple[TemplateIssue, ...]


@dataclass(frozen=True, slots=True)
class EmailTemplate:
    """A parsed template: literal text and variable tags, in order."""

    parts: tuple[str | _Tag, ...]
    html: bool

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.variable for p in self.parts if isinstance(p, _Tag)))

    def render(self, row: Mapping[str, str]) -> RenderedEmail:
        """The template filled with `row` (export column -> cell); never raises."""
        out: list[str] = []
        issues: list[TemplateIssue] = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            value = row.get(part.variable)
            if value is None:
                issues.append(TemplateIssue(part.line, part.variable, IssueKind.UNKNOWN))
                value = ""
            elif "{" in value or "}" in value:
                value = ""  # never part of a `{{`; the choke point lets no brace through anyway
            if value:
                out.append(str(escape(value)) if self.html else value)
            elif part.default is not None:
                out.append(part.default)
            elif part.variable in row:
                issues.append(TemplateIssue(part.line, part.variable, IssueKind.EMPTY))
        return RenderedEmail("".join(out), tuple(issues))


def parse_template(text: str, *, html: bool = False, source: str | Path = "template") -> EmailTemplate:
    """Parse a template's text, or raise `TemplateError` naming the line and the problem."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_TEMPLATE_BYTES:
        raise TemplateError(f"the template is larger than {MAX_TEMPLATE_BYTES} bytes", file=source)
    parts: list[str | _Tag] = []
    at = 0
    tags = 0
    while True:
        start = text.find("{{", at)
        block = text.find("{%", at)
        if block != -1 and (start == -1 or block < start):
            raise TemplateError(
                "Liquid block tags ({% ... %}) are not supported by the preview",
                file=source,
                line=_line(text, block),
            )
        if start == -1:
            if at < len(text):
                parts.append(text[at:])
            return EmailTemplate(tuple(parts), html)
        end = text.find("}}", start + 2)
        line = _line(text, start)
        if end == -1:
            raise TemplateError("a `{{` is never closed by `}}`", file=source, line=line)
        tags += 1
        if tags > MAX_TAGS:
            raise TemplateError(f"more than {MAX_TAGS} variables", file=source, line=line)
        if start > at:
            parts.append(text[at:start])
        parts.append(_tag(text[start + 2 : end], line, source))
        at = end + 2


def read_template(path: Path, *, html: bool | None = None) -> EmailTemplate:
    """Read and parse a template file; HTML when `html`, else when its name ends .html/.htm."""
    try:
        size = path.stat().st_size
        if size > MAX_TEMPLATE_BYTES:
            raise TemplateError(f"the template is larger than {MAX_TEMPLATE_BYTES} bytes", file=path)
        raw = path.read_bytes()
    except OSError as exc:
        raise TemplateError(f"cannot read the template: {exc.strerror}", file=path) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise TemplateError("the template is not UTF-8", file=path, line=line) from exc
    is_html = path.suffix.lower() in {".html", ".htm"} if html is None else html
    return parse_template(text, html=is_html, source=path)


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _tag(inner: str, line: int, source: str | Path) -> _Tag:
    if len(inner) > MAX_TAG_CHARS:
        raise TemplateError(f"a tag longer than {MAX_TAG_CHARS} characters", file=source, line=line)
    if "{" in inner or "}" in inner:
        raise TemplateError("tags do not nest: a brace inside `{{ ... }}`", file=source, line=line)
    name, *filters = inner.split("|")
    name = name.strip()
    if not _NAME_RE.match(name):
        raise TemplateError(f"{name!r} is not a variable name", file=source, line=line, field=name or None)
    if len(filters) > MAX_FILTERS:
        raise TemplateError(f"more than {MAX_FILTERS} filters", file=source, line=line, field=name)
    default: str | None = None
    for raw_filter in filters:
        found = _DEFAULT_RE.match(raw_filter.strip())
        if found is None:
            raise TemplateError(
                f'unsupported filter {raw_filter.strip()!r}: only `default: "text"` is',
                file=source,
                line=line,
                field=name,
            )
        text = found.group(1) if found.group(1) is not None else found.group(2)
        default = text if default is None else default  # Liquid: the first default that applies
    return _Tag(line, name, default)
