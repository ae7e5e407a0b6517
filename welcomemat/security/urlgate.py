"""The one place links are parsed and allowlisted (Hard invariant 2).

No link is rendered unless it parses as ``https:`` and its host is on the campaign's
allowlist. Every renderer, precompute step and snippet builder asks :func:`gate_link`
(or :func:`safe_href`) and renders only the normalised ``href`` it hands back.

Why not ``urllib.parse``: ``urlsplit`` does not follow the WHATWG URL Standard that
browsers implement, so it can agree to a link whose real destination is elsewhere. For
``https://evil.com\\@good.com`` urlsplit reports host ``good.com``, but a browser treats
the backslash as a path separator and goes to ``evil.com``. Tabs and newlines anywhere
in the input, odd IPv4 forms (``0x7f.1``), percent-encoded hosts and IDN mapping are
further places where the two differ. So links are parsed here with ada (``ada_url``), a
WHATWG-conformant parser, and the decision is taken on what ada (= a browser) sees.

The rules, all strict and fail-closed:

* the link must parse on its own (no base URL: a relative link such as ``//good.com``
  or ``/path`` is refused as ``unparseable`` because its target depends on the page);
* scheme ``https`` only;
* no userinfo (username or password) at all;
* the host is a domain, never an IP literal (IPv4 in any form ada normalises, or IPv6);
* no explicit non-default port (``:443`` is the default and ada removes it);
* the ASCII (punycode) hostname must *equal* an allowlisted host: no suffix matching,
  no wildcards. A trailing-dot host (``good.com.``) is a different origin for browsers
  (cookies, HSTS, certificates and virtual hosting may all differ), so it is not equal
  to ``good.com`` and is refused; trailing-dot allowlist entries are refused too.

Where ada (4.x) lags the standard: ada accepts ``xn--`` labels whose Punycode is empty,
undecodable, decodes to pure ASCII, or decodes to characters UTS 46 would not leave
unchanged (e.g. ``xn--pokxncvks``); browsers and the WPT URL tests reject those hosts.
This module adds that check, so such links are ``unparseable`` here too.

Lone UTF-16 surrogates cannot be passed to ada; they are replaced by U+FFFD first, which
is what a browser does when it turns a DOM string into a USVString.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import ada_url

from welcomemat.errors import ContractError

__all__ = [
    "LOOPBACK_HOSTS",
    "LinkAllowlist",
    "LinkDecision",
    "browser_origin",
    "browser_view",
    "gate_link",
    "gate_source_link",
    "normalise_host",
    "safe_href",
    "source_href",
    "webhook_href",
]

# What the WHATWG parser strips from both ends of its input: C0 controls and space.
_C0_OR_SPACE = "".join(chr(c) for c in range(0x21))

# Hosts whose plain http:// URLs are accepted where an origin or endpoint is configured (snippet
# origins, webhook receivers), for local development and tests: traffic to them never leaves the
# machine, so plain http exposes nothing.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})

_NOT_SPECIAL = ada_url.SchemeType.NOT_SPECIAL
_DOMAIN = ada_url.HostType.DEFAULT

# Characters that make an allowlist entry something other than a plain hostname, with
# the reason reported. Checked before parsing so the message says what is wrong.
_ENTRY_FORBIDDEN: tuple[tuple[str, str], ...] = (
    ("*", "has a wildcard"),
    ("://", "has a scheme"),
    ("@", "has userinfo"),
    ("[", "is an IP literal"),
    ("]", "is an IP literal"),
    (":", "has a port or scheme"),
    ("/", "has a path"),
    ("\\", "has a path"),
    ("?", "has a query"),
    ("#", "has a fragment"),
    ("%", "is percent-encoded"),
)


def _usv(text: str) -> str:
    """Replace lone surrogates by U+FFFD (and join split pairs), as WebIDL does."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _xn_labels_ok(hostname: str) -> bool:
    """Whether every ``xn--`` label of an ASCII hostname is valid Punycode per UTS 46.

    The label must decode, to something non-empty and not all-ASCII, that converts
    back to exactly the same label (so the decoded text is already UTS 46-mapped).
    """
    for label in hostname.split("."):
        if not label.startswith("xn--"):
            continue
        try:
            decoded = label[4:].encode("ascii").decode("punycode")
            if not decoded or decoded.isascii():
                return False
            if ada_url.idna_to_ascii(decoded) != label.encode("ascii"):
                return False
        except (UnicodeError, ValueError, OverflowError):
            return False
    return True


