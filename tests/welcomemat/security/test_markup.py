"""Hard invariant 1: no generated or record text reaches a page unescaped.

Every XSS corpus payload and hypothesis-generated HTML-ish text goes through `escape`
and `clean_inline` / `render_text`; html5lib (an HTML5-conformant parser, as a browser
parses) checks what the page would contain.
"""

from __future__ import annotations

import itertools
from xml.etree.ElementTree import Element

import html5lib
import jinja2
import markupsafe
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.corpora import corpus_lines
from welcomemat.errors import ContractError
from welcomemat.security import markup
from welcomemat.security.markup import (
    CLEANER_VERSION,
    INLINE_TAGS_MAX,
    CleanedMarkup,
    clean_inline,
    escape,
    markup_to_text,
    render_text,
    validate_markup_allowed,
)

# Expected payload counts (shared/corpora/README.md). Checked so that a truncated or
# emptied corpus cannot turn the parametrised tests below into a vacuous pass.
CORPUS_COUNTS = {"xss/RSNAKE_XSS.txt": 73, "xss/IntrudersXSS.txt": 179, "xss/XSS_Polyglots.txt": 16}
CORPORA = {name: corpus_lines(name) for name in CORPUS_COUNTS}
CASES = [
    pytest.param(s, id=f"{name.split('/')[1]}:{i}/{len(lines)}")
    for name, lines in CORPORA.items()
    for i, s in enumerate(lines, start=1)
]

ALLOWED_SETS = [
    pytest.param(frozenset(), id="none"),
    pytest.param(frozenset({"em", "strong"}), id="em+strong"),
    pytest.param(INLINE_TAGS_MAX, id="max"),
]
ALLOWED_VALUES = [frozenset(), frozenset({"em", "strong"}), INLINE_TAGS_MAX]
SCRIPT = "<script>alert(1)</script>"


def parse(html: str) -> Element:
    frag: Element = html5lib.parseFragment(html, treebuilder="etree", namespaceHTMLElements=False)
    return frag


def elements(html: str) -> list[Element]:
    """Every node below the fragment root: elements, and comments (whose tag is not a str)."""
    return list(parse(html).iter())[1:]


def text_content(html: str) -> str:
    return "".join(parse(html).itertext())


