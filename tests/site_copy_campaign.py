"""A campaign for a customer's site that has its own copy: a headline, a proof point and a CTA.

The site's page says "Cold-chain monitoring you can prove"; the campaign's default copy says
something else. The proof point's contract falls back straight to the default
(`fallback: default`), so an account with a personal headline still gets the default rung
there; the headline and the CTA fall back to the segment's copy. `snippet.replace_default`
is the campaign's opt-in to overwrite the site's copy with its default copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.server.conftest import TENANT

__all__ = [
    "CTA_HREF",
    "DEFAULT_COPY",
    "SEGMENT",
    "SEGMENT_COPY",
    "SITE_COPY",
    "SITE_COPY_CAMPAIGN",
    "SITE_HREF",
    "ZONE_IDS",
    "site_copy_campaign",
    "site_copy_zone_contracts",
]

SITE_COPY_CAMPAIGN = "site-copy"
ZONE_IDS = ("z_headline", "z_proof", "z_cta")
SEGMENT = "cold-chain"
CTA_HREF = "https://www.acmerevenue.example/ramp-review"
# The customer's own page, as it reads without any snippet.
SITE_COPY = {
    "z_headline": "Cold-chain monitoring you can prove",
    "z_proof": "Every pallet's temperature, logged every minute.",
    "z_cta": "Request a demo",
}
SITE_HREF = "https://www.acmerevenue.example/"
DEFAULT_COPY = {
    "z_headline": "New sellers, productive in weeks, not quarters",
    "z_proof": "Teams like yours ramp new sellers in half the time.",
    "z_cta": "Book a ramp review",
}
SEGMENT_COPY = {
    "z_headline": "Cold-chain teams ramp new sellers faster",
    "z_proof": "Cold-chain teams book a first meeting in week two.",
    "z_cta": "Talk to a cold-chain specialist",
}


def site_copy_zone_contracts() -> dict[str, dict[str, Any]]:
    return {
        zone_id: {
            "id": zone_id,
            "purpose": "a customer's own zone",
            "max_words": 40,
            "max_chars": 300,
            "markup": [],
            "link": zone_id == "z_cta",
            "fact_types": ["funding"],
            "requires_fact": False,
            "checks": [],
            "fallback": "default" if zone_id == "z_proof" else "segment",
        }
        for zone_id in ZONE_IDS
    }


def _copy(texts: dict[str, str]) -> dict[str, Any]:
    return {z: ({"text": t, "cta": "go"} if z == "z_cta" else t) for z, t in texts.items()}


def site_copy_campaign(
    *, replace_default: bool | None = None, snippet_origins: Sequence[str] = ()
) -> dict[str, Any]:
    """The campaign as stored config (JSON); `replace_default=None` leaves `snippet` out."""
    config: dict[str, Any] = {
        "tenant": TENANT,
        "campaign": SITE_COPY_CAMPAIGN,
        "name": "The site keeps its copy",
        "guideline_version": "1",
        "site_base_url": SITE_HREF,
        "link_allowlist": ["www.acmerevenue.example"],
        "holdout_fraction": 0.0,
        "signal_windows_days": {"funding": 30},
        "pages": {"landing": {"template": "landing.html", "zones": list(ZONE_IDS)}},
        "ctas": [{"id": "go", "label": "Book a ramp review", "href": CTA_HREF}],
        "default_copy": _copy(DEFAULT_COPY),
        "segments": {SEGMENT: {"label": "Cold chain", "zones": _copy(SEGMENT_COPY)}},
    }
    if replace_default is not None:
        config["snippet"] = {"replace_default": replace_default}
    if snippet_origins:
        config["snippet_origins"] = list(snippet_origins)
    return config
