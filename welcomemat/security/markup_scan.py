"""Whether text holds a link, markup, script or template syntax: the one scanner for plain text.

Why a module of its own: zone text, fact statements and export cells are plain text
(DESIGN.md, invariant 1), and a model, a pasted research snippet or an attacker's payload
hides a link or a tag in many spellings (schemes, bare domains, entities, event handlers,
markdown), or template syntax a sequencer or template engine would run (`{{7*7}}`). Three
callers turn a finding into their own refusal: the `no_markup_or_links` check on drafts
(`precompute.checks`), the trust policy on fact statements (`precompute.facts.trust`) and the
export's cell choke point (`outbound.export`). The patterns are compiled at import and
each runs only on text with a character it needs.
"""

from __future__ import annotations

import re

__all__ = ["find_active_markup", "find_markup", "find_template_marker"]

# Links: schemes a browser or mail client acts on (on lowercased text), "://" anywhere,
# and bare domains (`_domain_at`).
_SCHEME_RE = re.compile(
    r"://|\b(?:https?|ftp|file|javascript|vbscript|livescript|mailto)\s*:|\bdata\s*:\s*[\w.+-]+/"
    r"|\b(?:tel|sms)\s*:\s*\+?\d"
)
# Tags, comments, entities and attributes: event handlers, `x="..."`, and backslashes
# (page copy never has one; escapes and payloads do).
_HTML_RE = re.compile(
    r"""<(?:[^\W\d_]|[/!?]) | &\#?\w+; | &(?i:lt|gt|amp|quot|apos|nbsp)(?![^\W\d_])
    | \b[oO][nN]\w+\s*= | =\s*["'`] | \\""",
    re.VERBOSE,
)
# Script without markup ("';alert(1)//"): calls of the usual sinks, on lowercased text.
_SCRIPT_CALL_RE = re.compile(
    r"\b(?:alert|prompt|confirm|eval|expression|settimeout|setinterval|fromcharcode|import)\("
)
_SCRIPT_OBJECTS = ("document.", "window.", "location.")
# Links, images, emphasis, code, strikethrough and headings.
_MARKDOWN_RE = re.compile(
    r"""\[[^\]\n]*\]\s*[(\[]
    | !\[ | \*\* | __ | ` | ~~
    | ^[ \t]{0,3}\#{1,6}(?:[ \t]|$)
    | (?<![\w*])\*[^\s*][^*\n]*\*(?![\w*])
    """,
    re.MULTILINE | re.VERBOSE,
)
# What a sequencer (Liquid `{{ }}` / `{% %}`, lemlist/Smartlead `{{ }}`, Outreach `{{ }}`),
# a template engine (Jinja `{# #}`, ERB/ASP `<% %>`, JS/shell `${ }`, Ruby `#{ }`, Thymeleaf
# `*{ }` `@{ }` `~{ }`, `[[ ]]`) or a composer
# slot (`{round}`, `%FIRST_NAME%`) looks like, filled or not: text holding one would be run
# or shown raw by whatever renders it next.
_TEMPLATE_MARKER_RE = re.compile(
    r"\{\{|\}\}|\{%|%\}|\{#|#\}|<%|%>|\[\[|\]\]|[$#*@~]\{|%[A-Z][A-Z_]{3,}%|\{[A-Za-z_][A-Za-z0-9_]*\}"
)
_TEMPLATE_CHARS = frozenset("{}%[]")  # every marker has one
# Everything `find_active_markup` finds needs one of these characters (tags, entities,
# backslashes, calls, template syntax), an attribute's "=" or a script object.
_ACTIVE_CHAR_RE = re.compile(r"[<&\\{}%\[\](]")
_QUOTES = "\"'`"
# A pattern can only match if the text has one of these characters: most drafts skip it.
_HTML_CHARS = frozenset("<&=\\")
_MARKDOWN_CHARS = frozenset("[*_`~#")


