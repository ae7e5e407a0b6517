"""A campaign built for hostile text: eight zones a page, the XSS corpus, the example's link allowlist."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.corpora import CORPORA, corpus_lines
from tests.server.conftest import TENANT

__all__ = [
    "CTA_HREF",
    "XSS_CAMPAIGN",
    "ZONES_PER_PAGE",
    "batches",
    "in_account_name",
    "xss_campaign_config",
    "xss_payloads",
    "xss_zone_contracts",
    "xss_zone_ids",
]

XSS_CAMPAIGN = "xss-browser"
ZONES_PER_PAGE = 8
CTA_HREF = "https://www.acmerevenue.example/go"


def xss_payloads() -> list[str]:
    """Every line of every file in the shared XSS corpus (RSnake, Intruders, polyglots)."""
    found: list[str] = []
    for path in sorted((CORPORA / "xss").glob("*.txt")):
        found.extend(corpus_lines(f"xss/{path.name}"))
    assert len(found) > 200, f"the XSS corpus under {CORPORA / 'xss'} is missing or short"
    return found


def batches(items: Sequence[str], size: int = ZONES_PER_PAGE) -> list[list[str]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def in_account_name(payload: str) -> str:
    """The payload as an account name inside a personal line (the composer's `{account}` slot)."""
    return f"Congrats on the Series A last Thursday, {payload}. Ramp your new SDRs in weeks."


def xss_zone_ids() -> list[str]:
    """A headline (`<h1>`, also the page title), six paragraphs and a link zone (`<a>`)."""
    return ["z_headline"] + [f"z{i}" for i in range(1, ZONES_PER_PAGE - 1)] + ["z_cta"]


def xss_zone_contracts() -> dict[str, dict[str, Any]]:
    return {
        zone_id: {
            "id": zone_id,
            "purpose": "hostile text",
            "max_words": 200,
            "max_chars": 2000,
            "markup": [],
            "link": zone_id == "z_cta",
            "fact_types": ["funding"],
            "requires_fact": False,
            "checks": [],
            "fallback": "segment",
        }
        for zone_id in xss_zone_ids()
    }


def xss_campaign_config(*, snippet_origins: Sequence[str] = ()) -> dict[str, Any]:
    ids = xss_zone_ids()
    copy = {
        z: ({"text": "Default call to action", "cta": "go"} if z == "z_cta" else f"Default {z}") for z in ids
    }
    config: dict[str, Any] = {
        "tenant": TENANT,
        "campaign": XSS_CAMPAIGN,
        "name": "XSS in the browser",
        "guideline_version": "1",
        "site_base_url": "https://www.acmerevenue.example/",
        "link_allowlist": ["www.acmerevenue.example"],
        "holdout_fraction": 0.0,
        "signal_windows_days": {"funding": 30},
        "pages": {"landing": {"template": "landing.html", "zones": ids}},
        "ctas": [{"id": "go", "label": "Go", "href": CTA_HREF}],
        "default_copy": copy,
        "segments": {"s0": {"label": "segment 0", "zones": copy}},
    }
    if snippet_origins:
        config["snippet_origins"] = list(snippet_origins)
    return config
