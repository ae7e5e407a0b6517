"""Build the governed context of one account: the only thing a provider ever sees.

The order matters and is fixed here, once: identity first (if the account is not surely
who the record says, no fact about it is used), then the trust policy per fact, then the
campaign's own fact types (a trusted fact of a declared type keeps only the surfaces its
declaration allows; `welcomemat.campaign.declared_fact_types`), then plausible firmographics. Every
decision is kept, trusted or not, so `explain` can say why an account sees what it sees.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from precompute.company_names import short_name
from precompute.context import EffectivePolicy, GovernedContext, TrustedFact
from precompute.facts.trust import decide_facts
from precompute.firmographics import plausible_firmographics
from precompute.identity import resolve_identity
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.declared_fact_types import narrow_surfaces
from welcomemat.records.accounts import Account

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
        facts=tuple(_as_declared(f, campaign) for f in facts),
        decisions=decisions,
        firmographics=plausible_firmographics(account, campaign),
        as_of=as_of,
    )


def _as_declared(fact: TrustedFact, campaign: Campaign) -> TrustedFact:
    """The fact on the surfaces its type's declaration allows (`web` always among them)."""
    declaration = campaign.fact_types.get(fact.type)
    if declaration is None:
        return fact
    return replace(fact, surfaces=narrow_surfaces(fact.surfaces, declaration))
