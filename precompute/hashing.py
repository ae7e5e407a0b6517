"""Input hashes: the same inputs always hash the same, so a rerun makes no new model call or version.

An account's input hash covers exactly what can change its copy: its record, the copy variant
it is written in, and the campaign fingerprint (the campaign's `copy` fields, classified in
`welcomemat.campaign.copy_inputs`; zone contracts; effective policy; provider and model; pipeline
version). A settings edit (origins, QA thresholds, alerts, review policy, theme) changes no
hash: no model call, no new version, approvals kept. It does not cover the day of the run:
time is handled by `valid_until`, and a zone set past it is rebuilt even when its inputs are
unchanged.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from precompute.context import EffectivePolicy
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.copy_inputs import CAMPAIGN_INPUTS, copy_material
from welcomemat.campaign.experiment_assignment import variant_for
from welcomemat.records.accounts import Account
from welcomemat.zones.contract import ZoneContract

__all__ = [
    "PIPELINE_VERSION",
    "account_input_hash",
    "account_variant",
    "campaign_fingerprint",
    "canonical_json",
]

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


def campaign_fingerprint(
    campaign: Campaign, zones: Mapping[str, ZoneContract], policy: EffectivePolicy, provider_fingerprint: str
) -> str:
    """SHA-256 (hex) of everything about the campaign that can change copy.

    The campaign's `copy` fields (`welcomemat.campaign.copy_inputs`: a settings edit, such as origins, QA
    thresholds, alerts, review policy or theme, leaves it as it was), the zone contracts, the
    effective policy (without `sources`, which names files: moving a file changes no copy), the
    provider and model, and the pipeline version.
    """
    # Python values keep sets as sets, which canonical_json sorts: JSON values would list them
    # in iteration order, which changes between processes (string hash seeds).
    material = copy_material(campaign, CAMPAIGN_INPUTS)
    experiment = material.get("experiment")
    if experiment is not None:
        # A running experiment hashes as it did before experiments could stop. A stopped one
        # hashes as the running one did, under the version it ran under: an account already on
        # the kept variant is unchanged (same zone set, no model call); the others differ by
        # the variant they are moved to (`account_input_hash`).
        stopped = experiment.pop("stopped", None)
        if stopped is not None:
            material["guideline_version"] = stopped["ran_under"]
    rules = {name: value for name, value in asdict(policy).items() if name != "sources"}
    return hashlib.sha256(
        canonical_json(
            {
                "pipeline": PIPELINE_VERSION,
                "campaign": material,
                "zones": {k: v.model_dump() for k, v in sorted(zones.items())},
                "policy": rules,
                "provider": provider_fingerprint,
            }
        )
    ).hexdigest()


def account_variant(campaign: Campaign, account_id: str) -> str | None:
    """The copy variant the account is written in (None: no experiment, or not in the personal arm)."""
    variant = variant_for(campaign, account_id)
    return variant.id if variant is not None else None


# Account fields that change no zone set: an account's IP ranges recognise its visitors (the
# IP-range map is rebuilt every run), they are never written on a page.
_ACCOUNT_SETTINGS = frozenset({"ip_ranges"})


def account_input_hash(campaign_fp: str, account: Account, variant: str | None = None) -> str:
    """The account's record (IP ranges aside) under the campaign fingerprint, and `variant`: the
    copy variant it is written in (`account_variant`), so moving the holdout or stopping an
    experiment rewrites only the accounts whose variant moves."""
    digest = hashlib.sha256(campaign_fp.encode())
    digest.update(canonical_json(account.model_dump(exclude=set(_ACCOUNT_SETTINGS))))
    if variant is not None:
        digest.update(b"\0variant\0" + variant.encode())
    return digest.hexdigest()[:32]