def find_markup(text: str) -> tuple[str, int] | None:
    """The first URL, HTML or markdown in `text`: its reason code and where it starts, or None.

    Reason codes: url_in_text, html_in_text (tags, entities, attributes, script, backslashes),
    markdown_in_text. Each pattern runs only where the characters it needs occur: most drafts
    skip most of them.
    """
    at = _html_at(text)
    if at >= 0:
        return "html_in_text", at
    colon, dot, paren = ":" in text, "." in text, "(" in text
    lowered = text.lower() if colon or dot or paren else text
    m = _SCHEME_RE.search(lowered) if colon else None
    if m is not None:
        return "url_in_text", m.start()
    at = _domain_at(text) if dot else -1
    if at >= 0:
        return "url_in_text", at
    at = _script_at(lowered, dot, paren)
    if at >= 0:
        return "html_in_text", at
    m = _MARKDOWN_RE.search(text) if not _MARKDOWN_CHARS.isdisjoint(text) else None
    if m is not None:
        return "markdown_in_text", m.start()
    return None


def find_active_markup(text: str) -> tuple[str, int] | None:
    """The first thing in `text` a browser, mail client or template engine would act on, or None.

    For text that may hold links and ordinary punctuation (an e-mail address, a URL, an
    underscore in a token), but never tags, entities, attributes, script or template
    syntax. Reason codes: html_in_text, template_in_text.
    """
    if not _may_be_active(text):  # most cells: a few substring searches and done
        return None
    at = _html_at(text)
    if at < 0:
        dot, paren = "." in text, "(" in text
        at = _script_at(text.lower() if dot or paren else text, dot, paren)
    if at >= 0:
        return "html_in_text", at
    marker = find_template_marker(text)
    if marker is not None:
        return "template_in_text", text.find(marker)
    return None


def _may_be_active(text: str) -> bool:
    """False only when `find_active_markup` cannot find anything: one character class and
    a look around each "=" (export cells are mostly URLs and names, on which the full
    patterns cost several times more)."""
    if _ACTIVE_CHAR_RE.search(text) is not None:
        return True
    i = text.find("=")
    while i >= 0:  # `=\s*["'`]` after it, or an `on...` word before it (an event handler)
        after = text[i + 1 :].lstrip()
        if after[:1] and after[0] in _QUOTES:
            return True
        before = text[:i].rstrip()
        start = len(before)
        while start > 0 and (before[start - 1].isalnum() or before[start - 1] == "_"):
            start -= 1
        word = before[start:]
        if len(word) > 2 and word[:2].lower() == "on":
            return True
        i = text.find("=", i + 1)
    if "." in text:
        lowered = text.lower()
        return any(o in lowered for o in _SCRIPT_OBJECTS)
    return False


def _html_at(text: str) -> int:
    """Where a tag, entity, attribute, event handler or backslash starts, or -1."""
    m = _HTML_RE.search(text) if not _HTML_CHARS.isdisjoint(text) else None
    return m.start() if m is not None else -1


def _script_at(lowered: str, dot: bool, paren: bool) -> int:
    """Where a script sink call or object ("alert(", "document.") starts in lowered text, or -1."""
    m = _SCRIPT_CALL_RE.search(lowered) if paren else None
    if m is not None:
        return m.start()
    return max((lowered.find(o) for o in _SCRIPT_OBJECTS), default=-1) if dot else -1


def _domain_at(text: str) -> int:
    """Where a bare domain starts to show ("evil.com", "www.x.io"), or -1.

    A dot between a letter or digit and two letters, without a space: "e.g.", "B.V.",
    "4.5" and "Done. Next" are not domains. A loop over the few dots of a draft is
    cheaper than a regex that tries every position.
    """
    i = text.find(".", 1)
    while i >= 0:
        before, after = text[i - 1], text[i + 1 : i + 3]
        if before.isalnum() and len(after) == 2 and all(c.isalnum() and not c.isdecimal() for c in after):
            return i - 1
        i = text.find(".", i + 1)
    return -1


def find_template_marker(text: str) -> str | None:
    """The first template marker in `text` (`{{`, `{%`, `${`, `<%`, `[[`, `{slot}` ...), or None."""
    if _TEMPLATE_CHARS.isdisjoint(text):
        return None
    match = _TEMPLATE_MARKER_RE.search(text)
    return match.group(0) if match else None
