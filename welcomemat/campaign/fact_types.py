"""The fact types Welcomemat knows and the slots a pattern may use for each.

A research fact carries, beside the fields every fact has (id, type, statement, subject,
source_url, published_at, confidence, surfaces, evidence), structured string fields of its
own: a funding round, a hiring role and place. The offline composer fills a campaign's
`patterns` from those fields and from slots it computes itself; nothing else can fill a
slot. The fields every fact has are never slots: `statement` is a sentence, not a value
to drop into one, and `subject` is the research's, while `{account}` is the account's
own name as Welcomemat reads it.

This registry is the one statement of which slots exist, so `campaign.yaml` can be refused
at load for a slot nothing fills (a typo such as `{locaton}` would otherwise make its
pattern skip every account, silently). An account's fact may carry more fields than
listed here (they are kept); a pattern may only name those listed. A campaign adds its own
types (`fact_types:` in campaign.yaml, `welcomemat.campaign.declared_fact_types`): every lookup here
takes the campaign's registry (`Campaign.known_fact_types()`), the built-in one by default.

It also says what a fact of each type can back beyond its own statement, for the claim
checks (`precompute.claims.support`): only a `quote` fact lets a line quote or paraphrase the
reader, only a `crm_activity` fact (a meeting, call, demo request, event attended, customer
or partner status your CRM records) a line about a prior relationship, only a `leadership`
fact (someone's new role) "your new role", and a `hiring` fact a line saying the account
is looking to hire.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "COMPUTED_SLOTS",
    "EVERY_TYPE_SLOTS",
    "FACT_TYPES",
    "QUOTE",
    "RELATIONSHIP",
    "ROLE_CHANGE",
    "FactType",
    "slots_for",
    "types_backing",
]

# Computed by the offline composer for a fact of any type: the account's short name and a
# phrase for the fact's publish date ("on Thursday").
EVERY_TYPE_SLOTS: frozenset[str] = frozenset({"account", "when"})

# Kinds of claim a fact may back besides its statement (`FactType.backs`).
QUOTE = "quote"  # the reader's (or the account's people's) own words: a post, talk, interview
RELATIONSHIP = "relationship"  # a prior meeting, call, demo request, event, customer or partner status
ROLE_CHANGE = "role_change"  # someone at the account took a new role


@dataclass(frozen=True)
class FactType:
    """One fact type: the structured fields research carries, and slots computed for it alone."""

    fields: frozenset[str]
    computed: frozenset[str] = frozenset()
    # Claims a cited fact of this type may back (QUOTE, RELATIONSHIP, ROLE_CHANGE), if its text says so.
    backs: frozenset[str] = frozenset()
    # Verbs of intent the type itself states ("is looking to hire" for a job post), as word stems.
    intents: frozenset[str] = frozenset()

    @property
    def slots(self) -> frozenset[str]:
        """Every slot a pattern of this fact type may use."""
        return self.fields | self.computed | EVERY_TYPE_SLOTS


FACT_TYPES: Mapping[str, FactType] = MappingProxyType(
    {
        "funding": FactType(fields=frozenset({"round"})),
        # role_count: how many hiring facts (same role, same place) one zone cites, in words.
        "hiring": FactType(
            fields=frozenset({"role", "role_short", "role_plural", "location"}),
            computed=frozenset({"role_count"}),
            intents=frozenset({"hir", "recruit", "add", "staff", "fill"}),
        ),
        "expansion": FactType(fields=frozenset({"location"})),
        # Someone's new role at the account: "Ana Lopes joined Dymaxa as CRO".
        "leadership": FactType(fields=frozenset({"person", "role"}), backs=frozenset({ROLE_CHANGE})),
        "product_launch": FactType(fields=frozenset({"product"})),
        # Something a person at the account said or published: "Joram wrote a post about SDR ramp".
        "quote": FactType(fields=frozenset({"person", "medium", "topic"}), backs=frozenset({QUOTE})),
        # A touchpoint your CRM records: "Joram attended our webinar on SDR ramp" (activity, event).
        "crm_activity": FactType(fields=frozenset({"activity", "event"}), backs=frozenset({RELATIONSHIP})),
    }
)

# Every slot the composer computes; a fact field of the same name never shadows one.
COMPUTED_SLOTS: frozenset[str] = EVERY_TYPE_SLOTS.union(*(t.computed for t in FACT_TYPES.values()))


def types_backing(claim: str) -> frozenset[str]:
    """The fact types whose facts may back `claim` (QUOTE, RELATIONSHIP or ROLE_CHANGE).

    Built-in types only: a campaign's own types back nothing beyond their statement.
    """
    return frozenset(name for name, t in FACT_TYPES.items() if claim in t.backs)


def slots_for(fact_type: str, registry: Mapping[str, FactType] = FACT_TYPES) -> frozenset[str] | None:
    """The slots a pattern for `fact_type` may use, or None for a fact type the registry does not know."""
    known = registry.get(fact_type)
    return known.slots if known is not None else None
