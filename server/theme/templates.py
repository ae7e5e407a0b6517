"""A theme's `base.html` as the renderer runs it, and the template rules that need Jinja2 to check.

A themed campaign's pages come from a sandboxed Jinja2 environment whose loader tries the
theme first and the repository's `templates/` second (Datasette's generic-then-specific):
the theme holds one template, `base.html`, so `landing.html`, `continuation.html` and
`_zone.html` are always the renderer's own, and every zone keeps `data-wm-zone`,
`data-wm-rung` and the class that reserves its space. Autoescape is on, undefined names are
errors, and the sandbox keeps a marketer-provided template away from Python internals.

Beyond the file rules (`welcomemat.theme.rules`), a theme's template may use only:

- `{% block %}` and `{% if %}` (with comparisons), and `{{ variable }}` for the page's
  `THEME_VARIABLES`: no `csp_nonce` (no scripts in a theme), no zones (the content block
  renders them), no calls, attribute access, loops, assignments or other templates;
- the filters in `THEME_FILTERS` (none of them marks text safe or builds markup);
- `{{ }}` in text or inside a quoted attribute value, never in a tag or attribute name;
- URLs (`href`, `src`, …) that are `{{ stylesheet }}` (the renderer's stylesheet, which
  holds each zone's reserved space), `{{ theme_url }}` and a file of the theme, a `#fragment`,
  or, on a link, an https address the campaign's URL gate allows;
- `{{ view_id }}` only on its own (its value is set per visit, after the checks ran);
- HTML read as a browser reads it (`server.theme.html_check`, html5lib's WHATWG tokenizer): no
  comments, CDATA, processing instructions or parse errors; only the elements and attributes
  of its allowlists (no element that runs, loads, frames, submits or redirects, no handler,
  no `style`); `<meta>` only as `<meta charset="utf-8">` or `<meta name content>` named
  viewport, description, theme-color, color-scheme, robots or author (never `http-equiv`,
  never `referrer`).

The theme environment's filters are bounded (`server.theme.output`): none returns more than
a themed page may hold.

`check_rendered_page` reads a page rendered with the theme by the same rules (so markup a
`{% if %}` shows only to some visitors is caught on their page), and checks that every zone
of the page is there with its data attributes and the renderer's stylesheet is linked.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

import jinja2
from jinja2 import nodes
from jinja2.sandbox import SandboxedEnvironment

from server.theme.html_check import UrlRule, read_html
from server.theme.output import THEME_FILTERS, bounded_filters
from welcomemat.errors import ContractError
from welcomemat.security.urlgate import LinkAllowlist, gate_link
from welcomemat.theme.folder import Theme
from welcomemat.theme.rules import THEME_TEMPLATE

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
# Stands for one `{{ … }}` while the template's HTML is read: letters and digits only, so
# one inside a tag name reads as part of that name.
_PLACEHOLDER = "wmthemeexpr"
_PLACEHOLDER_RE = re.compile(_PLACEHOLDER + r"(\d+)x")


def theme_environment(theme: Theme, directory: Path) -> SandboxedEnvironment:
    """The environment a themed campaign's pages render in: the theme's base.html, then `directory`."""
    env = SandboxedEnvironment(
        loader=jinja2.ChoiceLoader(
            [jinja2.DictLoader({THEME_TEMPLATE: theme.base_html}), jinja2.FileSystemLoader(directory)]
        ),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # Filters that can make text longer stop at the page limit instead of building it.
    env.filters.update(bounded_filters())
    return env


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
    # `view_id` is a placeholder while the page renders (filled in per request, random per
    # process): only `{{ view_id }}` on its own, so no check sees a page other than the served one.
    bare = {id(n) for out in tree.find_all(nodes.Output) for n in out.nodes if isinstance(n, nodes.Name)}
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
        if isinstance(node, nodes.Name) and node.name == "view_id" and id(node) not in bare:
            raise _refuse(
                where,
                line,
                "uses view_id in an expression: only {{ view_id }} on its own (it is set per visit)",
            )
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


def _template_url_rule(
    expressions: list[str | None], files: Collection[str], allowlist: LinkAllowlist
) -> UrlRule:
    """Where a template's URL may point: `{{ stylesheet }}`, `{{ theme_url }}file`, #x, an allowed link."""

    def shown(value: str) -> str:
        return _PLACEHOLDER_RE.sub(lambda m: "{{ %s }}" % (expressions[int(m.group(1))] or "…"), value)

    def rule(tag: str, name: str, value: str) -> str | None:
        first = _PLACEHOLDER_RE.match(value)
        if first is not None:
            variable = expressions[int(first.group(1))]
            rest = value[first.end() :]
            if variable == "stylesheet" and not rest:
                return None
            if variable == "theme_url" and rest in files:
                return None
        elif _PLACEHOLDER not in value:
            if value.startswith("#"):
                return None
            if tag == "a" and name == "href":
                decision = gate_link(value, allowlist)
                if decision.allowed:
                    return None
                return f'links to "{value}", which the campaign\'s URL gate refuses ({decision.reason})'
        return (
            f'has {name}="{shown(value)}": a theme\'s URLs are {{{{ stylesheet }}}}, '
            "{{ theme_url }} followed by a file of the theme, a #fragment, or (on a link) an https "
            "address on the campaign's link_allowlist"
        )

    return rule


