"""Which theme declarations could hide a zone, when their rule reaches one (`welcomemat.theme.frame`).

A theme restyles the page around its zones but may not make one disappear: not by hiding it
(`display: none`, `visibility`, `opacity`, `content-visibility`), shrinking its text
(`font-size`, `font`, `zoom`), clipping or moving it away (`overflow`, `clip`, `clip-path`,
`mask`, `transform`, `position`, huge margins or offsets, `text-indent: -9999px`), painting it
invisible (`color: transparent`, `filter`, `-webkit-text-security`), replacing it
(`content`), making a link unclickable (`pointer-events: none`), or trapping it under the
theme's own boxes (a stacking context around it: `z-index`, `isolation`, `will-change`,
`contain`), or running an animation on it (an animation outranks every rule). These are
refused on any rule whose selector reaches a zone, an element inside one or an element
around one. Elsewhere (`.acme-menu { display: none }`) they are the theme's own business.

A `var()` is read as each value the theme's stylesheets give that custom property (and its
fallback); a value the check cannot read (`calc()`, `attr()`, too many var() readings) is
refused on such a rule: write the plain value. Text colour against its background (white on
white) is not checked: the preview shows it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from tinycss2.ast import (
    DimensionToken,
    FunctionBlock,
    HashToken,
    IdentToken,
    LiteralToken,
    Node,
    NumberToken,
    PercentageToken,
)

__all__ = ["MAX_THEME_Z_INDEX", "CustomProperties", "hiding_problem", "z_index_problem"]

# The renderer lifts each zone above the theme (templates/static/welcomemat.css: z-index 1000),
# so a theme's own stacking stays below that.
MAX_THEME_Z_INDEX = 999

_CSS_WIDE = frozenset({"inherit", "initial", "unset", "revert", "revert-layer"})
# Font sizes a zone (or what is around it) may have: never smaller than readable text.
_MIN_FONT = {"px": 12.0, "pt": 9.0, "rem": 0.75, "em": 1.0}
_MIN_FONT_PERCENT = 100.0
_SMALL_FONT_KEYWORDS = frozenset({"xx-small", "x-small", "smaller"})
# How far a margin, padding or offset may move what is around a zone, each way.
_MAX_SHIFT = {"px": 400.0, "pt": 300.0, "em": 25.0, "rem": 25.0, "ch": 50.0, "ex": 50.0}
_MAX_SHIFT_RELATIVE = 50.0  # %, vw, vh, vmin, vmax: half the page
_MAX_PULL = {"px": 100.0, "pt": 75.0, "em": 6.0, "rem": 6.0, "ch": 12.0, "ex": 12.0}  # negative
_RELATIVE_UNITS = frozenset({"vw", "vh", "vmin", "vmax", "svh", "lvh", "dvh", "svw", "lvw", "dvw"})
_MIN_SPACING = {"px": -2.0, "em": -0.15, "rem": -0.15}  # letter- and word-spacing
_MIN_ALPHA = 0.5
_COLOR_FUNCTIONS = frozenset({"rgb", "rgba", "hsl", "hsla", "hwb", "lab", "lch", "oklab", "oklch"})

_VENDOR = re.compile(r"^-(?:webkit|moz|ms|o)-")  # -webkit-transform is transform in Chromium

_Check = Callable[[Sequence[Node]], str | None]


def _values(tokens: Sequence[Node]) -> list[Node]:
    return [t for t in tokens if t.type not in ("whitespace", "comment")]


def _only(*allowed: str) -> _Check:
    words = frozenset(allowed)

    def check(tokens: Sequence[Node]) -> str | None:
        values = _values(tokens)
        if all(isinstance(t, IdentToken) and t.lower_value in words for t in values) and values:
            return None
        return " or ".join(sorted(allowed))

    return check


def _not_idents(*refused: str) -> _Check:
    words = frozenset(refused)

    def check(tokens: Sequence[Node]) -> str | None:
        for t in _values(tokens):
            if isinstance(t, IdentToken) and t.lower_value in words:
                return f"anything but {t.value}"
            if isinstance(t, FunctionBlock):
                return "a plain value"
        return None

    return check


def _at_least_one(tokens: Sequence[Node]) -> str | None:
    values = _values(tokens)
    if len(values) == 1:
        t = values[0]
        if isinstance(t, NumberToken) and t.value >= 1 or isinstance(t, PercentageToken) and t.value >= 100:
            return None
        if isinstance(t, IdentToken) and t.lower_value in ("normal", "reset"):
            return None
    return "1 (fully shown)"


def _font_size_ok(t: Node) -> bool:
    if isinstance(t, IdentToken):
        return t.lower_value not in _SMALL_FONT_KEYWORDS
    if isinstance(t, PercentageToken):
        return bool(t.value >= _MIN_FONT_PERCENT)
    if isinstance(t, DimensionToken):
        floor = _MIN_FONT.get(t.lower_unit)
        return floor is not None and bool(t.value >= floor)
    if isinstance(t, FunctionBlock):
        args = [a for a in _values(t.arguments) if not (isinstance(a, LiteralToken) and a.value == ",")]
        if t.lower_name == "max":
            return any(_font_size_ok(a) for a in args)
        if t.lower_name == "min":
            return bool(args) and all(_font_size_ok(a) for a in args)
        if t.lower_name == "clamp":
            return bool(args) and _font_size_ok(args[0])
    return False


_FONT_SIZE_RULE = "at least 12px, 9pt, 0.75rem, 1em or 100% (never smaller than its parent's text)"


def _font_size(tokens: Sequence[Node]) -> str | None:
    values = _values(tokens)
    return None if len(values) == 1 and _font_size_ok(values[0]) else _FONT_SIZE_RULE


_FONT_SIZE_WORDS = frozenset(
    {
        "xx-small",
        "x-small",
        "small",
        "medium",
        "large",
        "x-large",
        "xx-large",
        "xxx-large",
        "smaller",
        "larger",
    }
)


def _font(tokens: Sequence[Node]) -> str | None:
    """The `font` shorthand: its size (the first size in it, before any `/line-height`)."""
    values = _values(tokens)
    if len(values) == 1 and isinstance(values[0], IdentToken):
        return None  # a system font (caption, menu, …)
    for t in values:
        if (
            isinstance(t, IdentToken)
            and t.lower_value in _FONT_SIZE_WORDS
            or isinstance(t, (DimensionToken, PercentageToken, NumberToken, FunctionBlock))
        ):
            return None if _font_size_ok(t) else _FONT_SIZE_RULE
    return None


def _shift_ok(t: Node) -> bool:
    if isinstance(t, NumberToken):
        return bool(t.value == 0)
    if isinstance(t, IdentToken):
        return True  # auto
    if isinstance(t, PercentageToken) or isinstance(t, DimensionToken) and t.lower_unit in _RELATIVE_UNITS:
        value = float(t.value)
        return -value <= _MAX_SHIFT_RELATIVE / 5 if value < 0 else value <= _MAX_SHIFT_RELATIVE
    if isinstance(t, DimensionToken):
        limits = _MAX_PULL if t.value < 0 else _MAX_SHIFT
        limit = limits.get(t.lower_unit)
        return limit is not None and abs(float(t.value)) <= limit
    return False


def _shift(tokens: Sequence[Node]) -> str | None:
    if all(_shift_ok(t) for t in _values(tokens)):
        return None
    return "within 400px (25em) forwards and 100px (6em) backwards, in plain lengths"


def _spacing(tokens: Sequence[Node]) -> str | None:
    for t in _values(tokens):
        if isinstance(t, DimensionToken) and t.value < 0:
            floor = _MIN_SPACING.get(t.lower_unit)
            if floor is None or t.value < floor:
                return "at least -0.15em (letters must not fold onto each other)"
        elif not _shift_ok(t):
            return "within 400px (25em), in plain lengths"
    return None


def _alpha(t: Node) -> float | None:
    if isinstance(t, NumberToken):
        return float(t.value)
    if isinstance(t, PercentageToken):
        return float(t.value) / 100
    return None


def _color(tokens: Sequence[Node]) -> str | None:
    message = "a visible colour (not transparent, alpha at least 0.5)"
    for t in _values(tokens):
        if isinstance(t, IdentToken) and t.lower_value == "transparent":
            return message
        if isinstance(t, HashToken):
            digits = t.value
            alpha = None
            if len(digits) == 4:
                alpha = int(digits[3] * 2, 16) / 255
            elif len(digits) == 8:
                alpha = int(digits[6:], 16) / 255
            if alpha is not None and alpha < _MIN_ALPHA:
                return message
        if isinstance(t, FunctionBlock):
            if t.lower_name not in _COLOR_FUNCTIONS:
                return message
            args = _values(t.arguments)
            if any(isinstance(a, (FunctionBlock, IdentToken)) for a in args):
                return message  # `from` (relative colours), var(), calc(), none
            parts = [a for a in args if not (isinstance(a, LiteralToken) and a.value == ",")]
            slash = [k for k, a in enumerate(args) if isinstance(a, LiteralToken) and a.value == "/"]
            alpha_token = args[slash[0] + 1] if slash and slash[0] + 1 < len(args) else None
            if alpha_token is None and len(parts) == 4:
                alpha_token = parts[3]
            if alpha_token is not None:
                alpha = _alpha(alpha_token)
                if alpha is None or alpha < _MIN_ALPHA:
                    return message
    return None


_SHIFTS = (
    "top", "right", "bottom", "left", "inset", "inset-block", "inset-inline", "inset-block-start",
    "inset-block-end", "inset-inline-start", "inset-inline-end", "text-indent",
    *(f"{box}{side}" for box in ("margin", "padding") for side in (
        "", "-top", "-right", "-bottom", "-left", "-block", "-inline", "-block-start", "-block-end",
        "-inline-start", "-inline-end",
    )),
)  # fmt: skip

# Property -> what it may be on a rule that reaches a zone (a refusal names it).
_RULES: Mapping[str, _Check] = {
    "display": _not_idents("none"),
    "visibility": _only("visible"),
    "opacity": _at_least_one,
    "zoom": _at_least_one,
    "content-visibility": _only("visible"),
    "font-size": _font_size,
    "font": _font,
    "font-size-adjust": _only("none"),
    "overflow": _only("visible"),
    "overflow-x": _only("visible"),
    "overflow-y": _only("visible"),
    "overflow-block": _only("visible"),
    "overflow-inline": _only("visible"),
    "contain": _only("none"),
    "container-type": _only("normal"),
    "clip": _only("auto"),
    "clip-path": _only("none"),
    "mask": _only("none"),
    "mask-image": _only("none"),
    "mask-border": _only("none"),
    "-webkit-mask": _only("none"),
    "-webkit-mask-image": _only("none"),
    "-webkit-mask-box-image": _only("none"),
    "filter": _only("none"),
    "backdrop-filter": _only("none"),
    "mix-blend-mode": _only("normal"),
    "transform": _only("none"),
    "translate": _only("none"),
    "rotate": _only("none"),
    "scale": _only("none"),
    "perspective": _only("none"),
    "position": _only("static", "relative"),
    "z-index": _only("auto"),
    "isolation": _only("auto"),
    "will-change": _only("auto"),
    "view-transition-name": _only("none"),
    "animation": _only("none"),
    "animation-name": _only("none"),
    "line-clamp": _only("none"),
    "-webkit-line-clamp": _only("none"),
    "color": _color,
    "-webkit-text-fill-color": _color,
    "-webkit-text-security": _only("none"),
    "content": _only("normal", "none"),
    "pointer-events": _only("auto"),
    "letter-spacing": _spacing,
    "word-spacing": _spacing,
    **dict.fromkeys(_SHIFTS, _shift),
}


# Custom property name -> each value the theme's stylesheets give it (what a var() may be).
CustomProperties = Mapping[str, Sequence[Sequence[Node]]]
_MAX_READINGS = 64  # var() combinations read before giving up (and refusing)
_MAX_VAR_DEPTH = 8


def _readings(tokens: Sequence[Node], custom: CustomProperties, depth: int = 0) -> list[list[Node]] | None:
    """Every value `tokens` can take once each var() is replaced (None: too many to read)."""
    if depth > _MAX_VAR_DEPTH:
        return None
    out: list[list[Node]] = [[]]
    for t in tokens:
        choices: list[list[Node]]
        if isinstance(t, FunctionBlock) and t.lower_name == "var":
            args = list(t.arguments)
            commas = [k for k, a in enumerate(args) if isinstance(a, LiteralToken) and a.value == ","]
            named = _values(args[: commas[0]] if commas else args)
            if len(named) != 1 or not isinstance(named[0], IdentToken):
                return None
            options = [list(v) for v in custom.get(named[0].value, ())]
            if commas:
                options.append(args[commas[0] + 1 :])
            if not options:  # never set: invalid at computed-value time, so the property is unset
                options = [[IdentToken(t.source_line, t.source_column, "unset")]]
            choices = []
            for option in options:
                inner = _readings(option, custom, depth + 1)
                if inner is None:
                    return None
                choices.extend(inner)
        elif isinstance(t, FunctionBlock):
            inner = _readings(t.arguments, custom, depth + 1)
            if inner is None:
                return None
            choices = [[FunctionBlock(t.source_line, t.source_column, t.name, args)] for args in inner]
        else:
            choices = [[t]]
        out = [done + choice for done in out for choice in choices]
        if len(out) > _MAX_READINGS:
            return None
    return out


def hiding_problem(name: str, value: Sequence[Node], custom: CustomProperties) -> str | None:
    """What `name` may be where it could hide a zone, when `value` (any var() reading) is not that."""
    check = _RULES.get(name) or _RULES.get(_VENDOR.sub("", name))
    if check is None:
        return None
    readings = _readings(value, custom)
    if readings is None:
        return f"{check([]) or 'a plain value'} (this value has too many var() readings to check)"
    for reading in readings:
        values = _values(reading)
        if len(values) == 1 and isinstance(values[0], IdentToken) and values[0].lower_value in _CSS_WIDE:
            continue
        reason = check(reading)
        if reason is not None:
            return reason
    return None


def z_index_problem(value: Sequence[Node], custom: CustomProperties) -> str | None:
    """A theme stacks its own boxes below the zones (the renderer lifts zones above MAX_THEME_Z_INDEX)."""
    message = f"sets z-index above {MAX_THEME_Z_INDEX} (or one the check cannot read): zones stay on top"
    readings = _readings(value, custom)
    if readings is None:
        return message
    for reading in readings:
        for t in _values(reading):
            if isinstance(t, NumberToken) and t.value <= MAX_THEME_Z_INDEX:
                continue
            if isinstance(t, IdentToken) and (t.lower_value == "auto" or t.lower_value in _CSS_WIDE):
                continue
            return message
    return None
