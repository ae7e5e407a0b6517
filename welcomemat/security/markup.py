"""The safety choke point for text that reaches a page (hard invariant 1).

Zone text is plain text. The only markup ever allowed is the inline subset a zone
contract names (at most `INLINE_TAGS_MAX`, never an attribute), cleaned by bleach when
the zone set is *written* (`clean_inline`: far too slow for the request path, so never on
it). The renderer turns zone text into page markup through `render_text` only: it
trusts a `CleanedMarkup` whose stamp verifies and whose html has the cleaner's shape,
and escapes the plain text otherwise. Nothing else in Welcomemat builds `Markup` from
generated or record text.

One escaper: `escape` is `markupsafe.escape`, the function Jinja2 autoescape applies to
every `{{ value }}`, so text escaped here and text escaped by a template are identical.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Iterable

import bleach
import markupsafe
from pydantic import BaseModel, ConfigDict

from welcomemat.errors import ContractError

__all__ = [
    "CLEANER_VERSION",
    "INLINE_TAGS_MAX",
    "CleanedMarkup",
    "clean_inline",
    "escape",
    "markup_to_text",
    "render_text",
    "validate_markup_allowed",
]

# The ceiling of what any zone contract may allow. No attributes ever; links never come
# through markup (they have their own field and the URL allowlist gate).
INLINE_TAGS_MAX: frozenset[str] = frozenset({"b", "strong", "i", "em", "br"})

# Names the cleaning rules. Bump the revision whenever they change (bleach options, the
# post-processing below, the ceiling) so that markup cleaned under old rules stops
# verifying and is escaped instead. bleach's major version is part of it because a new
# major may clean differently. No ':' in it: the stamp uses ':' as separator.
CLEANER_VERSION = f"inline1-bleach{bleach.__version__.split('.')[0]}"

_DIGEST_HEX = 32  # 128 bits of sha256: plenty to catch tampering and stale markup

# What the cleaner's output looks like: text without raw < > & " ', entities, and bare
# lowercase tags. Checked at render time (cheap, linear: possessive quantifiers) because
# the stamp is unkeyed; anyone who can write to Redis could compute one. With this shape
# check a forged stamp can at most bold or italicise text, never add an attribute,
# script, comment or link.
_SHAPE = re.compile(
    r"""(?:[^<>&"']++|&(?:[A-Za-z][A-Za-z0-9]*+|\#[0-9]++|\#[xX][0-9A-Fa-f]++);|</?[a-z]++>)*+"""
)
_TAG = re.compile(r"</?([a-z]+)>")
_ANY_TAG = re.compile(r"<[^>]*>")


def _plain(text: object) -> str:
    # Drop Markup (and any other str subclass or __html__ object): input to this module
    # is always text, whatever it claims about itself.
    return str.__str__(text if isinstance(text, str) else str(text))


def escape(text: str) -> markupsafe.Markup:
    """Escape plain text for HTML (element content or a quoted attribute value).

    Unlike `markupsafe.escape` this never honours `Markup` or `__html__` on its input:
    a string that claims to be safe is escaped like any other.
    """
    return markupsafe.escape(_plain(text))


class CleanedMarkup(BaseModel):
    """Inline html produced by `clean_inline`, with the stamp that proves it.

    Stored with the zone set (it must round-trip through JSON), so pydantic can build
    one from anything; `render_text` trusts it only if the stamp verifies.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    html: str
    stamp: str


def validate_markup_allowed(tags: Iterable[str]) -> frozenset[str]:
    """The inline tags a zone contract asks for, refused if any is above the ceiling.

    Names are matched case-insensitively and returned lowercase (bleach's form).
    """
    if isinstance(tags, str):
        # A bare string would iterate as letters; say what is wrong instead.
        raise ContractError(f"markup allowed must be a list of tag names, got the string {tags!r}")
    allowed: set[str] = set()
    for tag in tags:
        name = tag.strip().lower() if isinstance(tag, str) else None
        if name not in INLINE_TAGS_MAX:
            raise ContractError(
                f"markup tag {tag!r} is not allowed in zone text; "
                f"allowed at most: {', '.join(sorted(INLINE_TAGS_MAX))} (no attributes, no links)"
            )
        allowed.add(name)
    return frozenset(allowed)


def _stamp(text: str, html: str, allowed: frozenset[str]) -> str:
    tags = ",".join(sorted(allowed))
    # The zone's plain text is bound too: markup left over from an earlier text (the text
    # was replaced, the markup not) does not verify. NUL separators cannot occur in the
    # version or tag names, so the fields cannot be shifted into each other.
    material = f"{CLEANER_VERSION}\0{tags}\0{text}\0{html}".encode("utf-8", "surrogatepass")
    return f"{CLEANER_VERSION}:{tags}:{hashlib.sha256(material).hexdigest()[:_DIGEST_HEX]}"


def clean_inline(text: str, allowed: frozenset[str]) -> CleanedMarkup:
    """Clean zone text down to the `allowed` inline tags, without attributes, and stamp it.

    Write path only (precompute). Raises `ContractError` if `allowed` is above the ceiling.
    Disallowed tags are escaped, not stripped: "Press <Ctrl+C>" or "<p>x</p>" stays
    readable as written instead of silently losing words (a changed sentence is worse
    than a visible bracket). "a < b" and "5% & up" survive as text either way.
    """
    allowed = validate_markup_allowed(allowed)
    text = _plain(text)
    html = str(
        bleach.clean(text, tags=allowed, attributes={}, protocols=[], strip=False, strip_comments=True)
    )
    # Output holds no attributes, so every quote is text: escape it like MarkupSafe does,
    # so the result is safe even if someone drops it into a quoted attribute.
    html = html.replace('"', "&#34;").replace("'", "&#39;")
    # The stamp binds the plain text the zone will store beside it (`markup_to_text`), which
    # is what the renderer passes back to `render_text`.
    return CleanedMarkup(html=html, stamp=_stamp(_text_of(html), html, allowed))


def _text_of(markup_html: str) -> str:
    return html.unescape(_ANY_TAG.sub("", markup_html))


def markup_to_text(cleaned: CleanedMarkup) -> str:
    """The plain text of cleaned inline markup: what a zone stores as its `text` (for JSON,
    the snippet and plain exports) and passes back to `render_text`."""
    return _text_of(cleaned.html)


def render_text(text: str, cleaned: CleanedMarkup | None, allowed: frozenset[str]) -> markupsafe.Markup:
    """The one way zone text becomes page markup. Never raises.

    `cleaned.html` is used only if its stamp verifies for this text, html, cleaner
    version and allowed set, and the html has the cleaner's shape (only tags in
    `allowed`, no attributes). Otherwise the plain text is escaped. Cost: one sha256 and
    one regex over a short string; no bleach on this path.
    """
    try:
        if (
            isinstance(cleaned, CleanedMarkup)
            and isinstance(cleaned.html, str)
            and isinstance(cleaned.stamp, str)
            and isinstance(text, str)
        ):
            tags = frozenset(allowed)
            if (
                tags <= INLINE_TAGS_MAX
                and cleaned.stamp == _stamp(_plain(text), cleaned.html, tags)
                and _SHAPE.fullmatch(cleaned.html) is not None
                and all(tag in tags for tag in _TAG.findall(cleaned.html))
            ):
                return markupsafe.Markup(_plain(cleaned.html))
    except Exception:  # any doubt means plain escaped text
        pass
    try:
        return escape(text)
    except Exception:  # an unprintable object: show nothing rather than fail
        return markupsafe.Markup("")