def _check_html(theme: Theme, env: jinja2.Environment, allowlist: LinkAllowlist, where: Path | str) -> None:
    skeleton, expressions = _skeleton(theme.base_html, env)
    rule = _template_url_rule(expressions, frozenset(theme.files), allowlist)
    reading = read_html(skeleton, rule, renderer_page=False)
    problems: list[tuple[int, str]] = []  # these first: on the same line, they say more
    for line, raw, tag, attrs in reading.start_tags:
        if _PLACEHOLDER in tag or any(_PLACEHOLDER in name for name in attrs):
            problems.append(
                (line, "builds a tag or attribute name from {{ }}: values go in text or quoted attributes")
            )
        elif re.search(r"=[ \t\n\f]*" + _PLACEHOLDER, raw):
            problems.append((line, "has {{ }} in an unquoted attribute value: quote it"))
    problems.extend(reading.problems)
    if problems:
        line, message = min(problems, key=lambda p: p[0])
        raise _refuse(where, line, message)


def _page_url_rule(allowlist: LinkAllowlist, assets: Collection[str]) -> UrlRule:
    """Where a served page's URL may point: the stylesheet or a theme file, #x, a link the gate allows."""

    def rule(tag: str, name: str, value: str) -> str | None:
        if value in assets or value.startswith("#"):
            return None
        if tag == "a" and name == "href":
            decision = gate_link(value, allowlist)
            if decision.allowed:
                return None
            return f'renders a link to "{value}", which the campaign\'s URL gate refuses ({decision.reason})'
        return (
            f'renders {name}="{value}", which is neither the renderer\'s stylesheet nor a file of the theme'
        )

    return rule


def check_rendered_page(
    html: str,
    page_id: str,
    zone_ids: Iterable[str],
    stylesheet: str,
    *,
    where: Path | str,
    allowlist: LinkAllowlist,
    assets: Collection[str] = (),
) -> None:
    """Raise ContractError unless the page, as a browser reads it, keeps the theme rules.

    Every zone is there (with its rung), `stylesheet` is linked, and nothing breaks what the
    template check refuses (`server.theme.html_check`): it runs on what a render produced, so
    markup a `{% if %}` shows only to some visitors is read as they would get it. `assets`:
    the URLs the page may load (the stylesheet, the theme's files under its theme URL).
    """
    reading = read_html(html, _page_url_rule(allowlist, {stylesheet, *assets}), renderer_page=True)
    first = reading.first()
    if first is not None:
        raise _refuse(where, None, f"the {page_id} page as rendered (its line {first[0]}) {first[1]}")
    for zone_id in zone_ids:
        if not reading.zones.get(zone_id):
            raise _refuse(
                where,
                None,
                f"the {page_id} page renders without its zone {zone_id!r} (data-wm-zone, data-wm-rung): "
                "render {% block content %}{% endblock %} unconditionally",
            )
    if stylesheet not in reading.stylesheets:
        raise _refuse(
            where,
            None,
            "does not link the renderer's stylesheet: keep "
            '<link rel="stylesheet" href="{{ stylesheet }}"> (it reserves each zone\'s space)',
        )
