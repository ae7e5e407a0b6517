"""A theme's `base.html` as the renderer runs it, and the template rules that need Jinja2 to check.

A themed campaign's pages come from a sandboxed Jinja2 environment whose loader tries the
theme first and the repository's `templates/` second (Datasette's generic-then-specific):
the theme holds one template, `base.html`, so `landing.html`, `continuation.html` and
`_zone.html` are always the renderer's own, and every zone keeps `data-wm-zone`,
`data-wm-rung` and the class that reserves its space. Autoescape is on, undefined names are
errors, and the sandbox keeps a marketer-provided template away from Python internals.

Beyond the file rules (`welcomemat.theme_rules`), a theme's template may use only:

- `{% block %}` and `{% if %}` (with comparisons), and `{{ variable }}` for the page's
  `THEME_VARIABLES`: no `csp_nonce` (no scripts in a theme), no zones (the content block
  renders them), no calls, attribute access, loops, assignments or other templates;
- the filters in `THEME_FILTERS` (none of them marks text safe or builds markup);
- `{{ }}` in text or inside a quoted attribute value, never in a tag or attribute name;
- URLs (`href`, `src`, …) that are `{{ stylesheet }}` (the renderer's stylesheet, which
  holds each zone's reserved space), `{{ theme_url }}` and a file of the theme, a `#fragment`,
  or, on a link, an https address the campaign's URL gate allows;
- no element that loads, frames, submits or redirects (`iframe`, `object`, `form`,
  `base`, `meta http-equiv`, …).

`check_rendered_page` looks at a page rendered with the theme: every zone of the page is
there with its data attributes, and the renderer's stylesheet is linked.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from html.parser import HTMLParser
from pathlib import Path

import jinja2
from jinja2 import nodes
from jinja2.sandbox import SandboxedEnvironment

from welcomemat.errors import ContractError
from welcomemat.theme import Theme
from welcomemat.theme_rules import THEME_TEMPLATE
from welcomemat.urlgate import LinkAllowlist, gate_link

__all__ = [
    "THEME_FILTERS",
    "THEME_VARIABLES",
    "check_rendered_page",
    "check_theme_template",
    "theme_environment",
]

# What a page's context offers a theme (`server.render.PageRenderer` passes more, for its own
# templates: the zones and the CSP nonce, which a theme has no use for).
THEME_VARIABLES = frozenset({"arm", "campaign_id", "page_id", "stylesheet", "theme_url", "title", "view_id"})
THEME_FILTERS = frozenset(
    {"capitalize", "d", "default", "e", "escape", "lower", "replace", "title", "trim", "truncate", "upper"}
)
_NODES = (
    nodes.Template,
    nodes.Output,
    nodes.TemplateData,
    nodes.Block,
    nodes.If,
    nodes.Name,
    nodes.Const,
    nodes.Filter,
    nodes.Keyword,
    nodes.Compare,
    nodes.Operand,
    nodes.And,
    nodes.Or,
    nodes.Not,
    nodes.CondExpr,
)
_TAG_NAMES: Mapping[type[nodes.Node], str] = {
    nodes.For: "{% for %}",
    nodes.Macro: "{% macro %}",
    nodes.CallBlock: "{% call %}",
    nodes.FilterBlock: "{% filter %}",
    nodes.With: "{% with %}",
    nodes.Assign: "{% set %}",
    nodes.AssignBlock: "{% set %}",
    nodes.Extends: "{% extends %}",
    nodes.Include: "{% include %}",
    nodes.Import: "{% import %}",
    nodes.FromImport: "{% from %}",
    nodes.ScopedEvalContextModifier: "{% autoescape %}",
    nodes.EvalContextModifier: "{% autoescape %}",
    nodes.Call: "a call ( )",
    nodes.Getattr: "attribute access (x.y)",
    nodes.Getitem: "item access (x[y])",
    nodes.Test: "a test (is ...)",
}
_CONTENT_BLOCK = "content"
# Elements that load, frame, submit or redirect: a theme is a frame of text, links and images.
_FORBIDDEN_ELEMENTS = frozenset(
    {"script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "form", "portal"}
)
_LINK_RELS = frozenset({"stylesheet", "icon", "shortcut icon", "apple-touch-icon"})
_URL_ATTRIBUTES = frozenset(
    "href src srcset imagesrcset action formaction poster data xlink:href background cite ping manifest "
    "longdesc codebase archive".split()
)
# Stands for one `{{ … }}` while the template's HTML is read: letters and digits only, so
# one inside a tag name reads as part of that name.
_PLACEHOLDER = "wmthemeexpr"
_PLACEHOLDER_RE = re.compile(_PLACEHOLDER + r"(\d+)x")


def theme_environment(theme: Theme, directory: Path) -> SandboxedEnvironment:
    """The environment a themed campaign's pages render in: the theme's base.html, then `directory`."""
    return SandboxedEnvironment(
        loader=jinja2.ChoiceLoader(
            [jinja2.DictLoader({THEME_TEMPLATE: theme.base_html}), jinja2.FileSystemLoader(directory)]
        ),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _refuse(where: Path | str, line: int | None, message: str) -> ContractError:
    return ContractError(message, file=Path(where) / THEME_TEMPLATE, line=line)


def check_theme_template(
    theme: Theme, env: jinja2.Environment, allowlist: LinkAllowlist, *, where: Path | str
) -> None:
    """Raise ContractError (the theme's base.html, line, rule) for the first rule it breaks.

    `where` is the theme folder as the person who wrote it knows it.
    """
    try:
        tree = env.parse(theme.base_html)
    except jinja2.TemplateSyntaxError as exc:
        raise _refuse(where, exc.lineno, f"is not a valid template: {exc.message}") from None
    _check_nodes(tree, where)
    _check_html(theme, env, allowlist, where)


def _check_nodes(tree: nodes.Template, where: Path | str) -> None:
    for node in tree.find_all(nodes.Node):
        line = getattr(node, "lineno", None)
        if not isinstance(node, _NODES):
            what = _TAG_NAMES.get(type(node), type(node).__name__)
            raise _refuse(
                where,
                line,
                f"uses {what}, which themes may not (a theme has {{% block %}}, {{% if %}}, "
                "{{ variables }} and a few filters)",
            )
        if isinstance(node, nodes.Name) and node.name not in THEME_VARIABLES:
            why = (
                "no scripts in a theme"
                if node.name == "csp_nonce"
                else f"themes have {', '.join(sorted(THEME_VARIABLES))}"
            )
            raise _refuse(where, line, f"uses {node.name}, which themes may not ({why})")
        if isinstance(node, nodes.Filter) and node.name not in THEME_FILTERS:
            why = "" if node.name == "safe" else f" (themes may use {', '.join(sorted(THEME_FILTERS))})"
            raise _refuse(where, line, f"uses |{node.name}, which themes may not{why}")
        if isinstance(node, nodes.If) and any(b.name == _CONTENT_BLOCK for b in node.find_all(nodes.Block)):
            raise _refuse(
                where, line, "puts {% block content %} inside {% if %}: the page's zones must always render"
            )
    if not any(b.name == _CONTENT_BLOCK for b in tree.find_all(nodes.Block)):
        raise _refuse(where, None, "has no {% block content %}{% endblock %}, where the page's zones go")


def _skeleton(source: str, env: jinja2.Environment) -> tuple[str, list[str | None]]:
    """The template's HTML with each `{{ … }}` replaced by a placeholder and `{% %}`/`{# #}` removed.

    Lines stay where they were, so the HTML reader's line numbers are the template's. The
    list holds, per placeholder, the variable's name when the expression is just a name.
    """
    out: list[str] = []
    expressions: list[str | None] = []
    line = 1
    inside: list[tuple[str, str]] | None = None
    for lineno, kind, value in env.lex(source):
        if inside is not None:
            if kind == "variable_end":
                parts = [t for t in inside if t[0] != "whitespace"]
                expressions.append(parts[0][1] if len(parts) == 1 and parts[0][0] == "name" else None)
                out.append(f"{_PLACEHOLDER}{len(expressions) - 1}x")
                inside = None
            else:
                inside.append((kind, value))
            continue
        if lineno > line:
            out.append("\n" * (lineno - line))
            line = lineno
        if kind == "data":
            out.append(value)
            line += value.count("\n")
        elif kind == "variable_begin":
            inside = []
    return "".join(out), expressions


class _TemplateHtml(HTMLParser):
    """Reads a template skeleton; `problems` collects (line, message), first in the file first."""

    def __init__(
        self, expressions: list[str | None], files: Collection[str], allowlist: LinkAllowlist
    ) -> None:
        super().__init__(convert_charrefs=True)
        self.expressions = expressions
        self.files = files
        self.allowlist = allowlist
        self.problems: list[tuple[int, str]] = []

    def shown(self, value: str) -> str:
        """A skeleton value as the template writes it."""
        return _PLACEHOLDER_RE.sub(lambda m: "{{ %s }}" % (self.expressions[int(m.group(1))] or "…"), value)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, attrs)

    def _element(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        line = self.getpos()[0]
        raw = self.get_starttag_text() or ""
        if _PLACEHOLDER in tag or any(_PLACEHOLDER in name for name, _ in attrs):
            self.problems.append(
                (line, "builds a tag or attribute name from {{ }}: values go in text or quoted attributes")
            )
            return
        if re.search(r"=\s*" + _PLACEHOLDER, raw):
            self.problems.append((line, "has {{ }} in an unquoted attribute value: quote it"))
        if tag in _FORBIDDEN_ELEMENTS:
            self.problems.append((line, f"has <{tag}>, which themes may not"))
            return
        values = {name: value or "" for name, value in attrs}
        if tag == "meta" and "http-equiv" in values:
            self.problems.append((line, "has <meta http-equiv>, which themes may not"))
        if tag == "link" and values.get("rel", "").strip().lower() not in _LINK_RELS:
            rels = ", ".join(sorted(_LINK_RELS))
            self.problems.append((line, f"has <link rel={values.get('rel', '')!r}>: themes link {rels} only"))
        for name, value in values.items():
            if name in _URL_ATTRIBUTES:
                problem = self._url_problem(tag, name, value)
                if problem is not None:
                    self.problems.append((line, problem))

    def _url_problem(self, tag: str, name: str, value: str) -> str | None:
        if name in ("srcset", "imagesrcset"):
            return f"has {name}, which themes may not: use src with one file of the theme"
        first = _PLACEHOLDER_RE.match(value)
        if first is not None:
            variable = self.expressions[int(first.group(1))]
            rest = value[first.end() :]
            if variable == "stylesheet" and not rest:
                return None
            if variable == "theme_url" and rest in self.files:
                return None
        elif _PLACEHOLDER not in value:
            if value.startswith("#"):
                return None
            if tag in ("a", "area") and name == "href":
                decision = gate_link(value, self.allowlist)
                if decision.allowed:
                    return None
                return f'links to "{value}", which the campaign\'s URL gate refuses ({decision.reason})'
        return (
            f'has {name}="{self.shown(value)}": a theme\'s URLs are {{{{ stylesheet }}}}, '
            "{{ theme_url }} followed by a file of the theme, a #fragment, or (on a link) an https "
            "address on the campaign's link_allowlist"
        )


def _check_html(theme: Theme, env: jinja2.Environment, allowlist: LinkAllowlist, where: Path | str) -> None:
    skeleton, expressions = _skeleton(theme.base_html, env)
    reader = _TemplateHtml(expressions, frozenset(theme.files), allowlist)
    reader.feed(skeleton)
    reader.close()
    if reader.problems:
        line, message = min(reader.problems)
        raise _refuse(where, line, message)


class _PageHtml(HTMLParser):
    """A rendered page's zone elements, stylesheet links and anything a theme may not add."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.zones: dict[str, str] = {}  # zone id -> rung
        self.stylesheets: list[str] = []
        self.forbidden: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if "data-wm-zone" in values:
            self.zones[values["data-wm-zone"]] = values.get("data-wm-rung", "")
        if tag == "link" and values.get("rel", "").lower() == "stylesheet":
            self.stylesheets.append(values.get("href", ""))
        if tag in _FORBIDDEN_ELEMENTS or any(n.startswith("on") or n == "style" for n in values):
            self.forbidden.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)


def check_rendered_page(
    html: str, page_id: str, zone_ids: Iterable[str], stylesheet: str, *, where: Path | str
) -> None:
    """Raise ContractError unless the page shows every zone (with its rung) and links `stylesheet`."""
    page = _PageHtml()
    page.feed(html)
    page.close()
    for zone_id in zone_ids:
        if not page.zones.get(zone_id):
            raise _refuse(
                where,
                None,
                f"the {page_id} page renders without its zone {zone_id!r} (data-wm-zone, data-wm-rung): "
                "render {% block content %}{% endblock %} unconditionally",
            )
    if stylesheet not in page.stylesheets:
        raise _refuse(
            where,
            None,
            "does not link the renderer's stylesheet: keep "
            '<link rel="stylesheet" href="{{ stylesheet }}"> (it reserves each zone\'s space)',
        )
    if page.forbidden:
        raise _refuse(
            where, None, f"renders a <{page.forbidden[0]}> a theme may not have (script, style, handler)"
        )
