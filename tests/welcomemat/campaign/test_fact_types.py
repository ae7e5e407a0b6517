"""The fact type registry: slots per type, and which types may back a quote, a relationship, a new role."""

from __future__ import annotations

from welcomemat.campaign.fact_types import (
    FACT_TYPES,
    QUOTE,
    RELATIONSHIP,
    ROLE_CHANGE,
    slots_for,
    types_backing,
)


def test_only_a_quote_fact_backs_a_quote_and_only_a_crm_fact_a_relationship() -> None:
    assert types_backing(QUOTE) == {"quote"}
    assert types_backing(RELATIONSHIP) == {"crm_activity"}
    assert types_backing(ROLE_CHANGE) == {"leadership"}
    assert types_backing("astrology") == frozenset()


def test_research_types_back_nothing_beyond_their_statement() -> None:
    for name in ("funding", "hiring", "expansion", "product_launch"):
        assert FACT_TYPES[name].backs == frozenset(), name
    assert FACT_TYPES["hiring"].intents  # a job post states an intent to hire


def test_the_new_types_have_slots_of_their_own() -> None:
    assert slots_for("quote") == {"person", "medium", "topic", "account", "when"}
    assert slots_for("crm_activity") == {"activity", "event", "account", "when"}
    assert "role" in (slots_for("leadership") or set())
