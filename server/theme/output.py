"""A themed page's size, bounded where it grows: the theme's filters and the render itself.

A theme's `{{ }}` may use only a few filters (`THEME_FILTERS`), but some of them can make
text longer than it came in (`replace` most of all: a chain of ten `|replace('a', 'aaaaaaaaaa')`
turns a 40-character title into tens of megabytes). Checking the page after the render would
be too late: the string is built, and the worker is stalled building it. So the theme
environment gets bounded versions of every filter it offers: each refuses, before it builds
its result where it can (replace) and right after otherwise, to return more than
`MAX_THEMED_PAGE_BYTES`; and `render_bounded` streams the template and stops once the page
passes the same limit. Either raises `ThemeOutputTooLarge`, a Jinja2 error the renderer
turns into the built-in frame (counted), like any other theme page that fails.

`MAX_THEMED_PAGE_BYTES` is 256 KiB: a themed page is a frame (header, footer, a logo link)
around a few zones of short text, a few KiB; a quarter mebibyte leaves a hundredfold margin
and still bounds what one request can make a renderer build.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
from jinja2.filters import FILTERS
from markupsafe import escape

__all__ = [
    "MAX_THEMED_PAGE_BYTES",
    "THEME_FILTERS",
    "ThemeOutputTooLarge",
    "bounded_filters",
    "render_bounded",
]

MAX_THEMED_PAGE_BYTES = 256 * 1024  # one rendered themed page, UTF-8; see the docstring
# The filters a theme's `{{ }}` may use: none marks text safe or builds markup.
THEME_FILTERS = frozenset(
    {"capitalize", "d", "default", "e", "escape", "lower", "replace", "title", "trim", "truncate", "upper"}
)


class ThemeOutputTooLarge(jinja2.TemplateRuntimeError):
    """A theme's filter or page would pass `MAX_THEMED_PAGE_BYTES`."""


def _too_large(what: str, size: int) -> ThemeOutputTooLarge:
    return ThemeOutputTooLarge(
        f"{what} would make {size} characters, more than a themed page may hold ({MAX_THEMED_PAGE_BYTES})"
    )


def _check_result(name: str, value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_THEMED_PAGE_BYTES:
        raise _too_large(f"|{name}", len(value))
    return value


def _bounded(name: str, filter_: Callable[..., Any]) -> Callable[..., Any]:
    """`filter_`, refusing to return text longer than the page limit (keeps Jinja2's pass_* mark).

    Its other failures (`|truncate(3, end='....')` asserts, a wrong argument type) become
    Jinja2 errors too: a theme's mistake is a refused page, never a crash.
    """

    @functools.wraps(filter_)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        try:
            result = filter_(*args, **kwargs)
        except jinja2.TemplateError:
            raise
        except Exception as exc:  # any failure of a theme's filter is the theme's
            raise jinja2.TemplateRuntimeError(f"|{name} failed: {exc}") from None
        return _check_result(name, result)

    return bounded


@jinja2.pass_eval_context
def _bounded_replace(
    eval_ctx: jinja2.nodes.EvalContext, s: Any, old: Any, new: Any, count: int | None = None
) -> Any:
    """Jinja2's `replace`, refused before the string is built when the result would pass the limit."""
    text, before, after = str(s), str(old), str(new)
    if eval_ctx.autoescape:  # Jinja2 escapes all three then: the longest they can be
        text, before, after = str(escape(s)), str(escape(old)), str(escape(new))
    times = text.count(before)  # "" occurs len + 1 times, as str.replace inserts it
    if count is not None and count >= 0:
        times = min(times, count)
    size = len(text) + times * max(len(after) - len(before), 0)
    if size > MAX_THEMED_PAGE_BYTES:
        raise _too_large("|replace", size)
    return _check_result("replace", FILTERS["replace"](eval_ctx, s, old, new, count))


def bounded_filters() -> Mapping[str, Callable[..., Any]]:
    """Every filter in `THEME_FILTERS`, bounded: for the theme environment's `filters`."""
    filters = {name: _bounded(name, FILTERS[name]) for name in THEME_FILTERS}
    filters["replace"] = _bounded_replace
    return filters


def render_bounded(template: jinja2.Template, context: Mapping[str, Any]) -> str:
    """`template` rendered, stopping with ThemeOutputTooLarge once it passes the page limit.

    Streams the output (each `{{ }}` is one piece, bounded by the filters), so no more than
    the limit and one piece is ever held.
    """
    parts: list[str] = []
    size = 0
    for part in template.generate(context):
        size += len(part)
        if size > MAX_THEMED_PAGE_BYTES:
            raise _too_large("the page", size)
        parts.append(part)
    html = "".join(parts)
    encoded = len(html.encode("utf-8", "surrogatepass"))
    if encoded > MAX_THEMED_PAGE_BYTES:
        raise _too_large("the page (UTF-8)", encoded)
    return html
