"""Which elements of a themed page hold a zone, and whether a theme selector can reach one.

A theme's stylesheet may hide things of its own (a mobile menu, a decoration), never a zone.
A zone disappears when it, an element inside it, or any element around it is hidden; the
elements around it come from the theme's own `base.html` (whatever it wraps around
`{% block content %}`) and the renderer's pages (`<section class="wm-hero">`). So the frame
is read from the theme: `base.html` with the content block replaced by the renderer's zone
markup (one zone of each element kind, with inline markup inside), parsed by html5lib as a
browser parses it (an unclosed `<b class="x">` in base.html is re-opened inside a zone by
the HTML parser, so it counts), Jinja tags dropped and `{{ … }}` read as "any text".

`ZoneFrame.reaches(selector)` answers "could this selector match an element that is a zone,
inside one, or around one?", erring towards yes: only the parts a selector can be shown not
to match (a type, class, id or attribute no such element has, `:root`, a pseudo-element
other than `::first-line` / `::first-letter`) make it no. Combinators are followed along
the frame (`.acme-footer p` cannot reach a zone when nothing around a zone is
`.acme-footer`); a sibling (`+`, `~`) could be anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import html5lib
from tinycss2.ast import (
    FunctionBlock,
    HashToken,
    IdentToken,
    LiteralToken,
    Node,
    SquareBracketsBlock,
    WhitespaceToken,
)

__all__ = ["FrameElement", "SelectorTest", "ZoneFrame", "zone_frame"]

# What `{{ … }}` in base.html becomes: a marker that matches any text in a class or id.
_ANY = "wmjinjaanytext"
_ZONE_TEXT = "wmzonetext"
# The renderer's zone markup (templates/_zone.html, landing.html, continuation.html), one zone
# of each element kind, each holding the inline tags zone text may carry (welcomemat.security.markup).
_CONTENT = (
    '<section class="wm-hero wm-hero--continuation">'
    + "".join(
        f'<{tag} class="wm-zone wm-zone--{_ANY} wm-cta" href="{_ANY}" data-wm-zone="{_ANY}" '
        f'data-wm-rung="{_ANY}">{_ZONE_TEXT}<b><strong><i><em>{_ZONE_TEXT}<br></em></i></strong></b>'
        f"{_ZONE_TEXT}</{tag}>"
        for tag in ("h1", "p", "a")
    )
    + "</section>"
)
_CONTENT_BLOCK = re.compile(
    r"\{%-?\s*block\s+content\s*-?%\}.*?\{%-?\s*endblock(?:\s+content)?\s*-?%\}", re.DOTALL
)
_JINJA_COMMENT = re.compile(r"\{#.*?#\}", re.DOTALL)
_JINJA_STATEMENT = re.compile(r"\{%.*?%\}", re.DOTALL)
_JINJA_EXPRESSION = re.compile(r"\{\{.*?\}\}", re.DOTALL)
# A pseudo-element is not the element: hiding `::before` hides no zone. These two are parts of
# the element's own text, so they count as the element.
_TEXT_PSEUDO_ELEMENTS = frozenset({"first-line", "first-letter"})
_LEGACY_PSEUDO_ELEMENTS = frozenset({"before", "after", "first-line", "first-letter"})
_ANY_OF = frozenset({"is", "where", "matches", "any", "-webkit-any", "-moz-any"})
_COMBINATORS = frozenset({">", "+", "~"})


@dataclass(frozen=True, slots=True)
class FrameElement:
    """One element on the path from `<html>` down to zone text: what a selector can test."""

    tag: str
    classes: tuple[str, ...]
    element_id: str | None
    attributes: frozenset[str]

    # Compared without case: a base.html without `<!doctype html>` puts the page in quirks mode,
    # where class and id selectors match whatever their case.
    def has_class(self, name: str) -> bool:
        return any(_text_may_be(value.lower(), name.lower()) for value in self.classes)

    def has_id(self, name: str) -> bool:
        return self.element_id is not None and _text_may_be(self.element_id.lower(), name.lower())

    def has_attribute(self, name: str) -> bool:
        return name in self.attributes or any(_ANY in a for a in self.attributes)


def _text_may_be(value: str, wanted: str) -> bool:
    """Could `value` (from base.html, `{{ … }}` read as any text) be `wanted`?

    A glob with only "any text" wildcards, matched greedily left to right (linear, unlike a
    regular expression of `.*`s, which backtracks).
    """
    if _ANY not in value:
        return value == wanted
    first, *middle, last = value.split(_ANY)
    if len(wanted) < len(first) + len(last) or not wanted.startswith(first) or not wanted.endswith(last):
        return False
    at, end = len(first), len(wanted) - len(last)
    for part in middle:
        found = wanted.find(part, at, end)
        if found < 0:
            return False
        at = found + len(part)
    return True


# A compound selector's test against the frame: (element path, index) -> could it match?
SelectorTest = Callable[[Sequence[FrameElement], int], bool]


class ZoneFrame:
    """The paths from `<html>` down to each zone's text, as a themed page builds them."""

    def __init__(self, paths: Sequence[Sequence[FrameElement]]) -> None:
        self.paths = tuple(tuple(p) for p in paths)
        self.depth = max((len(p) for p in self.paths), default=0)

    def reaches(self, prelude: Sequence[Node], parent: SelectorTest | None = None) -> bool:
        """Could the selector list `prelude` match a zone, an element inside one or around one?

        `parent` is the enclosing rule's test for a nested rule (CSS nesting: `&`, or a
        relative selector), None at the top level.
        """
        test = self.test(prelude, parent)
        return any(test(path, i) for path in self.paths for i in range(len(path)))

    def test(self, prelude: Sequence[Node], parent: SelectorTest | None) -> SelectorTest:
        """The selector list as a test of one frame element (its path and index)."""
        selectors = [_parse_complex(s, nested=parent is not None) for s in _split_commas(prelude)]
        if any(s is None for s in selectors):
            return lambda path, i: True  # a selector this reading does not follow: assume it reaches

        levels: dict[int, list[bool]] = {}  # per path (by identity): could it match at each level?
        memo: _Memo = {}

        def matches(path: Sequence[FrameElement], i: int) -> bool:
            found = levels.get(id(path))
            if found is None:
                found = [False] * len(path)
                for s in selectors:
                    if s is not None:
                        found = [a or b for a, b in zip(found, _match(s, path, parent, memo), strict=True)]
                levels[id(path)] = found
            return found[i]

        return matches


