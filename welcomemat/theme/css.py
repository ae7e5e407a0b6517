"""A theme stylesheet checked as a browser reads it: tokens from tinycss2 (CSS Syntax Level 3).

Escapes are decoded (`!\\69mportant` is `!important`, `u\\72l(` is `url(`), comments vanish
(`!/**/important` is `!important`), and a string ends where a browser ends it (a newline or
form feed), so the rules see the tokens a browser acts on, never the raw text:

- the file reads cleanly: no string, url, comment, block or function left open, no `}` that
  closes a block never opened (the renderer serves the file inside `@layer theme { … }`, and
  nothing may step out of it);
- no `!important` (it would outrank the renderer's unlayered zone rules), no `@import`, and
  only the at-rules a look needs (`_AT_RULES`);
- every `url()` / `src()`, and every image named by a string in `image-set()`, is a file of
  this theme (the page's CSP loads nothing from elsewhere: refusing says so at validate);
- no script-like features (`expression()`, `-moz-binding`, `behavior`, `javascript:`);
- z-index at most `MAX_THEME_Z_INDEX` (zones are lifted above it), and no declaration that
  could hide a zone on a rule that reaches one (`welcomemat.theme.css_hiding`,
  `welcomemat.theme.frame`), running an animation included (an animation outranks every rule).

The answer is the first problem's line and message; `welcomemat.theme.rules` names the file.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import tinycss2
from tinycss2.ast import (
    AtKeywordToken,
    AtRule,
    Declaration,
    FunctionBlock,
    IdentToken,
    LiteralToken,
    Node,
    ParseError,
    PercentageToken,
    QualifiedRule,
    StringToken,
    URLToken,
)

from welcomemat.theme.css_hiding import CustomProperties, hiding_problem, z_index_problem
from welcomemat.theme.frame import SelectorTest, ZoneFrame

__all__ = ["ALLOWED_AT_RULES", "MAX_NESTING", "custom_properties", "stylesheet_problem"]

ALLOWED_AT_RULES = frozenset(
    {"media", "supports", "font-face", "keyframes", "-webkit-keyframes", "layer", "container"}
)
_KEYFRAMES = frozenset({"keyframes", "-webkit-keyframes"})
MAX_NESTING = 32  # blocks, brackets and functions inside each other: a look needs a handful
# Functions whose string arguments a browser fetches.
_URL_FUNCTIONS = frozenset({"url", "src"})
_IMAGE_FUNCTIONS = frozenset({"image-set", "-webkit-image-set", "image", "cross-fade", "-webkit-cross-fade"})
_SCRIPT_IDENTS = frozenset({"-moz-binding", "behavior", "-ms-behavior"})
# Put after the file when it is tokenized: still at the top level afterwards only if the file
# closed everything it opened.
_END = "\n;wm-end-of-theme-stylesheet"

Problem = tuple[int, str]


def _meaningful(tokens: Sequence[Node]) -> list[Node]:
    return [t for t in tokens if t.type not in ("whitespace", "comment")]


def _walk(tokens: Sequence[Node]) -> Iterator[tuple[Node, Node | None]]:
    """Every token, depth first, with the next meaningful token at its level."""
    meaningful = _meaningful(tokens)
    following = {id(a): b for a, b in zip(meaningful, meaningful[1:], strict=False)}
    for token in tokens:
        yield token, following.get(id(token))
        if isinstance(token, FunctionBlock):
            yield from _walk(token.arguments)
        elif hasattr(token, "content") and isinstance(token.content, list):
            yield from _walk(token.content)


def _parse_error(error: ParseError) -> str:
    if error.kind in ("}", ")", "]"):
        return f"this {error.kind} closes a block that was never opened"
    if error.kind == "bad-url":
        return "a url( is broken (spaces, quotes or brackets inside an unquoted url)"
    if "string" in error.kind:
        return "a string is never closed (a newline or form feed ends it in a browser)"
    return f"does not read as CSS here ({error.message})"


def _url_problem(target: str, names: frozenset[str]) -> str | None:
    if target.strip() in names:
        return None
    return f"url({target}) is not a file of this theme: a themed page loads nothing from elsewhere"


def _too_deep(tokens: Sequence[Node]) -> Node | None:
    """The first block nested deeper than MAX_NESTING (counted without recursion), or None."""
    stack = [(t, 1) for t in reversed(tokens)]
    while stack:
        token, depth = stack.pop()
        inner = token.arguments if isinstance(token, FunctionBlock) else getattr(token, "content", None)
        if isinstance(inner, list):
            if depth > MAX_NESTING:
                return token
            stack.extend((t, depth + 1) for t in reversed(inner))
    return None


def _token_problem(text: str, names: frozenset[str]) -> Problem | None:
    tokens = tinycss2.parse_component_value_list(text + _END)
    deep = _too_deep(tokens)
    if deep is not None:
        return deep.source_line, f"nests blocks, brackets or functions more than {MAX_NESTING} deep"
    for token, after in _walk(tokens):
        line = token.source_line
        if isinstance(token, ParseError):
            return line, _parse_error(token)
        if isinstance(token, AtKeywordToken):
            if token.lower_value == "import":
                return line, "uses @import: link each stylesheet from base.html with {{ theme_url }}name.css"
            if token.lower_value not in ALLOWED_AT_RULES:
                allowed = ", ".join(f"@{a}" for a in sorted(ALLOWED_AT_RULES))
                return line, f"uses @{token.value}, which themes may not (a theme may use {allowed})"
        elif isinstance(token, LiteralToken) and token.value == "!":
            if isinstance(after, IdentToken) and after.lower_value == "important":
                return line, (
                    "uses !important, which themes may not: it would outrank the rules that "
                    "reserve each zone's space"
                )
        elif isinstance(token, URLToken):
            message = _url_problem(token.value, names)
            if message is not None:
                return line, message
        elif isinstance(token, FunctionBlock):
            args = _meaningful(token.arguments)
            if token.lower_name in _URL_FUNCTIONS:
                if len(args) != 1 or not isinstance(args[0], StringToken):
                    return line, f"{token.name}() names something other than one file of this theme"
                message = _url_problem(args[0].value, names)
                if message is not None:
                    return line, message
            elif token.lower_name in _IMAGE_FUNCTIONS:
                for arg in args:
                    if isinstance(arg, StringToken) and (message := _url_problem(arg.value, names)):
                        return line, message
            elif token.lower_name == "expression":
                return line, "uses a script-like CSS feature, which themes may not"
        if isinstance(token, IdentToken) and token.value.startswith("@"):
            return line, "has an escaped @ (like \\40import): write at-rules plainly"
        if isinstance(token, IdentToken) and token.lower_value in _SCRIPT_IDENTS:
            return line, "uses a script-like CSS feature, which themes may not"
        value = getattr(token, "value", None)
        if isinstance(value, str) and "javascript:" in value.lower().replace(" ", ""):
            return line, "uses a script-like CSS feature, which themes may not"
    present = [t for t in tokens if t.type != "whitespace"]
    last = present[-1] if present else None
    if not (isinstance(last, IdentToken) and last.value == _END.split(";")[1]):
        if last is None or last.type == "comment":
            return (last.source_line if last else 1), "a comment is never closed"
        return last.source_line, "this block (or function) is never closed"
    return None


@dataclass(frozen=True, slots=True)
class _Sheet:
    """What every rule of one stylesheet is checked against."""

    frame: ZoneFrame
    custom: CustomProperties


def _declarations_problem(
    items: Sequence[Node], sheet: _Sheet, test: SelectorTest | None, reaches: bool
) -> Problem | None:
    """The contents of a style rule: declarations, nested rules, nested at-rules."""
    for item in items:
        if isinstance(item, Declaration):
            name = item.lower_name
            message = z_index_problem(item.value, sheet.custom) if name == "z-index" else None
            if message is None and reaches:
                allowed = hiding_problem(name, item.value, sheet.custom)
                if allowed is not None:
                    message = (
                        f"sets {name} on a selector that can match a zone, something inside one or "
                        f"around one: there {name} may only be {allowed} (hide your own elements by "
                        "their own class)"
                    )
            if message is not None:
                return item.source_line, message
        elif isinstance(item, QualifiedRule):
            found = _style_rule_problem(item, sheet, test)
            if found is not None:
                return found
        elif isinstance(item, AtRule) and item.content is not None:
            inner = tinycss2.parse_blocks_contents(item.content, skip_comments=True, skip_whitespace=True)
            found = _declarations_problem(inner, sheet, test, reaches)
            if found is not None:
                return found
    return None


def _style_rule_problem(rule: QualifiedRule, sheet: _Sheet, parent: SelectorTest | None) -> Problem | None:
    test = sheet.frame.test(rule.prelude, parent)
    reaches = any(test(path, i) for path in sheet.frame.paths for i in range(len(path)))
    items = tinycss2.parse_blocks_contents(rule.content, skip_comments=True, skip_whitespace=True)
    return _declarations_problem(items, sheet, test, reaches)


def _font_face_problem(rule: AtRule) -> Problem | None:
    """`size-adjust` scales every glyph of the font: a zone set in it must stay readable."""
    for item in tinycss2.parse_blocks_contents(rule.content, skip_comments=True, skip_whitespace=True):
        if isinstance(item, Declaration) and item.lower_name == "size-adjust":
            values = _meaningful(item.value)
            if not (len(values) == 1 and isinstance(values[0], PercentageToken) and values[0].value >= 75):
                return item.source_line, "@font-face size-adjust may only be a percentage of at least 75%"
    return None


def _rules_problem(rules: Sequence[Node], sheet: _Sheet) -> Problem | None:
    for rule in rules:
        found: Problem | None = None
        if isinstance(rule, QualifiedRule):
            found = _style_rule_problem(rule, sheet, None)
        elif isinstance(rule, AtRule) and rule.content is not None:
            # @keyframes: not checked here, since no rule that reaches a zone may run an animation
            # (`animation` is refused there, and the renderer pins `animation: none`).
            if rule.lower_at_keyword == "font-face":
                found = _font_face_problem(rule)
            elif rule.lower_at_keyword not in _KEYFRAMES:
                found = _rules_problem(tinycss2.parse_rule_list(rule.content, True, True), sheet)
        if found is not None:
            return found
    return None


def _declarations(nodes: Sequence[Node]) -> Iterator[Declaration]:
    """Every declaration in a stylesheet, nested ones included."""
    for node in nodes:
        if isinstance(node, Declaration):
            yield node
        elif isinstance(node, (QualifiedRule, AtRule)) and node.content is not None:
            yield from _declarations(tinycss2.parse_blocks_contents(node.content, True, True))


def custom_properties(texts: Sequence[str]) -> CustomProperties:
    """Each custom property (`--name`) the stylesheets set, with every value they give it."""
    found: dict[str, list[list[Node]]] = {}
    for text in texts:
        for declaration in _declarations(tinycss2.parse_stylesheet(text, True, True)):
            if declaration.name.startswith("--"):
                found.setdefault(declaration.name, []).append(list(declaration.value))
    return found


def stylesheet_problem(
    text: str, names: frozenset[str], frame: ZoneFrame, custom: CustomProperties
) -> Problem | None:
    """The first problem (line, message) of a theme stylesheet, or None.

    `names` are the theme's files (what a url() may name); `frame` is where its zones sit;
    `custom` the custom properties all the theme's stylesheets set (what a var() may be).
    """
    found = _token_problem(text, names)
    if found is not None:
        return found
    rules = tinycss2.parse_stylesheet(text, skip_comments=True, skip_whitespace=True)
    return _rules_problem(rules, _Sheet(frame, custom))
