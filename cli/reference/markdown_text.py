"""Plain text from docstrings and help strings made safe to put in Markdown.

Code spans (`like this`) are kept as written; in prose, the characters Markdown would read
as markup (emphasis, links, raw HTML, table cells) are escaped, so a page says what the
text says under both MkDocs (Python-Markdown) and GitHub.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence

__all__ = ["first_sentence", "paragraphs", "slug", "table", "text"]

_CODE_SPAN = re.compile(r"(`+)(.+?)\1", flags=re.DOTALL)
# `_` only at a word's edge: inside a word (WELCOMEMAT_SECRET) neither renderer reads it as emphasis.
_PROSE_MARKUP = re.compile(r"[\\*\[\]<>&|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_ESCAPES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
_BLOCK_START = re.compile(r"^(\d*)([#+=-]|(?<=\d)\.)")
# A sentence ends at a full stop followed by the end or by a new sentence; `e.g.` does not end one.
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)\.(?=$|\s+[A-Z`(])")


def text(value: str, *, cell: bool = False) -> str:
    """`value` as one line of Markdown that renders to the same words; `cell`: fit for a table cell.

    A table cell must not contain a bare `|`, even inside a code span (GitHub splits the row
    there), so there a code span holding one becomes `<code>` with the pipe as an entity.
    """
    out: list[str] = []
    at = 0
    for match in _CODE_SPAN.finditer(value):
        out.append(_escape_prose(value[at : match.start()]))
        code = match.group(0)
        if cell and "|" in code:
            code = "<code>" + html.escape(match.group(2), quote=False).replace("|", "&#124;") + "</code>"
        out.append(code)
        at = match.end()
    out.append(_escape_prose(value[at:]))
    joined = " ".join("".join(out).split())
    # At a line's start these open a heading, a list, a quote or a rule, not words.
    return _BLOCK_START.sub(lambda m: m.group(1) + "\\" + m.group(2), joined, count=1)


def _escape_prose(value: str) -> str:
    return _PROSE_MARKUP.sub(lambda m: _ESCAPES.get(m.group(0), "\\" + m.group(0)), value)


def paragraphs(docstring: str) -> list[str]:
    """A docstring's paragraphs, each as one line of escaped Markdown; indented blocks stay code."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", docstring.strip()):
        lines = block.splitlines()
        if all(line.startswith("    ") for line in lines):
            out.append("\n".join(lines))
        else:
            out.append(text(" ".join(line.strip() for line in lines)))
    return out


def first_sentence(docstring: str) -> str:
    """The first sentence of a docstring's first paragraph, unescaped."""
    paragraph = " ".join(re.split(r"\n\s*\n", docstring.strip(), maxsplit=1)[0].split())
    # Full stops inside code spans (`cli.main`) are not a sentence's end: look outside them only.
    masked = _CODE_SPAN.sub(lambda m: "x" * len(m.group(0)), paragraph)
    end = _SENTENCE_END.search(masked)
    return paragraph if end is None else paragraph[: end.end()]


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table of cells that are already Markdown (see `text(..., cell=True)`)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def slug(heading: str) -> str:
    """The anchor MkDocs and GitHub give a heading of plain words, dots, slashes and hyphens."""
    words = re.sub(r"[^\w\s-]", "", heading).strip().lower()
    return re.sub(r"[-\s]+", "-", words)
