"""Text put into the generated pages reads the same once Markdown has rendered it."""

from __future__ import annotations

import html
import re

import markdown
from hypothesis import given
from hypothesis import strategies as st

from cli.reference.markdown_text import first_sentence, paragraphs, slug, text

# Letters and the punctuation Markdown gives a meaning to; backticks are code spans, tested apart.
PROSE = st.text(alphabet="ab xyZ019_*|<>&[]()#!\\-.:{}$%", min_size=1, max_size=60).filter(str.strip)


def rendered_text(source: str) -> str:
    out = markdown.markdown(source, extensions=["tables"])
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", out)).split())


@given(PROSE)
def test_a_table_cell_holds_the_text_and_nothing_else(value: str) -> None:
    row = f"| a | b |\n|---|---|\n| x | {text(value, cell=True)} |\n"
    out = markdown.markdown(row, extensions=["tables"])
    cells = re.findall(r"<td>(.*?)</td>", out, flags=re.DOTALL)
    assert len(cells) == 2, out
    assert " ".join(html.unescape(cells[1]).split()) == " ".join(value.split())


@given(PROSE)
def test_a_paragraph_holds_the_text_and_nothing_else(value: str) -> None:
    assert rendered_text(text(value)) == " ".join(value.split())


def test_code_spans_are_kept_and_a_pipe_inside_one_does_not_split_a_cell() -> None:
    assert text("run `a_b *c*` <now>") == "run `a_b *c*` &lt;now&gt;"
    cell = text("`start|stop` or a|b", cell=True)
    out = markdown.markdown(f"| a | b |\n|---|---|\n| x | {cell} |\n", extensions=["tables"])
    assert "<td><code>start|stop</code> or a|b</td>" in html.unescape(out)
    assert "|" not in cell.replace("\\|", "")


def test_the_first_sentence_ends_at_a_full_stop_outside_code() -> None:
    assert first_sentence("Runs `cli.main`. Then more.") == "Runs `cli.main`."
    assert first_sentence("Keys, e.g. `x`, and i.e. y. Next.") == "Keys, e.g. `x`, and i.e. y."
    assert (
        first_sentence("One line\nover two: no full stop\n\nSecond paragraph.")
        == "One line over two: no full stop"
    )


def test_paragraphs_join_lines_and_keep_indented_blocks() -> None:
    assert paragraphs("One\ntwo <x>.\n\n    python -m x > y\n") == [
        "One two &lt;x&gt;.",
        "    python -m x > y",
    ]


def test_slugs_are_the_anchors_markdown_gives_headings() -> None:
    for heading in ("welcomemat guidelines propose", "welcomemat precompute-status", "welcomemat.campaign"):
        out = markdown.markdown(f"## `{heading}`", extensions=["toc"])
        assert f'id="{slug(heading)}"' in out
