"""The one signer of Welcomemat tokens: e-mail links (`?wm=`), direct-mail QR codes, cookies,
the view tokens the snippet's beacons carry, the click tokens of hosted pages' CTAs and the
admin sign-in links (`welcomemat admin invite`).

Invariant 6 (DESIGN.md): a token is HMAC-signed, bound to tenant + campaign + account
(+ optional contact), expires, and survives key rotation. A token for one tenant or
campaign never authorises another's content. Nothing here returns claims without
verifying them first: there is no "peek" (`claimed_scope` is a routing hint, never a claim).

The format, byte for byte (payload, compression, key derivation per kind, signature, key
rotation, the limits checked before any work): docs/reference/tokens.md. It is built here
with the standard library alone; tests/welcomemat/security/token_vectors.json holds tokens
issued by earlier versions, which must go on verifying.
"""

from __future__ import annotations

import binascii
import enum
import functools
import hashlib
import hmac
import json
import re
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, NotRequired, Protocol, TypedDict, TypeVar, Unpack

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints, ValidationError

from welcomemat.arms import Arm
from welcomemat.errors import (
    ConfigError,
    InputError,
    TokenBadSignature,
    TokenExpired,
    TokenFromFuture,
    TokenMalformed,
)
from welcomemat.ids import ID_PATTERN, is_valid_id
from welcomemat.settings import MIN_SECRET_CHARS, SECRET_ENV_VAR, check_secret_keys, secret_keys

__all__ = [
    "CLOCK_SKEW_S",
    "DEFAULT_CLICK_TTL_S",
    "DEFAULT_COOKIE_TTL_S",
    "DEFAULT_INVITE_TTL_S",
    "DEFAULT_LINK_TTL_S",
    "DEFAULT_QR_TTL_S",
    "DEFAULT_TTL_S",
    "DEFAULT_VIEW_TTL_S",
    "ID_PATTERN",
    "MAX_TOKEN_CHARS",
    "MAX_TTL_S",
    "MAX_VIEW_TOKEN_CHARS",
    "MAX_ZONE_SET_VERSION",
    "MIN_SECRET_CHARS",
    "SECRET_ENV_VAR",
    "VIEW_RUNGS",
    "ClickClaims",
    "InviteClaims",
    "PageClickTemplates",
    "TokenClaims",
    "TokenKind",
    "TokenSigner",
    "ViewClaims",
    "ViewTokenFields",
    "ViewTokenTemplate",
    "claimed_scope",
]

_DAY_S: Final = 24 * 60 * 60

#: Tolerated clock difference between the machine that signed and the one that verifies,
#: in seconds. A token issued further in the future than this is refused (TokenFromFuture).
CLOCK_SKEW_S: Final = 60
#: Email link (`?wm=`) lifetime, in seconds: 30 days, long enough for a sequence.
DEFAULT_LINK_TTL_S: Final = 30 * _DAY_S
#: Direct-mail QR lifetime, in seconds: 120 days (mailers sit on desks for months).
DEFAULT_QR_TTL_S: Final = 120 * _DAY_S
#: First-party cookie lifetime, in seconds: 90 days.
DEFAULT_COOKIE_TTL_S: Final = 90 * _DAY_S
#: View token lifetime, in seconds: 6 hours. Beacons (a view, a click) come within a visit;
#: a tab left open longer than this sends beacons that are refused (and counted).
DEFAULT_VIEW_TTL_S: Final = 6 * 60 * 60
#: Click token lifetime, in seconds: the view token's. A CTA clicked later still lands (on the
#: campaign's default CTA) but is not counted, as a beacon of an expired view is not.
DEFAULT_CLICK_TTL_S: Final = DEFAULT_VIEW_TTL_S
#: Admin sign-in link (invite) lifetime, in seconds: 15 minutes (it is also used once only).
DEFAULT_INVITE_TTL_S: Final = 15 * 60
#: Longest lifetime any token may be signed with, in seconds: 366 days.
MAX_TTL_S: Final = 366 * _DAY_S
#: Longest identity token (link, QR, cookie) accepted, in characters; longer input is refused
#: before any work. Four ids of 64 characters and two times fit (tested).
MAX_TOKEN_CHARS: Final = 512
#: Longest view or click token accepted, in characters: they carry up to seven ids (tenant,
#: campaign, account, contact, view, variant; a click token's zone and CTA too), a version of
#: at most MAX_ZONE_SET_VERSION and two times, never compressed. The longest fits (tested).
MAX_VIEW_TOKEN_CHARS: Final = 1024
#: Highest zone-set version a view token carries (versions count publishes of one account).
MAX_ZONE_SET_VERSION: Final = 10**15
_B64_RE: Final = re.compile(r"[A-Za-z0-9_-]+")
_TOKEN_CHARS: Final = re.compile(r"[A-Za-z0-9_.-]+")
#: A view id: URL-safe base64 characters (what `secrets.token_urlsafe` makes).
_VIEW_ID_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: The rungs a view token may name: the ladder's, and `plain` (fail closed, no copy).
VIEW_RUNGS: Final = frozenset({"personal", "segment", "default", "plain"})
#: The salt of view and click tokens; an identity token's is `welcomemat.<kind>`. Each salt
#: derives keys of its own (`_derive_key`), so a token of one never verifies as another.
_VIEW_SALT: Final = "welcomemat.view"
_CLICK_SALT: Final = "welcomemat.click"
#: View and click templates a signer remembers, but for the visitor's ids
#: (`TokenSigner._view_like_template`): a hosted page signs a click token per CTA on every
#: view, and the views of one page differ only in the visitor, the view id and the times.
#: A few thousand entries of ~0.5 KiB each.
_TEMPLATES_REMEMBERED: Final = 4096
_INVITE_SALT: Final = "welcomemat.invite"
#: What the key derivation puts between salt and key (the Django-style "concat" scheme the
#: first tokens were signed with; changing it would void every token already issued).
_KEY_DERIVATION_INFIX: Final = b"signer"
#: HMAC-SHA256 is 32 bytes: 43 base64url characters without padding.
_SIGNATURE_CHARS: Final = 43
#: Most bytes a compressed payload is inflated to: no token payload is this long (at most
#: MAX_TOKEN_CHARS characters of base64 for ~3/4 as many bytes), so a zlib bomb stops here.
_MAX_INFLATED_BYTES: Final = MAX_TOKEN_CHARS * 8

