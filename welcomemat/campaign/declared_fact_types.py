"""A campaign's own fact types: the `fact_types:` section of campaign.yaml.

The built-in types (`welcomemat.campaign.fact_types`: funding, hiring, expansion ...) cover the usual
signals. A campaign about product recalls, acquisitions or certifications declares its own,
each with:

- `fields`: the structured string fields its facts carry, which are the slots its patterns
  may use (besides `{account}` and `{when}`, which every type has);
- `window_days`: how long after its `published_at` a fact of the type stays a signal (what
  `signal_windows_days` says for a built-in type; within `tenant.yaml`'s ceilings);
- `surfaces`: where a fact of the type may ever be used.

Its patterns are written under `patterns:`, keyed by the type like any other, and a declared
type may be cited in the zones its patterns are written for, as if those zones' contracts
listed it (`widen_zone_contracts`): the zone contracts are shared by campaigns and cannot
know a campaign's types, while the patterns say exactly where the campaign means to use it.

An account's fact of a declared type is checked against the declaration:

- its `surfaces` are narrowed to the declared ones (`narrow_surfaces`, by precompute): a
  campaign that keeps recalls off print never prints one, whatever the research allows;
- a fact without a declared field fills no pattern that uses that slot (the offline composer
  skips the pattern; `welcomemat validate` names the fact and field: `missing_field`);
- a field that is neither a standard fact field nor declared is kept, but fills no slot
  (`welcomemat validate`: `unknown_field`).

The same field checks apply to the built-in types against their registry entries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints, field_validator

from welcomemat.campaign.fact_types import COMPUTED_SLOTS, FACT_TYPES, FactType
from welcomemat.campaign.sections import MAX_SIGNAL_WINDOW_DAYS, STRICT
from welcomemat.records.accounts import Fact
from welcomemat.surfaces import ALL_SURFACES, Surface
from welcomemat.zones.contract import ZoneContract

__all__ = [
    "STANDARD_FACT_FIELDS",
    "FactTypeDeclaration",
    "FactTypeName",
    "fact_type_registry",
    "narrow_surfaces",
    "widen_zone_contracts",
]

# Every fact has these (accounts.jsonl's `Fact`); they are never slots (welcomemat/campaign/fact_types.py).
STANDARD_FACT_FIELDS: frozenset[str] = frozenset(Fact.model_fields)

# Lower-case snake case: a type name is a YAML key, a pattern section and a reason in reports.
FactTypeName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
# A slot is written `{name}` in a pattern: a Python identifier, lower-case by convention.
SlotName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]


class FactTypeDeclaration(BaseModel):
    """A fact type the campaign adds to the built-in ones: its fields, window and surfaces."""

    model_config = STRICT

    fields: tuple[SlotName, ...] = Field(
        default=(),
        description="The structured string fields a fact of this type carries: the slots its patterns may "
        "use, besides `{account}` and `{when}`. A fact without one fills no pattern that uses it "
        "(`welcomemat validate` names it).",
        examples=[["company"]],
    )
    window_days: int = Field(
        ge=1,
        le=MAX_SIGNAL_WINDOW_DAYS,
        description="How many days after its `published_at` a fact of this type stays usable (the type's "
        "`signal_windows_days` entry, which it must not also have); within `tenant.yaml`'s "
        "`max_signal_windows_days`.",
        examples=[60],
    )
    surfaces: tuple[Surface, ...] = Field(
        default=ALL_SURFACES,
        min_length=1,
        description="Where a fact of this type may ever be used (`web`, `email`, `seller`, `print`; `web` "
        "among them): each fact's own `surfaces` are narrowed to these.",
        examples=[["web", "email"]],
    )

    @field_validator("fields")
    @classmethod
    def _fields_are_slots(cls, fields: tuple[str, ...]) -> tuple[str, ...]:
        """`fields` are distinct, and none is a standard fact field (`statement`, `subject` ...) or a
        slot the composer computes (`account`, `when`, `role_count`)."""
        seen: set[str] = set()
        for name in fields:
            if name in seen:
                raise ValueError(f"field {name!r} is listed twice")
            seen.add(name)
            if name in STANDARD_FACT_FIELDS:
                raise ValueError(f"{name!r} is a field every fact has, never a slot")
            if name in COMPUTED_SLOTS:
                raise ValueError(f"{{{name}}} is a slot Welcomemat fills itself: name the field otherwise")
        return fields

    @field_validator("surfaces")
    @classmethod
    def _on_the_web(cls, surfaces: tuple[Surface, ...]) -> tuple[Surface, ...]:
        """`surfaces` include `web`: a type kept off the web could fill no page zone."""
        if Surface.WEB not in surfaces:
            raise ValueError("must include web: a fact type kept off the web fills no page zone")
        return tuple(dict.fromkeys(surfaces))


def fact_type_registry(declared: Mapping[str, FactTypeDeclaration]) -> Mapping[str, FactType]:
    """The built-in fact types and the campaign's own, as the slot lookups read them.

    A declared name that is built in is refused at load; here the built-in entry wins.
    """
    if not declared:
        return FACT_TYPES
    own = {name: FactType(fields=frozenset(d.fields)) for name, d in declared.items()}
    return MappingProxyType({**own, **FACT_TYPES})


def narrow_surfaces(
    surfaces: tuple[Surface, ...], declaration: FactTypeDeclaration | None
) -> tuple[Surface, ...]:
    """A fact's surfaces as its declared type allows them (unchanged for a built-in type)."""
    if declaration is None:
        return surfaces
    return tuple(s for s in surfaces if s in declaration.surfaces)


def widen_zone_contracts(
    zones: Mapping[str, ZoneContract],
    declared: Mapping[str, FactTypeDeclaration],
    patterns: Mapping[str, Mapping[str, Sequence[str]]],
) -> dict[str, ZoneContract]:
    """The zone contracts, each also taking the declared types the campaign writes patterns for in it."""
    out = dict(zones)
    for fact_type in declared:
        if fact_type in FACT_TYPES:
            continue  # refused at load; a built-in type's zones are the contracts' to say
        for zone_id, lines in patterns.get(fact_type, {}).items():
            contract = out.get(zone_id)
            if contract is not None and lines and fact_type not in contract.fact_types:
                out[zone_id] = contract.model_copy(update={"fact_types": contract.fact_types | {fact_type}})
    return out