# A complex selector: compounds left to right, each with the combinator before it (" " first).
_Compound = list[Node]
# (id of an `:is(…)` function token, id of a frame path) -> its answer at each level; both live
# as long as the check that fills it.
_Memo = dict[tuple[int, int], list[bool]]
_Complex = list[tuple[str, _Compound]]


def _split_commas(tokens: Sequence[Node]) -> list[list[Node]]:
    out: list[list[Node]] = [[]]
    for token in tokens:
        if isinstance(token, LiteralToken) and token.value == ",":
            out.append([])
        elif token.type != "comment":
            out[-1].append(token)
    return out


def _parse_complex(tokens: Sequence[Node], *, nested: bool) -> _Complex | None:
    """Compounds and combinators; None when empty. A nested selector without `&` is `& <it>`."""
    parts: _Complex = []
    combinator = " "
    compound: _Compound = []
    for token in tokens:
        if isinstance(token, WhitespaceToken):
            if compound:
                parts.append((combinator, compound))
                compound, combinator = [], " "
        elif isinstance(token, LiteralToken) and token.value in _COMBINATORS:
            if compound:
                parts.append((combinator, compound))
                compound = []
            combinator = token.value
        else:
            compound.append(token)
    if compound:
        parts.append((combinator, compound))
    if not parts:
        return None
    if nested and not any(isinstance(t, LiteralToken) and t.value == "&" for _, c in parts for t in c):
        parts.insert(0, (" ", [LiteralToken(0, 0, "&")]))
    return parts


def _match(
    selector: _Complex, path: Sequence[FrameElement], parent: SelectorTest | None, memo: _Memo
) -> list[bool]:
    """For each level of the path: could the selector's last compound be that element?

    Left to right over the compounds, for each level: `real[n]` (the compound can be path[n],
    the compounds to its left satisfied) and `sibling[n]` (it can be an unknown sibling at
    level n, for `+` and `~`). Linear in compounds times levels.
    """
    levels = len(path)
    real = [_compound_may_match(selector[0][1], path, n, parent, memo) for n in range(levels)]
    sibling = [True] * levels
    for combinator, compound in selector[1:]:
        if combinator == " ":
            seen, left = False, []
            for n in range(levels):
                left.append(seen)
                seen = seen or real[n]
        elif combinator == ">":
            left = [False, *real[:-1]]
        else:  # + and ~: the element to the left is a sibling, whatever it is
            left = sibling
        real = [left[n] and _compound_may_match(compound, path, n, parent, memo) for n in range(levels)]
        sibling = left
    return real