def parser_normalised(text: str) -> str:
    """What the HTML parser does to text itself: CRLF / CR become LF, NUL is dropped
    (the "in body" insertion mode ignores U+0000). Nothing else needed normalising,
    including lone surrogates and noncharacters."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "")


def assert_escaped_roundtrip(text: str) -> None:
    out = escape(text)
    assert isinstance(out, markupsafe.Markup)
    assert elements(str(out)) == [], f"escape({text!r}) produced elements"
    assert text_content(str(out)) == parser_normalised(text)


def assert_only_allowed(html: str, allowed: frozenset[str]) -> None:
    for el in elements(html):
        assert isinstance(el.tag, str), f"comment or processing instruction in {html!r}"
        assert el.tag in allowed, f"<{el.tag}> not in {sorted(allowed)}: {html!r}"
        assert dict(el.attrib) == {}, f"attributes {dict(el.attrib)} in {html!r}"
        assert not any("javascript:" in v.lower() for v in el.attrib.values())


def assert_falls_back(text: str, cleaned: CleanedMarkup | None, allowed: frozenset[str]) -> None:
    out = render_text(text, cleaned, allowed)
    assert out == escape(text)
    assert elements(str(out)) == []


def assert_clean_properties(text: str, allowed: frozenset[str]) -> None:
    cleaned = clean_inline(text, allowed)
    assert_only_allowed(cleaned.html, allowed)
    plain = markup_to_text(cleaned)  # what a zone stores as its text, beside the markup
    out = render_text(plain, cleaned, allowed)
    assert isinstance(out, markupsafe.Markup)
    assert str(out) == cleaned.html, "verified markup must be served as cleaned"

    # Tampered html (stamp kept), tampered stamp, another allowed set, another text:
    # every one of them falls back to escaping the plain text.
    assert_falls_back(plain, CleanedMarkup(html=cleaned.html + SCRIPT, stamp=cleaned.stamp), allowed)
    flipped = cleaned.stamp[:-1] + ("0" if cleaned.stamp[-1] != "0" else "1")
    assert_falls_back(plain, CleanedMarkup(html=cleaned.html, stamp=flipped), allowed)
    other = frozenset() if allowed == INLINE_TAGS_MAX else INLINE_TAGS_MAX
    assert_falls_back(plain, cleaned, other)
    assert_falls_back(plain + SCRIPT, cleaned, allowed)


# --- the corpora ---------------------------------------------------------------------


def test_corpus_counts() -> None:
    counts = {name: len(lines) for name, lines in CORPORA.items()}
    assert counts == CORPUS_COUNTS, f"corpus payload counts changed: {counts}"


@pytest.mark.parametrize("payload", CASES)
def test_corpus_escape_has_no_elements_and_round_trips(payload: str) -> None:
    assert_escaped_roundtrip(payload)


@pytest.mark.parametrize("allowed", ALLOWED_SETS)
@pytest.mark.parametrize("payload", CASES)
def test_corpus_clean_inline(payload: str, allowed: frozenset[str]) -> None:
    assert_clean_properties(payload, allowed)


# --- generated text --------------------------------------------------------------------

HTML_PIECES = [
    *"<>&\"'/=` \t\n\r\x0c\0;:#",
    *"abisx19",
    "script",
    "img",
    "svg",
    "math",
    "a",
    "b",
    "em",
    "strong",
    "i",
    "br",
    "p",
    "style",
    "<",
    "</",
    "/>",
    "<!--",
    "-->",
    "<!",
    "<?",
    "<![CDATA[",
    "]]>",
    "<b>",
    "</b>",
    "<em>",
    "<strong>",
    "<i>",
    "<br/>",
    "</br>",
    "<B>",
    "<EM ",
    "<script>",
    "</script>",
    "<img src=x onerror=alert(1)>",
    "<a href=",
    "<svg/onload=",
    "<math><mi>",
    "<template>",
    "<noscript>",
    "<textarea>",
    "<title>",
    "<xmp>",
    "<plaintext>",
    "<iframe>",
    "<style>",
    "<table>",
    "<select>",
    "<option>",
    "javascript:",
    "jav&#x09;ascript:",
    "JaVaScRiPt:",
    "data:text/html,",
    "vbscript:",
    "onerror=",
    "onload=",
    "href=",
    "src=",
    "style=",
    "&amp;",
    "&lt;",
    "&gt;",
    "&quot;",
    "&#39;",
    "&#60;",
    "&#x3C;",
    "&#x3c",
    "&lt",
    "&nbsp;",
    "&bogus;",
    "&#0;",
    "&#xD800;",
    "&#1114112;",
    "\u2028",
    "\ufeff",
    "\ud800",
    "\U0001f600",
]
html_ish = st.lists(st.sampled_from(HTML_PIECES), max_size=40).map("".join)
any_text = st.text(st.characters(codec=None) | st.characters(categories=["Cs"]), max_size=200)
texts = html_ish | any_text | st.lists(html_ish | any_text, max_size=4).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_generated_escape_has_no_elements_and_round_trips(text: str) -> None:
    assert_escaped_roundtrip(text)


@settings(max_examples=200, deadline=None)
@given(texts)
def test_escape_matches_jinja_autoescape(text: str) -> None:
    # The same escaper family: a template's {{ x }} and escape(x) are byte-identical.
    env = jinja2.Environment(autoescape=True)
    assert env.from_string("{{ x }}").render(x=text) == str(escape(text))


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from(ALLOWED_VALUES))
def test_generated_clean_inline(text: str, allowed: frozenset[str]) -> None:
    assert_clean_properties(text, allowed)


@settings(max_examples=200, deadline=None)
@given(
    st.text(
        st.characters(codec=None, exclude_categories=("Cc", "Cs"), exclude_characters="<&")
        | st.sampled_from("\t\n\r"),
        max_size=200,
    ),
    st.sampled_from(ALLOWED_VALUES),
)
def test_generated_plain_text_survives_cleaning(text: str, allowed: frozenset[str]) -> None:
    # Text without tags, entities or C0 controls reads exactly as written after cleaning.
    cleaned = clean_inline(text, allowed)
    assert text_content(str(render_text(text, cleaned, allowed))) == parser_normalised(text)


# --- readable text, markup that is allowed ------------------------------------------------


@pytest.mark.parametrize("allowed", ALLOWED_SETS)
@pytest.mark.parametrize(
    "text", ["Growth < 5% & rising", "a < b", "a > b", "if x<y then z", "He said \"go\" & 'went'"]
)
def test_plain_readable_text_survives(text: str, allowed: frozenset[str]) -> None:
    out = str(render_text(text, clean_inline(text, allowed), allowed))
    assert elements(out) == []
    assert text_content(out) == text


def test_cleaner_replaces_c0_controls() -> None:
    # bleach turns C0 controls other than tab / LF / CR into "?" (escape keeps them).
    assert clean_inline("0\x0c0\x01", frozenset()).html == "0?0?"


def test_disallowed_tags_are_escaped_not_dropped() -> None:
    # strip=False: the writer's words are never silently removed.
    text = "Press <Ctrl+C> or <p>see</p> <script>x</script>"
    out = str(render_text(text, clean_inline(text, INLINE_TAGS_MAX), INLINE_TAGS_MAX))
    assert elements(out) == []
    assert text_content(out) == text


def test_allowed_inline_markup_is_served() -> None:
    allowed = frozenset({"em", "strong"})
    text = '<em onclick="x()">Big</em> news for <STRONG style="x">Dymaxa</STRONG><br>'
    cleaned = clean_inline(text, allowed)
    assert cleaned.html == "<em>Big</em> news for <strong>Dymaxa</strong>&lt;br&gt;"
    assert markup_to_text(cleaned) == "Big news for Dymaxa<br>"
    assert str(render_text(markup_to_text(cleaned), cleaned, allowed)) == cleaned.html
    # The source text is not what a zone stores: markup is trusted beside its plain text only.
    assert str(render_text(text, cleaned, allowed)) == escape(text)
    assert [el.tag for el in elements(cleaned.html)] == ["em", "strong"]


def test_unclosed_allowed_tag_is_closed_inside_the_zone() -> None:
    cleaned = clean_inline("<b>bold forever", INLINE_TAGS_MAX)
    assert cleaned.html == "<b>bold forever</b>"


# --- the stamp ---------------------------------------------------------------------------


def test_stamp_names_version_and_allowed_set() -> None:
    cleaned = clean_inline("x", frozenset({"strong", "em"}))
    version, tags, digest = cleaned.stamp.split(":")
    assert version == CLEANER_VERSION and "bleach" in CLEANER_VERSION
    assert tags == "em,strong"
    assert len(digest) == 32 and int(digest, 16) >= 0


def test_version_bump_invalidates_old_stamps(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "<em>x</em>"
    cleaned = clean_inline(text, INLINE_TAGS_MAX)
    assert str(render_text("x", cleaned, INLINE_TAGS_MAX)) == cleaned.html
    monkeypatch.setattr(markup, "CLEANER_VERSION", CLEANER_VERSION + "-next")
    assert_falls_back("x", cleaned, INLINE_TAGS_MAX)


def test_cleaned_markup_round_trips_through_json() -> None:
    text = "<em>x</em> & y"
    cleaned = clean_inline(text, INLINE_TAGS_MAX)
    again = CleanedMarkup.model_validate_json(cleaned.model_dump_json())
    assert str(render_text(markup_to_text(again), again, INLINE_TAGS_MAX)) == cleaned.html
    with pytest.raises(ValueError):
        CleanedMarkup.model_validate({"html": "x", "stamp": "y", "trusted": True})


@pytest.mark.parametrize(
    "html, allowed",
    [
        ('<img src=x onerror="alert(1)">', INLINE_TAGS_MAX),
        ("<b onclick=alert(1)>x</b>", INLINE_TAGS_MAX),
        ("<script>alert(1)</script>", INLINE_TAGS_MAX),
        ("<!-- x -->", INLINE_TAGS_MAX),
        ("<b>x</b>", frozenset({"em"})),
        ('say "hi"', INLINE_TAGS_MAX),
    ],
)
def test_forged_but_valid_stamp_cannot_inject(html: str, allowed: frozenset[str]) -> None:
    # The stamp is unkeyed: whoever can write Redis can compute one. The shape check
    # still refuses anything the cleaner would not have produced.
    text = "plain"
    forged = CleanedMarkup(html=html, stamp=markup._stamp(text, html, allowed))
    assert_falls_back(text, forged, allowed)


def test_render_text_never_raises_on_bad_input() -> None:
    good = clean_inline("<em>x</em>", INLINE_TAGS_MAX)
    broken = CleanedMarkup.model_construct(html=None, stamp=5)  # type: ignore[arg-type]  # unvalidated
    assert_falls_back("<em>x</em>", broken, INLINE_TAGS_MAX)
    assert_falls_back("<em>x</em>", good, "em")  # type: ignore[arg-type]
    assert_falls_back("<em>x</em>", good, frozenset({1}))  # type: ignore[arg-type]
    assert_falls_back("<em>x</em>", good, frozenset({"em", "a"}))
    assert_falls_back("<em>x</em>", {"html": good.html, "stamp": good.stamp}, INLINE_TAGS_MAX)  # type: ignore[arg-type]
    assert render_text(None, None, frozenset()) == "None"  # type: ignore[arg-type]


def test_escape_does_not_trust_markup_input() -> None:
    # A string that claims to be safe is still text.
    assert escape(markupsafe.Markup("<b>x</b>")) == "&lt;b&gt;x&lt;/b&gt;"
    cleaned = clean_inline(markupsafe.Markup("<script>x</script>"), frozenset())
    assert elements(cleaned.html) == []


# --- the contract ceiling ----------------------------------------------------------------


@pytest.mark.parametrize("tag", ["a", "script", "img", "span", "p", "u", "style"])
def test_tags_above_the_ceiling_are_refused(tag: str) -> None:
    with pytest.raises(ContractError, match=repr(tag)):
        validate_markup_allowed({tag})
    with pytest.raises(ContractError, match=repr(tag)):
        validate_markup_allowed(["em", tag])
    with pytest.raises(ContractError, match=repr(tag)):
        clean_inline("x", frozenset({tag}))


@pytest.mark.parametrize(
    "subset",
    [
        frozenset(c)
        for n in range(len(INLINE_TAGS_MAX) + 1)
        # Sorted: a set's order changes with the hash seed, and every xdist worker must collect
        # the same tests in the same order.
        for c in itertools.combinations(sorted(INLINE_TAGS_MAX), n)
    ],
    ids=lambda s: "+".join(sorted(s)) or "none",
)
def test_every_subset_of_the_ceiling_passes(subset: frozenset[str]) -> None:
    assert validate_markup_allowed(subset) == subset


def test_tag_names_are_normalised_and_a_bare_string_is_refused() -> None:
    assert validate_markup_allowed(["EM", " strong "]) == frozenset({"em", "strong"})
    with pytest.raises(ContractError, match="list of tag names"):
        validate_markup_allowed("em")
    with pytest.raises(ContractError):
        validate_markup_allowed([None])  # type: ignore[list-item]