def _parse(raw: str, base: str | None = None) -> tuple[ada_url.URL, str] | None:
    """Parse like a browser: ``(url, hostname)``, or None when WHATWG (or UTS 46) fails.

    Each attribute read crosses into C, so callers reuse the hostname.
    """
    try:
        url = ada_url.URL(raw, base)
    except UnicodeEncodeError:  # lone surrogates; must precede ValueError (its base)
        try:
            url = ada_url.URL(_usv(raw), None if base is None else _usv(base))
        except ValueError:
            return None
    except ValueError:
        return None
    hostname = url.hostname
    if (
        "xn--" in hostname
        and url.scheme_type != _NOT_SPECIAL
        and url.host_type == _DOMAIN
        and not _xn_labels_ok(hostname)
    ):
        return None
    return url, hostname


def browser_view(raw: str, base: str | None = None) -> tuple[str, str] | None:
    """``(scheme, hostname)`` as a browser sees ``raw`` (resolved against ``base``).

    The scheme has no colon; the hostname is ada's serialisation (ASCII/punycode for
    special schemes, IPv6 in brackets, empty when there is no host). None when WHATWG
    parsing fails.
    """
    parsed = _parse(raw, base)
    if parsed is None:
        return None
    url, hostname = parsed
    return url.protocol[:-1], hostname


def browser_origin(raw: str) -> str | None:
    """The origin a browser would send for ``raw`` (``scheme://host[:port]``, default port
    left out), for ``http``/``https`` URLs with a host; None otherwise."""
    parsed = _parse(raw)
    if parsed is None:
        return None
    url, hostname = parsed
    if url.protocol not in ("http:", "https:") or not hostname:
        return None
    return str(url.origin)


def normalise_host(entry: str) -> str:
    """The ASCII (punycode) form of a plain hostname, as a browser would serialise it.

    Raises ``ValueError`` naming the reason when ``entry`` is not a plain hostname:
    empty, has a scheme, path, query, fragment, port, userinfo or wildcard, is an IP
    literal, has an empty label or a trailing dot, or does not parse.
    """
    if not isinstance(entry, str):
        raise ValueError(f"is not a string ({type(entry).__name__})")
    if not entry:
        raise ValueError("is empty")
    if entry != entry.strip() or any(ord(c) < 0x21 or ord(c) == 0x7F for c in entry):
        raise ValueError("contains whitespace or control characters")
    for needle, reason in _ENTRY_FORBIDDEN:
        if needle in entry:
            raise ValueError(reason)
    parsed = _parse(f"https://{entry}/")
    if parsed is None:
        raise ValueError("does not parse as a hostname")
    url, hostname = parsed
    if url.host_type != _DOMAIN:
        raise ValueError("is an IP literal")
    if url.href != f"https://{hostname}/":
        raise ValueError("is not a plain hostname")
    if not hostname or hostname.startswith(".") or hostname.endswith(".") or ".." in hostname:
        raise ValueError("has an empty label or a trailing dot")
    return hostname


@dataclass(frozen=True, slots=True)
class LinkAllowlist:
    """An immutable set of normalised ASCII hostnames links may point to.

    Build it with :meth:`from_hosts`; constructing it directly requires hosts that are
    already normalised (checked).
    """

    hosts: frozenset[str]

    def __post_init__(self) -> None:
        for host in self.hosts:
            try:
                normalised = normalise_host(host)
            except ValueError as exc:
                raise ContractError(
                    f"link allowlist entry {host!r} is not a plain hostname: it {exc}",
                    field="link_allowlist",
                ) from None
            if normalised != host:
                raise ContractError(
                    f"link allowlist entry {host!r} is not normalised (expected {normalised!r});"
                    " use LinkAllowlist.from_hosts",
                    field="link_allowlist",
                )

    @classmethod
    def from_hosts(cls, hosts: Iterable[str]) -> LinkAllowlist:
        """Validate and normalise host strings (unicode or punycode, any case)."""
        if isinstance(hosts, str):
            raise ContractError(
                f"link allowlist must be a list of hosts, not the string {hosts!r}",
                field="link_allowlist",
            )
        normalised: set[str] = set()
        for entry in hosts:
            try:
                normalised.add(normalise_host(entry))
            except ValueError as exc:
                raise ContractError(
                    f"link allowlist entry {entry!r} is not a plain hostname: it {exc}",
                    field="link_allowlist",
                ) from None
        return cls(frozenset(normalised))

    def __contains__(self, host: object) -> bool:
        if not isinstance(host, str):
            return False
        if host in self.hosts:
            return True
        try:
            return normalise_host(host) in self.hosts
        except ValueError:
            return False

    def __len__(self) -> int:
        return len(self.hosts)

    def __repr__(self) -> str:
        return f"LinkAllowlist({sorted(self.hosts)!r})"