def _compound_may_match(
    compound: Sequence[Node], path: Sequence[FrameElement], i: int, parent: SelectorTest | None, memo: _Memo
) -> bool:
    element = path[i]
    tokens = list(compound)
    k = 0
    while k < len(tokens):
        token = tokens[k]
        following = tokens[k + 1] if k + 1 < len(tokens) else None
        if isinstance(token, IdentToken) and k == 0:
            if isinstance(following, LiteralToken) and following.value == "|":
                return True  # a namespace prefix: not followed
            if element.tag != token.lower_value:
                return False
        elif isinstance(token, LiteralToken) and token.value == "*":
            pass
        elif isinstance(token, LiteralToken) and token.value == "&":
            if parent is not None and not parent(path, i):
                return False
        elif isinstance(token, LiteralToken) and token.value == "." and isinstance(following, IdentToken):
            if not element.has_class(following.value):
                return False
            k += 1
        elif isinstance(token, HashToken):
            if not element.has_id(token.value):
                return False
        elif isinstance(token, SquareBracketsBlock):
            names = [t for t in token.content if isinstance(t, IdentToken)]
            if names and not any(isinstance(t, LiteralToken) and t.value == "|" for t in token.content):
                if not element.has_attribute(names[0].lower_value):
                    return False
        elif isinstance(token, LiteralToken) and token.value == ":":
            if isinstance(following, LiteralToken) and following.value == ":":  # ::pseudo-element
                name = tokens[k + 2] if k + 2 < len(tokens) else None
                if not (isinstance(name, IdentToken) and name.lower_value in _TEXT_PSEUDO_ELEMENTS):
                    return False
                k += 3
                continue
            if isinstance(following, IdentToken):
                if following.lower_value in _LEGACY_PSEUDO_ELEMENTS - _TEXT_PSEUDO_ELEMENTS:
                    return False
                if following.lower_value == "root" and element.tag != "html":
                    return False
                k += 2
                continue
            if isinstance(following, FunctionBlock):
                if following.lower_name in _ANY_OF and not _any_of(following, path, parent, memo)[i]:
                    return False
                k += 2
                continue
            return True  # not a selector this reading follows
        else:
            return True  # not a selector this reading follows
        k += 1
    return True


def _any_of(
    function: FunctionBlock, path: Sequence[FrameElement], parent: SelectorTest | None, memo: _Memo
) -> list[bool]:
    """`:is(…)` and its kin, at each level of the path: worked out once per path (nesting stays linear)."""
    key = (id(function), id(path))
    found = memo.get(key)
    if found is None:
        args = [_parse_complex(a, nested=False) for a in _split_commas(function.arguments)]
        found = [True] * len(path)  # an argument this reading does not follow: assume it matches
        if all(a is not None for a in args):
            found = [False] * len(path)
            for a in args:
                if a is not None:
                    found = [x or y for x, y in zip(found, _match(a, path, parent, memo), strict=True)]
        memo[key] = found
    return found


def _describe(node: object) -> FrameElement:
    attrib: dict[str, str] = getattr(node, "attrib", {})
    classes = tuple(attrib.get("class", "").split())
    names = frozenset(name.lower() for name in attrib)
    return FrameElement(str(getattr(node, "tag", "")).lower(), classes, attrib.get("id"), names)


def zone_frame(base_html: str) -> ZoneFrame:
    """The frame a theme's `base.html` puts around the renderer's zones."""
    html, found = _CONTENT_BLOCK.subn(_CONTENT, base_html, count=1)
    if not found:
        html = html.replace("</body>", _CONTENT + "</body>") if "</body>" in html else html + _CONTENT
    html = _JINJA_COMMENT.sub("", html)
    html = _JINJA_STATEMENT.sub("", html)
    html = _JINJA_EXPRESSION.sub(_ANY, html)
    root = html5lib.parse(html, treebuilder="etree", namespaceHTMLElements=False)
    paths: list[list[FrameElement]] = []
    stack: list[tuple[Any, list[FrameElement]]] = [(root, [])]
    while stack:  # depth first, without recursion: base.html may nest as deep as it likes
        node, above = stack.pop()
        here = [*above, _describe(node)]
        texts = [node.text] + [child.tail for child in node]
        if any(t and _ZONE_TEXT in t for t in texts):
            paths.append(here)
        stack.extend((child, here) for child in reversed(node) if isinstance(child.tag, str))
    if not paths:  # zones a browser would not show (in a comment, a <title>): the render check refuses
        return zone_frame("<body>{% block content %}{% endblock %}</body>")  # so judge by the bare frame
    return ZoneFrame(paths)
