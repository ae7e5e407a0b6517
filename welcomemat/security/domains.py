"""Registrable domains ("eTLD+1") from the Public Suffix List.

The list ships inside the pinned ``publicsuffixlist`` package (its version pins the list);
nothing is downloaded at runtime. Both the ICANN and the private sections are used, as
the PSL's own tests expect (so ``x.github.io`` is its own registrable domain).

Hosts are checked with the same WHATWG host rules as links (``welcomemat.security.urlgate``):
IP literals (including odd IPv4 forms such as ``0x7f.1``), leading or trailing dots,
empty labels, ports, paths and anything else that is not a plain hostname give None.
A trailing-dot host (``example.com.``) gives None rather than being silently repaired.

IDN: the answer keeps the form of the input, as the PSL tests do: an ASCII input
(including punycode) gets a lowercase ASCII answer; an input with non-ASCII characters
gets the UTS 46-normalised Unicode answer (``www.食狮.公司.cn`` -> ``食狮.公司.cn``).
"""

from __future__ import annotations

import threading

import ada_url
from publicsuffixlist import PublicSuffixList

from welcomemat.security.urlgate import normalise_host

__all__ = ["email_domain", "registrable_domain"]

_psl: PublicSuffixList | None = None
_psl_lock = threading.Lock()


def _get_psl() -> PublicSuffixList:
    """The one PublicSuffixList (loading it costs tens of milliseconds)."""
    global _psl
    if _psl is None:
        with _psl_lock:
            if _psl is None:
                _psl = PublicSuffixList(accept_unknown=True, only_icann=False)
    return _psl


def registrable_domain(host: str | None) -> str | None:
    """The registrable domain of ``host``, lowercased; None when it has none.

    None for None or empty input, a bare public suffix, a leading-dot or trailing-dot
    input, an IP literal, or anything that is not a plain hostname. Never raises.
    """
    if not isinstance(host, str):
        return None
    host = host.strip()
    if not host:
        return None
    try:
        ascii_host = normalise_host(host)
    except ValueError:
        return None
    if host.isascii():
        form = ascii_host
    else:
        form = ada_url.idna_to_unicode(ascii_host)
        if not form:
            return None
    result = _get_psl().privatesuffix(form)
    return result if isinstance(result, str) and result else None


def email_domain(email: str) -> str | None:
    """The domain of an e-mail address (after the last '@'), lowercased and stripped.

    None when malformed: not a string, no '@', an empty local part, or a domain that is
    not a plain hostname (address literals like ``[192.0.2.1]`` included). Never raises.
    """
    if not isinstance(email, str):
        return None
    local, at, domain = email.strip().rpartition("@")
    if not at or not local.strip():
        return None
    domain = domain.strip().lower()
    if not domain:
        return None
    try:
        normalise_host(domain)
    except ValueError:
        return None
    return domain