@dataclass(frozen=True, slots=True)
class LinkDecision:
    """The gate's answer. ``href`` (ada's normalised href) is set only when allowed.

    ``reason`` is one of: ``ok``, ``empty``, ``unparseable``, ``not_https``,
    ``userinfo``, ``ip_literal``, ``port``, ``host_not_allowlisted``. ``host`` is the
    hostname the browser would contact whenever the link parsed, else None.
    """

    allowed: bool
    reason: str
    href: str | None
    host: str | None


_EMPTY = LinkDecision(False, "empty", None, None)
_UNPARSEABLE = LinkDecision(False, "unparseable", None, None)


def gate_link(raw: str, allowlist: LinkAllowlist) -> LinkDecision:
    """Decide whether ``raw`` may be rendered as a link. Never raises."""
    return _gate(raw, allowlist.hosts)


def _gate(raw: str, allowed_hosts: frozenset[str] | None) -> LinkDecision:
    """Every rule, once: `gate_link` (an allowlist) and `gate_source_link` (None: any named host)."""
    if not isinstance(raw, str) or not raw.strip(_C0_OR_SPACE):
        return _EMPTY
    parsed = _parse(raw)
    if parsed is None:
        return _UNPARSEABLE
    url, host = parsed
    if url.protocol != "https:":
        return LinkDecision(False, "not_https", None, host or None)
    href = url.href
    # Fast path: the authority is exactly the hostname (an https path always starts
    # with "/"), so there is no userinfo and no port. Allowlist entries are never IP
    # literals, so membership alone decides.
    if href.startswith(f"https://{host}/"):
        if allowed_hosts is not None and host in allowed_hosts:
            return LinkDecision(True, "ok", href, host)
        if url.host_type != _DOMAIN:
            return LinkDecision(False, "ip_literal", None, host)
        if allowed_hosts is None:
            return LinkDecision(True, "ok", href, host)
        return LinkDecision(False, "host_not_allowlisted", None, host)
    if url.username or url.password:
        return LinkDecision(False, "userinfo", None, host)
    if url.host_type != _DOMAIN:
        return LinkDecision(False, "ip_literal", None, host)
    if url.port:
        return LinkDecision(False, "port", None, host)
    # Not reachable for a WHATWG https URL; refuse rather than guess.
    return LinkDecision(False, "unparseable", None, host)


def safe_href(raw: str | None, allowlist: LinkAllowlist) -> str | None:
    """The normalised href to render, or None when the link must not be rendered."""
    if raw is None:
        return None
    return gate_link(raw, allowlist).href


def gate_source_link(raw: str) -> LinkDecision:
    """Every rule of :func:`gate_link` except the allowlist. Never raises.

    For showing an operator where a fact came from (admin provenance): a fact's source
    is a press release or a careers page, never on the campaign's allowlist, but it must
    still be a plain ``https`` link to a named host that a browser reads the same way.
    Never use it for a link a visitor's page renders: that is :func:`gate_link`'s job.
    """
    return _gate(raw, None)


def source_href(raw: str | None) -> str | None:
    """The normalised href of a fact's source for an operator page, or None (see :func:`gate_source_link`)."""
    if raw is None:
        return None
    return gate_source_link(raw).href


def webhook_href(raw: str | None) -> str | None:
    """The normalised URL of an operator-configured webhook receiver (a seller-alert channel), or
    None when it must not be posted to.

    ``https`` to a named host (any port: self-hosted chat servers listen on their own), or
    ``http`` to a loopback host only; never userinfo (credentials in a URL end up in logs),
    never an IP literal over https. The secret path of an incoming webhook is kept as given.
    """
    if raw is None:
        return None
    parsed = _parse(raw)
    if parsed is None:
        return None
    url, host = parsed
    if url.username or url.password or not host:
        return None
    if url.protocol == "https:" and url.host_type == _DOMAIN:
        return url.href
    if url.protocol == "http:" and host in LOOPBACK_HOSTS:
        return url.href
    return None
