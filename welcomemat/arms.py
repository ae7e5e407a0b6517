"""Which arm of the experiment a visitor is in: personal, holdout or anonymous.

The holdout is drawn per account, not per visitor or per request: a stable hash of
(tenant, campaign, account) against the campaign's `holdout_fraction`. Everyone at one
account (the whole buying committee) lands in the same arm, on every renderer, forever,
which is what makes the lift report's personal-vs-holdout comparison honest.
"""

from __future__ import annotations

import enum
import functools
import hashlib

__all__ = ["Arm", "assign_arm", "holdout_position"]

_SCALE = float(1 << 64)


class Arm(enum.StrEnum):
    """personal: sees its zone set; holdout: known, sees segment copy; anonymous: default copy."""

    PERSONAL = "personal"
    HOLDOUT = "holdout"
    ANONYMOUS = "anonymous"


# Remembered per account: a returning visitor's arm then costs a dict lookup, not a sha256.
@functools.lru_cache(maxsize=65_536)
def holdout_position(tenant: str, campaign: str, account: str) -> float:
    """The account's fixed position in [0, 1) for this campaign (sha256, first 64 bits).

    Salted with the campaign so that an account held out of one campaign is not
    systematically held out of every other.
    """
    digest = hashlib.sha256(f"{tenant}\0{campaign}\0{account}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


def assign_arm(tenant: str, campaign: str, account: str | None, holdout_fraction: float) -> Arm:
    """anonymous without an account; holdout when its position falls below the fraction."""
    if account is None:
        return Arm.ANONYMOUS
    if holdout_position(tenant, campaign, account) < holdout_fraction:
        return Arm.HOLDOUT
    return Arm.PERSONAL