_Id = Annotated[str, StringConstraints(strict=True, pattern=ID_PATTERN)]


class TokenKind(enum.StrEnum):
    """What a token is for. Each kind has its own salt: tokens never cross kinds."""

    LINK = "link"
    QR = "qr"
    COOKIE = "cookie"


DEFAULT_TTL_S: Final[Mapping[TokenKind, int]] = {
    TokenKind.LINK: DEFAULT_LINK_TTL_S,
    TokenKind.QR: DEFAULT_QR_TTL_S,
    TokenKind.COOKIE: DEFAULT_COOKIE_TTL_S,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenClaims:
    """What a verified token says. Only :meth:`TokenSigner.verify` hands these out.

    Checked when made: ids as `welcomemat.ids` defines them, times ints (not bools) >= 0, the
    kind a `TokenKind` member; anything else is ValueError naming the field. A dataclass
    checked by hand, not a pydantic model: one is made on every first click and first scan,
    where pydantic-core's validator, cold by the time a request reaches it, cost ~7 µs of the
    event loop's ~125 (these checks: ~1 µs; bench/README.md, "Figures behind choices in the code").
    """

    kind: TokenKind
    tenant: str
    campaign: str
    account: str
    contact: str | None = None
    #: Unix seconds.
    issued_at: int
    #: Unix seconds; the token is refused from this instant on.
    expires_at: int

    def __post_init__(self) -> None:
        if self.kind.__class__ is not TokenKind:
            raise ValueError(f"kind: {self.kind!r} is not a TokenKind")
        if not is_valid_id(self.tenant):
            raise ValueError(f"tenant: {self.tenant!r} is not an opaque id")
        if not is_valid_id(self.campaign):
            raise ValueError(f"campaign: {self.campaign!r} is not an opaque id")
        if not is_valid_id(self.account):
            raise ValueError(f"account: {self.account!r} is not an opaque id")
        if self.contact is not None and not is_valid_id(self.contact):
            raise ValueError(f"contact: {self.contact!r} is not an opaque id")
        # `__class__ is int`: a bool is an int to isinstance, and JSON's true is no time.
        if self.issued_at.__class__ is not int or self.issued_at < 0:
            raise ValueError(f"issued_at: {self.issued_at!r} is not Unix seconds")
        if self.expires_at.__class__ is not int or self.expires_at < 0:
            raise ValueError(f"expires_at: {self.expires_at!r} is not Unix seconds")


class ViewClaims(BaseModel):
    """What a verified view token says. Only :meth:`TokenSigner.verify_view` hands these out."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: _Id
    campaign: _Id
    view_id: Annotated[str, StringConstraints(strict=True, pattern=_VIEW_ID_RE.pattern)]
    arm: Arm
    #: The most personal rung among the zones served with this view.
    rung: str
    account: _Id | None = None
    contact: _Id | None = None
    zone_set_version: StrictInt | None = Field(default=None, ge=1)
    #: The copy variant of that zone set (`welcomemat.campaign.experiments`), when it has one.
    variant: _Id | None = None
    #: Unix seconds.
    issued_at: StrictInt = Field(ge=0)
    #: Unix seconds; the token is refused from this instant on.
    expires_at: StrictInt = Field(ge=0)


class ClickClaims(ViewClaims):
    """What a verified click token says: its view's claims, and the zone and CTA clicked.
    Only :meth:`TokenSigner.verify_click` hands these out."""

    zone: _Id
    cta: _Id


class InviteClaims(BaseModel):
    """What a verified admin invite token says: the id of the invite record it stands for
    (`welcomemat.security.people`). Only :meth:`TokenSigner.verify_invite` hands these out."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    invite_id: _Id
    #: Unix seconds.
    issued_at: StrictInt = Field(ge=0)
    #: Unix seconds; the token is refused from this instant on.
    expires_at: StrictInt = Field(ge=0)


_V = TypeVar("_V", bound=ViewClaims)


_URLSAFE_B64: Final = bytes.maketrans(b"+/", b"-_")


def _b64url(data: bytes) -> bytes:
    """base64url without padding (`base64.urlsafe_b64encode(data).rstrip(b"=")`, one C call each)."""
    return binascii.b2a_base64(data, newline=False).translate(_URLSAFE_B64, b"=")


def _check_id(field: str, value: object) -> str:
    if not is_valid_id(value):
        raise InputError(
            f"{value!r} is not an opaque id: 1-64 characters of A-Z a-z 0-9 _ . -, "
            "starting with a letter or digit (no e-mail addresses or names)",
            field=field,
        )
    return value


def _check_ttl(ttl_s: object) -> None:
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, int) or not 0 < ttl_s <= MAX_TTL_S:
        raise InputError(
            f"TTL {ttl_s!r} must be a whole number of seconds from 1 to {MAX_TTL_S} (366 days)",
            field="ttl_s",
        )


