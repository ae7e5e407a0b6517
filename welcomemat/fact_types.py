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
listed here (they are kept); a pattern may only name those listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "COMPUTED_SLOTS",
    "EVERY_TYPE_SLOTS",
    "FACT_TYPES",
    "FactType",
    "slots_for",
]

# Computed by the offline composer for a fact of any type: the account's short name and a
# phrase for the fact's publish date ("on Thursday").
EVERY_TYPE_SLOTS: frozenset[str] = frozenset({"account", "when"})


@dataclass(frozen=True)
class FactType:
    """One fact type: the structured fields research carries, and slots computed for it alone."""

    fields: frozenset[str]
    computed: frozenset[str] = frozenset()

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
        ),
        "expansion": FactType(fields=frozenset({"location"})),
        "leadership": FactType(fields=frozenset({"person"})),
        "product_launch": FactType(fields=frozenset({"product"})),
    }
)

# Every slot the composer computes; a fact field of the same name never shadows one.
COMPUTED_SLOTS: frozenset[str] = EVERY_TYPE_SLOTS.union(*(t.computed for t in FACT_TYPES.values()))


def slots_for(fact_type: str) -> frozenset[str] | None:
    """The slots a pattern for `fact_type` may use, or None for a fact type Welcomemat does not know."""
    known = FACT_TYPES.get(fact_type)
    return known.slots if known is not None else None
