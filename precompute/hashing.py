"""Input hashes: the same inputs always hash the same, so a rerun makes no new model call or version.

An account's input hash covers its record and the campaign fingerprint (campaign contract,
zone contracts, effective policy, provider configuration, pipeline version). It does not
cover the day of the run: time is handled by `valid_until`, and a zone set past it is
rebuilt even when its inputs are unchanged.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from precompute.context import EffectivePolicy
from welcomemat.accounts import Account
from welcomemat.campaign import Campaign
from welcomemat.zone_contract import ZoneContract

__all__ = ["PIPELINE_VERSION", "account_input_hash", "campaign_fingerprint", "canonical_json"]

# Bump whenever the pipeline's decisions change (trust rules, checks, ladder), so that every
# zone set is rebuilt on the next run instead of being kept as "unchanged".
# 2: zones record the surfaces their facts allow; 3: which company a fact is about (subject,
# namesakes, brands), hard checks no file can switch off, personal only when specific.
PIPELINE_VERSION = "precompute-3"


def canonical_json(value: Any) -> bytes:
    """One byte string per value: sorted keys, no spaces, sets as sorted lists."""

    def default(obj: Any) -> Any:
        if isinstance(obj, frozenset | set):
            return sorted(obj)
        return str(obj)

    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=default
    ).encode()


# Optional campaign fields added after campaigns were first published.
_FIELDS_ADDED_LATER = (
    "experiment",
    "voice_examples",
    "voice_profile",
    "fact_types",
    "checks",
    "mail_in_home_date",
)


def campaign_fingerprint(
    campaign: Campaign, zones: Mapping[str, ZoneContract], policy: EffectivePolicy, provider_fingerprint: str
) -> str:
    # Python-mode dumps keep sets as sets, which canonical_json sorts: JSON-mode would list
    # them in iteration order, which changes between processes (string hash seeds).
    # `seller_alerts` is left out: it changes no page, and editing the seller's next step must
    # not republish (and send back to review) every account. `snippet` neither: it decides,
    # at serve time, whether the snippet writes default copy over the site's own.
    dumped = campaign.model_dump(exclude={"seller_alerts", "snippet"})
    for name in _FIELDS_ADDED_LATER:
        if not dumped.get(name):
            # Unset, it hashes as before the field existed, so upgrading makes no zone set
            # look changed (and costs no model call).
            dumped.pop(name, None)
    if dumped.get("experiment"):
        # A running experiment hashes as it did before experiments could stop. A stopped one
        # hashes as the running one did, under the version it ran under: an account already on
        # the kept variant is unchanged (same zone set, no model call); the others differ by
        # the variant they are moved to (`account_input_hash`).
        stopped = dumped["experiment"].pop("stopped", None)
        if stopped is not None:
            dumped["guideline_version"] = stopped["ran_under"]
    material = {
        "pipeline": PIPELINE_VERSION,
        "campaign": dumped,
        "zones": {k: v.model_dump() for k, v in sorted(zones.items())},
        "policy": asdict(policy),
        "provider": provider_fingerprint,
    }
    return hashlib.sha256(canonical_json(material)).hexdigest()


def account_input_hash(campaign_fp: str, account: Account, reassigned: str | None = None) -> str:
    """`reassigned`: the kept variant a stopped experiment moves this account to, if it does."""
    digest = hashlib.sha256(campaign_fp.encode())
    digest.update(canonical_json(account.model_dump()))
    if reassigned is not None:
        digest.update(b"\0reassigned\0" + reassigned.encode())
    return digest.hexdigest()[:32]