_FROM_URLSAFE: Final = bytes.maketrans(b"-_", b"+/")


def _b64url_decode(data: bytes) -> bytes:
    """base64url text without padding, decoded (one C call; the callers have checked the
    characters); ValueError (binascii.Error) when it does not decode."""
    return binascii.a2b_base64((data + b"=" * (-len(data) % 4)).translate(_FROM_URLSAFE))


def _derive_key(salt: str, secret: str) -> bytes:
    """The HMAC key for tokens under `salt` signed with `secret`: SHA-256 of salt, "signer"
    and secret, each UTF-8 (docs/reference/tokens.md, "Keys")."""
    return hashlib.sha256(salt.encode("utf-8") + _KEY_DERIVATION_INFIX + secret.encode("utf-8")).digest()


class _MacState(Protocol):
    """A keyed HMAC-SHA256 state: `hmac.HMAC`, or the OpenSSL state it wraps."""

    def copy(self) -> _MacState: ...

    def update(self, data: bytes, /) -> None: ...

    def digest(self) -> bytes: ...


def _prepared_macs(salt: str, secrets: Sequence[str]) -> list[_MacState]:
    """An HMAC-SHA256 state keyed for each secret under `salt`, in the secrets' order (newest
    first). Keyed once per process: a copied state costs about half of `hmac.digest`, which
    sets up OpenSSL 3's HMAC afresh on each call, and the key derivation is not repeated.

    The state kept is OpenSSL's own (`hmac.HMAC._hmac`, which `hmac.new` builds for SHA-256
    wherever OpenSSL has it): its `copy`, `update` and `digest` are C calls, where
    `hmac.HMAC`'s wrap each in Python (0.7 µs a token less, and a first click signs three).
    Where `hmac` fell back to its own construction, `_hmac` is None and the `hmac.HMAC` is
    kept: the same three methods, the same digests (tests compare both)."""
    states: list[_MacState] = []
    for secret in secrets:
        mac = hmac.new(_derive_key(salt, secret), digestmod=hashlib.sha256)
        states.append(getattr(mac, "_hmac", None) or mac)
    return states


def _canonical_signature(signature: str) -> bytes | None:
    """The signature's bytes, if `signature` is base64url that decodes and re-encodes to itself.

    Python's decoder ignores the spare low bits of the last character, so several strings
    decode to the same signature; only the canonical one is accepted, which makes exactly
    one token string valid for a given payload.
    """
    encoded = signature.encode("ascii")
    try:
        raw = _b64url_decode(encoded)
    except ValueError:
        return None
    return raw if _b64url(raw) == encoded else None


_JSON: Final = json.JSONDecoder()
#: Payloads parsed lately, by their encoded form: a QR scan's or a beacon's token is read
#: for its claimed scope (`claimed_scope`) and then, after its signature, by the verifier.
_PAYLOADS_REMEMBERED: Final = 64


@functools.lru_cache(maxsize=_PAYLOADS_REMEMBERED)
def _load_payload(body: bytes) -> Any:
    """The JSON of a token's payload part (`.`-prefixed: zlib-compressed), bounded; ValueError
    or zlib.error when it does not decode.

    Remembered for the last few bodies (an error is not): the second reading of a token costs
    no inflating and no parsing. Callers only read the object returned; they never change it.
    JSON text is read as UTF-8, the one encoding a signed payload (ASCII) is ever in.
    """
    compressed = body.startswith(b".")
    raw = _b64url_decode(body[1:] if compressed else body)
    if compressed:  # what lies past the bound is never inflated (nor read)
        raw = zlib.decompressobj().decompress(raw, _MAX_INFLATED_BYTES)
    return _JSON.decode(raw.decode("utf-8"))


def claimed_scope(token: str, *, max_chars: int = MAX_TOKEN_CHARS) -> tuple[str, str] | None:
    """The (tenant, campaign) a token CLAIMS, unverified: a routing hint, never a credential.

    A QR code's path carries only the token, and `TokenSigner.verify` needs the tenant and
    campaign to check it against; this says which ones to try. None when unreadable or longer
    than `max_chars` (MAX_VIEW_TOKEN_CHARS for a view or click token).
    """
    if not isinstance(token, str) or len(token) > max_chars:
        return None
    body, sep, _ = token.rpartition(".")
    if not sep or not body or _TOKEN_CHARS.fullmatch(token) is None:
        return None
    try:
        payload = _load_payload(body.encode("ascii"))
    except (ValueError, zlib.error):  # UnicodeDecodeError is a ValueError
        return None
    if not isinstance(payload, dict):
        return None
    tenant, campaign = payload.get("t"), payload.get("c")
    return (tenant, campaign) if is_valid_id(tenant) and is_valid_id(campaign) else None


