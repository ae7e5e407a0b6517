"""Build the governed context of one account: the only thing a provider ever sees.

The order matters and is fixed here, once: identity first (if the account is not surely
who the record says, no fact about it is used), then the trust policy per fact, then
plausible firmographics. Every decision is kept, trusted or not, so `explain` can say why
an account sees what it sees.
"""

from __future__ import annotations

from datetime import date

from precompute.context import EffectivePolicy, GovernedContext
from precompute.firmographics import plausible_firmographics
from precompute.identity import resolve_identity
from precompute.trust import decide_facts, short_name
from welcomemat.accounts import Account
from welcomemat.campaign import Campaign

__all__ = ["build_context"]


def build_context(
    account: Account, campaign: Campaign, policy: EffectivePolicy, as_of: date
) -> GovernedContext:
    """Identity, trusted facts with one decision per fact, and firmographics, as of ``as_of``."""
    identity = resolve_identity(account)
    facts, decisions = decide_facts(account, identity, policy, as_of)
    return GovernedContext(
        account=account,
        short_name=short_name(account.name),
        identity=identity,
        facts=facts,
        decisions=decisions,
        firmographics=plausible_firmographics(account, campaign),
        as_of=as_of,
    )
