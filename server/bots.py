"""Obvious bots, by user agent: crawlers, link unfurlers, monitors and HTTP libraries.

Only the obvious: a user agent that names itself a bot, crawler or spider, a known link
previewer, or an HTTP library (curl, python-requests, Go's client ...), and a missing
one (every browser sends one). Beacons from these are dropped and counted, never
written as engagement. Headless browsers are not "obvious" (`HeadlessChrome` is also how
sites test their own pages) and are kept.
"""

from __future__ import annotations

import re

from welcomemat.security.links import PREFLIGHT_USER_AGENT

__all__ = ["MAX_USER_AGENT_CHARS", "is_obvious_bot", "is_preflight"]

# Longer user agents are not read further (no browser sends one this long; bounded regex work).
MAX_USER_AGENT_CHARS = 512

# A word ending in bot/crawler/spider before a separator ("Googlebot/2.1", "bingbot)"), but
# not the phones named CUBOT or Robot; link previewers; HTTP libraries at the start.
_BOT = re.compile(
    r"""
    (?:(?<!cu)(?<!ro)bot|crawler|crawling|spider|slurp|scraper)(?:[/;)\s+:,-]|$)
    | facebookexternalhit | facebookcatalog | ia_archiver | embedly | bingpreview | headless(?!chrome)
    | ^(?:curl|wget|python-requests|python-urllib|python-httpx|aiohttp|httpx|go-http-client|java|okhttp
         |axios|node-fetch|undici|libwww-perl|lwp-trident|scrapy|httpie|postmanruntime|apache-httpclient)\b
    | \b(?:pingdom|uptimerobot|statuscake|site24x7|lighthouse|pagespeed|gtmetrix)\b
    """,
    re.IGNORECASE | re.VERBOSE,
)


# Every match of _BOT contains one of these (lowercase), or starts the user agent. A browser's
# user agent contains none, so it costs a few substring checks instead of a regex search
# (the alternation is tried at every position).
_HINTS = (
    "bot", "crawl", "spider", "slurp", "scraper", "facebook", "ia_archiver", "embedly",
    "bingpreview", "headless", "pingdom", "uptimerobot", "statuscake", "site24x7",
    "lighthouse", "pagespeed", "gtmetrix",
)  # fmt: skip
_LIBRARY_STARTS = (
    "curl", "wget", "python-", "aiohttp", "httpx", "go-http-client", "java", "okhttp", "axios",
    "node-fetch", "undici", "libwww-perl", "lwp-trident", "scrapy", "httpie", "postmanruntime",
    "apache-httpclient",
)  # fmt: skip


def is_obvious_bot(user_agent: str | None) -> bool:
    """True for a missing user agent and for one that plainly names a robot or a library."""
    if not user_agent or not user_agent.strip():
        return True
    agent = user_agent[:MAX_USER_AGENT_CHARS]
    lowered = agent.lower()
    if not lowered.startswith(_LIBRARY_STARTS) and not any(hint in lowered for hint in _HINTS):
        return False
    return _BOT.search(agent) is not None


def is_preflight(user_agent: str | None) -> bool:
    """True for `welcomemat mail`'s preflight: the page it checks is not a visit to log."""
    return user_agent == PREFLIGHT_USER_AGENT