class ViewTokenFields(TypedDict):
    """What a view token says besides its view id and times (`TokenSigner.view_template`)."""

    tenant: str
    campaign: str
    arm: Arm
    rung: str
    account: NotRequired[str | None]
    contact: NotRequired[str | None]
    zone_set_version: NotRequired[int | None]
    variant: NotRequired[str | None]
    ttl_s: NotRequired[int]


def _template_parts(
    click: tuple[str, str] | None,
    tenant: str,
    campaign: str,
    arm: Arm,
    rung: str,
    zone_set_version: int | None,
    variant: str | None,
    ttl_s: int,
    /,
) -> tuple[str, str, str]:
    """The compact JSON of a view or click token around its view id and visitor, every field
    checked (InputError naming a bad one): (up to the view id, from the view id to the
    visitor's ids, from those to the issue time).

    Every string written was just checked to be an id, an arm or a rung (the view id is
    checked by `ViewTokenTemplate.sign`, the account and contact by the caller): letters,
    digits and `_ . -` only, nothing JSON escapes. So the JSON is written directly, in the key
    order and form `json.dumps(separators=(",", ":"))` gives (what `verify_view` parses; tests
    compare the two), at a fraction of the encoder's cost: this runs for every page view.
    """
    extra = ""
    if click is not None:
        extra = f',"z":"{_check_id("zone", click[0])}","k":"{_check_id("cta", click[1])}"'
    tenant, campaign = _check_id("tenant", tenant), _check_id("campaign", campaign)
    try:
        arm_value = arm.value if isinstance(arm, Arm) else Arm(arm).value
    except ValueError:
        raise InputError(f"{arm!r} is not an arm", field="arm") from None
    if rung not in VIEW_RUNGS:
        raise InputError(f"{rung!r} is not a rung ({', '.join(sorted(VIEW_RUNGS))})", field="rung")
    _check_ttl(ttl_s)
    after = ""
    if zone_set_version is not None:
        if (
            isinstance(zone_set_version, bool)
            or not isinstance(zone_set_version, int)
            or not 1 <= zone_set_version <= MAX_ZONE_SET_VERSION
        ):
            raise InputError(
                f"zone-set version {zone_set_version!r} is not an integer from 1 to {MAX_ZONE_SET_VERSION}",
                field="zone_set_version",
            )
        after = f',"v":{int(zone_set_version)}'
    if variant is not None:
        after += f',"x":"{_check_id("variant", variant)}"'
    return (
        f'{{"t":"{tenant}","c":"{campaign}","w":"',
        f'","m":"{arm_value}","r":"{rung}"',
        f'{after}{extra},"i":',
    )


def _visitor_part(account: str | None, contact: str | None) -> str:
    """The visitor's ids in a view or click token's JSON, checked (InputError naming a bad
    one): they go between the rung and the version, in the order `json.dumps` keeps."""
    visitor = ""
    if account is not None:
        visitor = f',"a":"{_check_id("account", account)}"'
    if contact is not None:
        visitor += f',"p":"{_check_id("contact", contact)}"'
    return visitor


class ViewTokenTemplate:
    """A view token with its view id and times left open (`TokenSigner.view_template`);
    `sign(view_id)` completes and signs it, issued now."""

    __slots__ = ("_clock", "_head", "_mac", "_tail", "_ttl_s")

    def __init__(
        self, *, head: str, tail: str, ttl_s: int, mac: _MacState, clock: Callable[[], float]
    ) -> None:
        self._head, self._tail, self._ttl_s, self._mac, self._clock = head, tail, ttl_s, mac, clock

    def sign(self, view_id: str) -> str:
        """The token for `view_id` (1-64 URL-safe characters, else InputError), issued now."""
        if not isinstance(view_id, str) or _VIEW_ID_RE.fullmatch(view_id) is None:
            raise InputError(f"view id {view_id!r} is not 1-64 URL-safe characters", field="view_id")
        issued_at = int(self._clock())
        payload = f'{self._head}{view_id}{self._tail}{issued_at},"e":{issued_at + self._ttl_s}}}'
        # Compact JSON, base64url, "." and the HMAC-SHA256 of that under the derived key: a
        # view or click token is never compressed (it is not printed, and read on every beacon).
        body = _b64url(payload.encode("ascii"))
        mac = self._mac.copy()  # the key's prepared state, copied
        mac.update(body)
        token = (body + b"." + _b64url(mac.digest())).decode("ascii")
        if len(token) > MAX_VIEW_TOKEN_CHARS:  # pragma: no cover - the longest ids still fit (tested)
            raise AssertionError(f"signed token is {len(token)} characters, over {MAX_VIEW_TOKEN_CHARS}")
        return token


class PageClickTemplates:
    """The click-token templates of one page's CTAs, for any of its visitors
    (`TokenSigner.page_click_templates`): every field but the visitor's was checked once, for
    the page; `for_visitor` adds the visitor's ids. A send's first clicks are each a new
    visitor of a page already served: they cost two id checks and a template per CTA, not
    every field's checks per CTA (a first click's templates: ~12 µs of the event loop's CPU
    in process before, ~8 after; `bench/ablate.py`)."""

    __slots__ = ("_clock", "_mac", "_parts", "_ttl_s")

    def __init__(
        self,
        parts: tuple[tuple[str, str, str] | None, ...],
        *,
        ttl_s: int,
        mac: _MacState,
        clock: Callable[[], float],
    ) -> None:
        self._parts, self._ttl_s, self._mac, self._clock = parts, ttl_s, mac, clock

    def for_visitor(self, account: str | None, contact: str | None) -> tuple[ViewTokenTemplate | None, ...]:
        """Each CTA's template for this visitor, in page order (None: a CTA whose zone or CTA
        id a token cannot carry). Bad account or contact id: InputError naming it."""
        visitor = _visitor_part(account, contact)
        return tuple(
            None
            if parts is None
            else ViewTokenTemplate(
                head=parts[0],
                tail=parts[1] + visitor + parts[2],
                ttl_s=self._ttl_s,
                mac=self._mac,
                clock=self._clock,
            )
            for parts in self._parts
        )


