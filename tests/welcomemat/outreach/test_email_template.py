"""A sequencer template filled with an export row: never raises, never leaves a `{{`, escapes only HTML."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from welcomemat.outreach.email_template import (
    MAX_FILTERS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TEMPLATE_BYTES,
    IssueKind,
    TemplateError,
    parse_template,
)
from welcomemat.security.markup import escape

NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True)
BRACELESS = st.text(st.characters(blacklist_characters="{}", blacklist_categories=("Cs",)), max_size=30)
HOSTILE = st.text(alphabet=st.sampled_from(list("{}%|:\"' ab_\n<&>")), max_size=200)


@given(text=HOSTILE | st.text(max_size=300), values=st.dictionaries(NAMES, st.text(max_size=20)))
def test_any_text_parses_or_is_refused_with_its_line_and_never_renders_a_marker(
    text: str, values: dict[str, str]
) -> None:
    try:
        template = parse_template(text, source="t.txt")
    except TemplateError as exc:
        assert str(exc).startswith("t.txt"), exc
        return
    for html in (False, True):
        rendered = parse_template(text, html=html).render(values)
        assert "{{" not in rendered.text
        assert "{%" not in rendered.text
    # With no columns at all, every variable is flagged.
    assert set(template.variables) == {i.variable for i in template.render({}).issues}


@given(
    pieces=st.lists(st.tuples(BRACELESS, NAMES), max_size=8),
    tail=BRACELESS,
    values=st.dictionaries(NAMES, BRACELESS.filter(bool)),
)
def test_plain_text_values_go_in_as_they_are_and_html_ones_through_the_one_escaper(
    pieces: list[tuple[str, str]], tail: str, values: dict[str, str]
) -> None:
    pieces = [(text.replace("%", ""), name) for text, name in pieces]  # no `{%` can form
    source = "".join(f"{text}{{{{ {name} }}}}" for text, name in pieces) + tail
    for html in (False, True):
        rendered = parse_template(source, html=html).render(values)
        fill = (lambda v: str(escape(v))) if html else (lambda v: v)
        assert rendered.text == "".join(text + fill(values.get(name, "")) for text, name in pieces) + tail
        flagged = {i.variable for i in rendered.issues}
        assert flagged == {name for _, name in pieces if name not in values}
        assert all(i.kind is IssueKind.UNKNOWN for i in rendered.issues)


def test_a_default_fills_an_empty_cell_and_an_empty_cell_without_one_is_flagged() -> None:
    template = parse_template(
        'Hi {{ first_name | default: "there" }},\n{{fact}} at {{ company }}\n{{ firstName }}',
        source="mail.txt",
    )
    rendered = template.render({"first_name": "", "fact": "", "company": "AT&T <Labs>"})
    assert rendered.text == "Hi there,\n at AT&T <Labs>\n"
    assert [(i.line, i.variable, i.kind) for i in rendered.issues] == [
        (2, "fact", IssueKind.EMPTY),
        (3, "firstName", IssueKind.UNKNOWN),
    ]
    html = parse_template("<p>{{ company | default: 'x' }}</p>", html=True).render({"company": "AT&T <Labs>"})
    assert html.text == "<p>AT&amp;T &lt;Labs&gt;</p>" and not html.issues
    single = parse_template("{{ title | default: 'your team' }}").render({"title": ""})
    assert single.text == "your team"


def test_a_value_with_a_brace_never_completes_a_marker() -> None:
    rendered = parse_template("{ {{ a }}{{ b }} }").render({"a": "{", "b": "{x"})
    assert "{{" not in rendered.text


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("Hi\n{{ first_name ", 2, "never closed"),
        ("a\nb\n{{ {{ x }} }}", 3, "do not nest"),
        ("{% if first_name %}x{% endif %}", 1, "block tags"),
        ("\n{{ first_name|there }}", 2, "unsupported filter 'there'"),
        ("{{ first name }}", 1, "not a variable name"),
        ("{{ }}", 1, "not a variable name"),
        ("{{ " + "a" * (MAX_TAG_CHARS + 1) + " }}", 1, "longer than"),
        ("{{ a" + ' | default: "x"' * (MAX_FILTERS + 1) + " }}", 1, "filters"),
        ("{{ a }}" * (MAX_TAGS + 1), 1, f"more than {MAX_TAGS}"),
    ],
)
def test_a_bad_template_is_refused_naming_its_line(text: str, line: int, says: str) -> None:
    with pytest.raises(TemplateError) as refused:
        parse_template(text, source="mail.txt")
    assert refused.value.line == line and says in str(refused.value), str(refused.value)
    assert str(refused.value).startswith(f"mail.txt:{line}")


def test_an_oversized_template_is_refused_before_it_is_read() -> None:
    with pytest.raises(TemplateError, match="larger than"):
        parse_template("x" * (MAX_TEMPLATE_BYTES + 1))
