"""The fact-type registry and the pipeline agree: every slot the campaign loader accepts is filled
by the offline composer from a fact that went through the real trust policy."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from precompute.context_builder import build_context
from precompute.providers.base import GenerationRequest
from precompute.providers.offline import OfflineComposer
from tests.precompute.test_offline import AS_OF, CAMPAIGN, POLICY, ZONES, dymaxa_record
from welcomemat.campaign.fact_types import FACT_TYPES
from welcomemat.campaign.patterns import pattern_problems
from welcomemat.records.accounts import Account


def fact(fact_type: str, n: int) -> dict[str, Any]:
    """A fact of `fact_type` that the trust policy accepts, carrying every field the registry lists."""
    first: dict[str, Any] = dymaxa_record()["facts"][0]
    fields = dict.fromkeys(FACT_TYPES[fact_type].fields, "Value")
    own = {
        "id": f"{fact_type}-{n}",
        "type": fact_type,
        "published_at": "2026-11-20",
        "statement": f"Dymaxa news number {n}",
        "source_url": f"https://dymaxa.com/news/{n}",
    }
    return first | own | fields


@pytest.mark.parametrize("fact_type", sorted(FACT_TYPES))
def test_a_pattern_using_every_slot_of_a_fact_type_is_filled(fact_type: str) -> None:
    pattern = " ".join("{" + s + "}" for s in sorted(FACT_TYPES[fact_type].slots))
    assert pattern_problems(fact_type, pattern) == []  # the loader accepts it ...
    # Every type gets a window and a zone that may cite it (the example campaign lists only some).
    windows = {**CAMPAIGN.signal_windows_days, fact_type: 30}
    campaign = CAMPAIGN.model_copy(
        update={"patterns": {fact_type: {"hero_support": (pattern,)}}, "signal_windows_days": windows}
    )
    policy = dataclasses.replace(POLICY, signal_windows_days=windows)
    zone = ZONES["hero_support"].model_copy(update={"fact_types": frozenset({fact_type})})
    # Two facts: a hiring group of one refuses a plural with a count ("one SDRs").
    account = Account.model_validate(dymaxa_record() | {"facts": [fact(fact_type, 1), fact(fact_type, 2)]})
    context = build_context(account, campaign, policy, AS_OF)
    assert len(context.facts) == 2, context.decisions
    request = GenerationRequest(
        context=context, campaign=campaign, policy=policy, page_id="landing", zones=(zone,)
    )
    drafts = OfflineComposer().generate(request).drafts
    assert "hero_support" in drafts, f"the composer cannot fill {pattern!r}"  # ... and the composer fills it
    assert "{" not in drafts["hero_support"].text