class TokenSigner:
    """Signs and verifies link, QR and cookie tokens, view and click tokens, and admin invites.

    ``secrets``: newest first. The first signs; every one verifies (key rotation: prepend
    the new key, keep the old ones until the tokens they signed have expired).
    ``clock``: returns Unix seconds; injectable for tests.
    """

    def __init__(self, secrets: Sequence[str], *, clock: Callable[[], float] = time.time) -> None:
        if isinstance(secrets, str | bytes):
            raise ConfigError(
                f"{SECRET_ENV_VAR}: pass the secrets as a list (newest first); "
                "use TokenSigner.from_setting() for a comma-separated value"
            )
        keys = list(secrets)
        check_secret_keys(keys)  # UTF-8 text, long enough; names a key by position, never its value
        self._clock = clock
        # Signing and checking run on every first click (a link verified, a cookie signed), every
        # /v1/zones answer (a view token signed) and every beacon (one verified): each key's
        # HMAC state is derived and keyed here, once, newest first, and copied per token.
        self._macs: dict[TokenKind, list[_MacState]] = {
            kind: _prepared_macs(f"welcomemat.{kind.value}", keys) for kind in TokenKind
        }
        self._view_macs = _prepared_macs(_VIEW_SALT, keys)
        # (key state, click ids, fields as given but the visitor's) -> the checked JSON around
        # the view id and visitor (`_template_parts`), oldest first; only what passed is kept.
        self._template_parts: OrderedDict[tuple[object, ...], tuple[str, str, str]] = OrderedDict()
        self._click_macs = _prepared_macs(_CLICK_SALT, keys)
        self._invite_macs = _prepared_macs(_INVITE_SALT, keys)

    @classmethod
    def from_setting(cls, value: str | None, *, clock: Callable[[], float] = time.time) -> TokenSigner:
        """Build from the ``WELCOMEMAT_SECRET`` value: comma-separated, newest first.

        Blank entries and surrounding whitespace are ignored. Unset or blank: ConfigError.
        """
        if value is None:
            raise ConfigError(
                f"{SECRET_ENV_VAR} is not set: set it to a secret of {MIN_SECRET_CHARS}+ "
                "characters (comma-separated for rotation, first signs)"
            )
        return cls(list(secret_keys(value)), clock=clock)

    def _lifetime(self, ttl_s: int) -> tuple[int, int]:
        """(issued at, expires at) for a token living `ttl_s`; InputError on a bad TTL."""
        _check_ttl(ttl_s)
        issued_at = int(self._clock())
        return issued_at, issued_at + ttl_s

    def sign(
        self,
        kind: TokenKind,
        *,
        tenant: str,
        campaign: str,
        account: str,
        contact: str | None = None,
        ttl_s: int,
        compress: bool | None = None,
    ) -> str:
        """A URL-safe token for this kind, bound to tenant + campaign + account (+ contact).

        `compress`: the zlib form when it is shorter (by 2+ bytes); None (the default) decides
        by kind. A QR token is compressed: it is printed, and for long ids the
        characters saved (up to ~30 of ~200) keep its code a version smaller (57 modules a
        side, not 61), easier to scan. Links and cookies are not: a link's length does not
        matter in an e-mail, and reading a compressed token costs the renderer a zlib stream
        on every first click (~3 µs of the event loop's CPU in a request, for ~7 characters of
        ~170; bench/README.md, "Figures behind choices in the code").
        Both forms are the same format, and every verifier reads both.
        Bad ids or TTL: InputError naming the field.
        """
        if kind.__class__ is not TokenKind:  # a member as it is, with no enum call (hot path)
            kind = TokenKind(kind)
        _check_id("tenant", tenant)
        _check_id("campaign", campaign)
        _check_id("account", account)
        if contact is not None:
            _check_id("contact", contact)
        return self._sign_ids(kind, tenant, campaign, account, contact, ttl_s, compress)

    def reissue(self, claims: TokenClaims, kind: TokenKind, *, ttl_s: int) -> str:
        """A token of `kind` for the subject of `claims` (the same tenant, campaign, account and
        contact), issued now and living `ttl_s`: the cookie a link's or QR code's first visit
        earns (`server.identify.Identifier.arrival_cookie`).

        `claims` are what `verify` returned: every id in them was checked when they were made
        (`TokenClaims` validates each field), so `sign`'s checks are not repeated (four regular
        expressions on every first click). Anything but `TokenClaims` is refused (TypeError);
        a bad TTL is InputError.
        """
        if claims.__class__ is not TokenClaims:
            raise TypeError(f"reissue takes the TokenClaims verify returned, not {type(claims).__name__}")
        if kind.__class__ is not TokenKind:
            kind = TokenKind(kind)
        return self._sign_ids(
            kind, claims.tenant, claims.campaign, claims.account, claims.contact, ttl_s, None
        )

    def _sign_ids(
        self,
        kind: TokenKind,
        tenant: str,
        campaign: str,
        account: str,
        contact: str | None,
        ttl_s: int,
        compress: bool | None,
    ) -> str:
        """`sign`'s token, for ids already known to be ids."""
        if compress is None:
            compress = kind is TokenKind.QR
        person = "" if contact is None else f',"p":"{contact}"'
        issued_at, expires_at = self._lifetime(ttl_s)
        # Compact JSON (`json.dumps(separators=(",", ":"))`), written directly: every string is
        # an id (nothing JSON escapes), the times are ints; tests compare.
        raw = (
            f'{{"t":"{tenant}","c":"{campaign}","a":"{account}"{person},"i":{issued_at},"e":{expires_at}}}'
        ).encode("ascii")
        # The zlib form, marked by a leading ".", only when it saves 2 bytes or more.
        compressed = zlib.compress(raw) if compress else raw
        body = b"." + _b64url(compressed) if len(compressed) < len(raw) - 1 else _b64url(raw)
        mac = self._macs[kind][0].copy()  # the newest key's prepared state
        mac.update(body)
        token = (body + b"." + _b64url(mac.digest())).decode("ascii")
        if len(token) > MAX_TOKEN_CHARS:  # pragma: no cover - 4 ids of <= 64 chars fit
            raise AssertionError(f"signed token is {len(token)} characters, over {MAX_TOKEN_CHARS}")
        return token

    def verify(self, kind: TokenKind, token: str, *, tenant: str, campaign: str) -> TokenClaims:
        """The claims of a token that is genuine, of this kind, for this tenant and campaign,
        issued not later than now + CLOCK_SKEW_S and not yet expired.

        Raises TokenMalformed, TokenBadSignature (also: wrong kind, wrong key, other
        tenant or campaign), TokenExpired or TokenFromFuture; never anything else for any
        token text.
        """
        if kind.__class__ is not TokenKind:  # a member as it is, with no enum call (hot path)
            kind = TokenKind(kind)
        payload = self._unsign(kind, token)
        claims = self._claims(kind, payload)
        if claims.tenant != tenant:
            raise TokenBadSignature(
                f"{kind.value} token was issued for tenant {claims.tenant!r}, not {tenant!r}"
            )
        if claims.campaign != campaign:
            raise TokenBadSignature(
                f"{kind.value} token was issued for campaign {claims.campaign!r}, not {campaign!r}"
            )
        self._check_times(kind, claims.issued_at, claims.expires_at)  # labelled by `kind` (`_unsign`)
        return claims

    def sign_view(self, *, view_id: str, **fields: Unpack[ViewTokenFields]) -> str:
        """A view token: what the renderer served for one view (see "View tokens" above); the
        fields are `view_template`'s.

        Bad ids, arm, rung, version or TTL: InputError naming the field.
        """
        return self.view_template(**fields).sign(view_id)

    def view_template(
        self,
        *,
        tenant: str,
        campaign: str,
        arm: Arm,
        rung: str,
        account: str | None = None,
        contact: str | None = None,
        zone_set_version: int | None = None,
        variant: str | None = None,
        ttl_s: int = DEFAULT_VIEW_TTL_S,
    ) -> ViewTokenTemplate:
        """Everything of a view token but the view id and the times, checked: a returning
        visitor's answers (`server.known_visitors`) keep it and differ only in those. `sign_view`
        is `view_template(...).sign(view_id)`.

        Bad ids, arm, rung, version or TTL: InputError naming the field.
        """
        fields = (tenant, campaign, arm, rung, account, contact, zone_set_version, variant, ttl_s)
        return self._view_like_template(self._view_macs[0], None, *fields)

    def click_template(
        self,
        *,
        zone: str,
        cta: str,
        tenant: str,
        campaign: str,
        arm: Arm,
        rung: str,
        account: str | None = None,
        contact: str | None = None,
        zone_set_version: int | None = None,
        variant: str | None = None,
        ttl_s: int = DEFAULT_CLICK_TTL_S,
    ) -> ViewTokenTemplate:
        """A click token with its view id and times left open: the view token's fields (as
        `view_template` takes them) and the zone and CTA id of the link; `sign(view_id)`
        completes it. The TTL defaults to `DEFAULT_CLICK_TTL_S`.

        Bad ids, arm, rung, version or TTL: InputError naming the field.
        """
        # The fields by name, not `**fields`, and passed on in order: a hosted page calls this
        # for every CTA of every view, and no dict is then packed and unpacked per call.
        click = (zone, cta)
        fields = (tenant, campaign, arm, rung, account, contact, zone_set_version, variant, ttl_s)
        return self._view_like_template(self._click_macs[0], click, *fields)

    def page_click_templates(
        self,
        clicks: Sequence[tuple[str, str]],
        *,
        tenant: str,
        campaign: str,
        arm: Arm,
        rung: str,
        zone_set_version: int | None = None,
        variant: str | None = None,
        ttl_s: int = DEFAULT_CLICK_TTL_S,
    ) -> PageClickTemplates:
        """The click-token templates of a page's CTAs (`clicks`: each one's zone and CTA id, in
        page order) for any visitor: `click_template`'s, each field checked here, once;
        `for_visitor(account, contact)` gives the templates (what `click_template` gives for
        each CTA with that account and contact).

        A CTA whose zone or CTA id is not an id gets None (its template cannot be made); any
        other bad field (tenant, campaign, arm, rung, version, variant, TTL): InputError naming it.
        """
        fields = (tenant, campaign, arm, rung, zone_set_version, variant, ttl_s)
        found: list[tuple[str, str, str] | None] = []
        for click in clicks:
            ids = is_valid_id(click[0]) and is_valid_id(click[1])
            found.append(_template_parts(click, *fields) if ids else None)
        if not found:  # no CTA: the other fields are still checked, as for any page
            _template_parts(None, *fields)
        return PageClickTemplates(tuple(found), ttl_s=ttl_s, mac=self._click_macs[0], clock=self._clock)

    def _view_like_template(
        self,
        mac: _MacState,
        click: tuple[str, str] | None,
        tenant: str,
        campaign: str,
        arm: Arm,
        rung: str,
        account: str | None,
        contact: str | None,
        zone_set_version: int | None,
        variant: str | None,
        ttl_s: int,
        /,
    ) -> ViewTokenTemplate:
        """`view_template`'s work, for view tokens and (with `click`: zone and CTA id) click
        tokens. What a page's views share (every field but the account and contact) is checked
        once and remembered by the fields as given (their types too: `True` is not `1`); the
        account and contact, new with each visitor of a send, are checked on every call."""
        fields: tuple[object, ...] = (
            mac,
            click,
            tenant,
            campaign,
            arm,
            rung,
            zone_set_version,
            type(zone_set_version),
            variant,
            ttl_s,
            type(ttl_s),
        )
        shared = self._template_parts
        key: tuple[object, ...] | None = fields
        try:
            parts = shared.get(fields)
        except TypeError:  # an unhashable field is no id: the checks name it
            parts, key = None, None
        if parts is None:
            parts = _template_parts(click, tenant, campaign, arm, rung, zone_set_version, variant, ttl_s)
            if key is not None:
                if len(shared) >= _TEMPLATES_REMEMBERED:
                    shared.popitem(last=False)
                shared[key] = parts
        head, before_visitor, after_visitor = parts
        return ViewTokenTemplate(
            head=head,
            tail=before_visitor + _visitor_part(account, contact) + after_visitor,
            ttl_s=ttl_s,
            mac=mac,  # the newest key's prepared state
            clock=self._clock,
        )

    def verify_view(self, token: str, *, tenant: str, campaign: str) -> ViewClaims:
        """The claims of a genuine view token for this tenant and campaign, issued not later
        than now + CLOCK_SKEW_S and not yet expired.

        Raises TokenMalformed, TokenBadSignature (also: an identity token, wrong key, other
        tenant or campaign), TokenExpired or TokenFromFuture; never anything else.
        """
        payload = self._unsign_view(token)
        claims = self._view_claims("view", ViewClaims, payload, {})
        self._check_scope("view", claims, tenant, campaign)
        return claims

    def verify_click(self, token: str, *, tenant: str, campaign: str) -> ClickClaims:
        """The claims of a genuine click token for this tenant and campaign, issued not later
        than now + CLOCK_SKEW_S and not yet expired.

        Raises TokenMalformed, TokenBadSignature (also: a view or identity token, wrong key,
        other tenant or campaign), TokenExpired or TokenFromFuture; never anything else.
        """
        payload = self._unsign_keyed("click", self._click_macs, token, MAX_VIEW_TOKEN_CHARS)
        claims = self._view_claims("click", ClickClaims, payload, {"z": "zone", "k": "cta"})
        self._check_scope("click", claims, tenant, campaign)
        return claims

    def sign_invite(self, invite_id: str, *, ttl_s: int = DEFAULT_INVITE_TTL_S) -> str:
        """An admin sign-in token for the invite record `invite_id`, issued now.

        The token carries the record's id only (who, which tenant, which role are in the record,
        which is deleted when it is used). Bad id or TTL: InputError naming the field.
        """
        issued_at, expires_at = self._lifetime(ttl_s)
        # Compact JSON written directly: the id was just checked (nothing JSON escapes).
        raw = f'{{"n":"{_check_id("invite", invite_id)}","i":{issued_at},"e":{expires_at}}}'
        body = _b64url(raw.encode("ascii"))
        mac = self._invite_macs[0].copy()
        mac.update(body)
        return (body + b"." + _b64url(mac.digest())).decode("ascii")

    def verify_invite(self, token: str) -> InviteClaims:
        """The claims of a genuine admin invite token, issued not later than now + CLOCK_SKEW_S
        and not yet expired. Whether it was used already is the invite record's to say.

        Raises TokenMalformed, TokenBadSignature (also: a token of another kind, a wrong key),
        TokenExpired or TokenFromFuture; never anything else.
        """
        payload = self._unsign_keyed("invite", self._invite_macs, token, MAX_TOKEN_CHARS)
        if not isinstance(payload, dict) or payload.keys() != {"n", "i", "e"}:
            raise TokenMalformed("invite token payload has unexpected fields")
        try:
            claims = InviteClaims(invite_id=payload["n"], issued_at=payload["i"], expires_at=payload["e"])
        except ValidationError as exc:
            raise TokenMalformed(
                f"invite token payload is invalid: {exc.error_count()} bad field(s)"
            ) from exc
        if claims.expires_at <= claims.issued_at:
            raise TokenMalformed("invite token expires before it is issued")
        self._check_times("invite", claims.issued_at, claims.expires_at)
        return claims

    # -- internals -------------------------------------------------------------------------

    @staticmethod
    def _view_claims(label: str, model: type[_V], payload: Any, extra: Mapping[str, str]) -> _V:
        """A view (or click: `extra` payload keys -> fields) token's payload as its claims."""
        required = {"t", "c", "w", "m", "r", "i", "e", *extra}
        optional = {"a", "p", "v", "x"}
        if not isinstance(payload, dict) or not required <= payload.keys() <= required | optional:
            raise TokenMalformed(f"{label} token payload has unexpected fields")
        try:
            claims = model(
                **{field: payload[key] for key, field in extra.items()},
                tenant=payload["t"],
                campaign=payload["c"],
                view_id=payload["w"],
                arm=payload["m"],
                rung=payload["r"],
                account=payload.get("a"),
                contact=payload.get("p"),
                zone_set_version=payload.get("v"),
                variant=payload.get("x"),
                issued_at=payload["i"],
                expires_at=payload["e"],
            )
        except ValidationError as exc:
            raise TokenMalformed(
                f"{label} token payload is invalid: {exc.error_count()} bad field(s)"
            ) from exc
        if claims.rung not in VIEW_RUNGS or claims.expires_at <= claims.issued_at:
            raise TokenMalformed(f"{label} token payload is invalid")
        return claims

    def _check_scope(self, label: str, claims: ViewClaims, tenant: str, campaign: str) -> None:
        if claims.tenant != tenant:
            raise TokenBadSignature(f"{label} token was issued for tenant {claims.tenant!r}, not {tenant!r}")
        if claims.campaign != campaign:
            raise TokenBadSignature(
                f"{label} token was issued for campaign {claims.campaign!r}, not {campaign!r}"
            )
        self._check_times(label, claims.issued_at, claims.expires_at)

    def _check_times(self, label: str, issued_at: int, expires_at: int) -> None:
        now = self._clock()
        if issued_at > now + CLOCK_SKEW_S:
            raise TokenFromFuture(
                f"{label} token issued at {issued_at}, more than {CLOCK_SKEW_S} s after now ({int(now)})"
            )
        if now >= expires_at:
            raise TokenExpired(f"{label} token expired at {expires_at} (now {int(now)})")

    def _unsign_view(self, token: object) -> Any:
        return self._unsign_keyed("view", self._view_macs, token, MAX_VIEW_TOKEN_CHARS)

    def _unsign(self, kind: TokenKind, token: object) -> Any:
        # `kind` labels the messages as it is: a StrEnum formats as its value, and `kind.value`
        # is a descriptor call on every verification.
        return self._unsign_keyed(kind, self._macs[kind], token, MAX_TOKEN_CHARS)

    @staticmethod
    def _unsign_keyed(label: str, macs: Sequence[_MacState], token: object, max_chars: int) -> Any:
        """A token's payload, once its signature verifies: the limits and shape checks, the HMAC
        under each key (`macs`: prepared states, newest first), then the payload decoded."""
        if not isinstance(token, str):
            raise TokenMalformed(f"{label} token is not text ({type(token).__name__})")
        if len(token) > max_chars:
            raise TokenMalformed(f"{label} token is {len(token)} characters; at most {max_chars} accepted")
        body, sep, signature = token.rpartition(".")
        # A leading "." marks a zlib-compressed payload; nothing else may.
        compressed = body.startswith(".")
        given = None
        if (
            sep
            and _B64_RE.fullmatch(body[1:] if compressed else body) is not None
            and len(signature) == _SIGNATURE_CHARS
            and _B64_RE.fullmatch(signature) is not None
        ):
            given = _canonical_signature(signature)
        if given is None:
            raise TokenMalformed(
                f"{label} token is not of the form <payload>.<signature> (truncated or badly encoded)"
            )
        encoded = body.encode("ascii")
        for state in macs:
            mac = state.copy()
            mac.update(encoded)
            if hmac.compare_digest(mac.digest(), given):
                break
        else:
            raise TokenBadSignature(
                f"{label} token signature does not verify (tampered, unknown key, or a token of another kind)"
            )
        try:
            return _load_payload(encoded)
        except (ValueError, zlib.error) as exc:  # UnicodeDecodeError is a ValueError
            raise TokenMalformed(f"{label} token payload does not decode") from exc

    @staticmethod
    def _claims(kind: TokenKind, payload: Any) -> TokenClaims:
        fields = {"t", "c", "a", "i", "e"}
        if not isinstance(payload, dict) or not fields <= payload.keys() <= fields | {"p"}:
            raise TokenMalformed(f"{kind.value} token payload has unexpected fields")
        try:
            claims = TokenClaims(
                kind=kind,
                tenant=payload["t"],
                campaign=payload["c"],
                account=payload["a"],
                contact=payload.get("p"),
                issued_at=payload["i"],
                expires_at=payload["e"],
            )
        except ValueError as exc:
            raise TokenMalformed(f"{kind.value} token payload is invalid: {exc}") from exc
        if claims.expires_at <= claims.issued_at:
            raise TokenMalformed(f"{kind.value} token expires before it is issued")
        return claims
