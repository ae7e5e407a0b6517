"""Which fields of `campaign.yaml` and `tenant.yaml` can change copy: one table, one line of why each.

A zone set is written again (a model call, a new version, a tier-1 approval to give again)
only when something that can change a zone's text, link or rung has changed. This module
says, for every field, whether it can: `precompute.hashing` puts the `copy` fields, and
nothing else, into every account's input hash, and `docs/campaign.md` shows the table
(`welcomemat.reference`). Roles:

- `copy`: can change a zone's text, link or rung: an input of every account's hash.
- `variant`: changes copy only by moving accounts from one copy variant to another; each
  account's hash carries the variant it gets, so only the accounts that move are rewritten.
- `setting`: changes nothing published (origins, QA thresholds, alerts, review policy,
  themes): no model call, no new version, approvals kept.

A field is named by its path: `qa.max_fallback_rate`, with `*` for any key of a mapping or item
of a list (`ctas.*.href`). A `copy` entry may name a whole section (everything under it is an
input, so a field added there is one from the start: the safe side). A `setting` or `variant`
entry names one leaf, so a field added beside it is unclassified, and a test fails until
someone decides (`tests/welcomemat/campaign/test_copy_inputs.py` walks the models).
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

__all__ = [
    "CAMPAIGN_INPUTS",
    "TENANT_INPUTS",
    "FieldInput",
    "InputRole",
    "copy_material",
    "field_paths",
    "role_of",
    "unclassified_fields",
]


class InputRole(enum.StrEnum):
    """What a field's change does to published zone sets (see the module docstring)."""

    COPY = "copy"
    VARIANT = "variant"
    SETTING = "setting"


@dataclass(frozen=True)
class FieldInput:
    """One row of the table: a field path, its role and why."""

    path: str
    role: InputRole
    why: str


_C, _V, _S = InputRole.COPY, InputRole.VARIANT, InputRole.SETTING

CAMPAIGN_INPUTS: tuple[FieldInput, ...] = (
    FieldInput("tenant", _C, "whose copy it is: the provider is told, and every key and token carries it"),
    FieldInput("campaign", _C, "the campaign's id: the variant draw and every key carry it"),
    FieldInput("name", _C, "given to the model provider with every request"),
    FieldInput("guideline_version", _C, "the guidelines the copy follows, stored on every zone set"),
    FieldInput("risk_tier", _S, "how many approvers a guideline promotion needs; writes no copy"),
    FieldInput("site_base_url", _S, "the export's link when a link zone has none; zones link to CTAs"),
    FieldInput("link_allowlist", _C, "a CTA link off it is refused: decides a zone's link and rung"),
    FieldInput("snippet_origins", _S, "which sites may embed the snippet (CORS), checked at serve time"),
    FieldInput("snippet.replace_default", _S, "what the snippet does with default copy, at serve time"),
    FieldInput(
        "holdout_fraction",
        _V,
        "the arm is drawn at serve time; with an experiment, who gets a variant (hashed per account)",
    ),
    FieldInput("min_confidence", _C, "which facts are trusted, so which lines can be personal"),
    FieldInput("signal_windows_days", _C, "how long a fact is usable: which lines, and until when"),
    FieldInput("banned_phrases", _C, "a draft that uses one falls back"),
    FieldInput("banned_openers", _C, "a draft that opens with one falls back"),
    FieldInput("prohibited_claims", _C, "a draft that makes one falls back"),
    FieldInput("checks", _C, "checks every draft must pass to stay personal"),
    FieldInput("approved_words", _C, "words the grounding check lets a personal line use"),
    FieldInput("vocabulary", _C, "names the checks accept, and words given to the model provider"),
    FieldInput("voice", _C, "how the model provider is told to write"),
    FieldInput("voice_examples", _C, "shown to the model provider as the voice"),
    FieldInput("voice_profile", _C, "every personal line is checked against it (`off_voice`)"),
    FieldInput("approval.review_tiers", _S, "who approves zone sets written from now on; copy unchanged"),
    FieldInput("approval.sample_rate", _S, "how many published accounts a person reads afterwards"),
    FieldInput("seller_alerts.next_step", _S, "in the seller's alert, never on a page"),
    FieldInput("seller_alerts.next_step_url", _S, "in the seller's alert, never on a page"),
    FieldInput("seller_alerts.tiers", _S, "which accounts' engagement alerts the seller"),
    FieldInput("seller_alerts.owners", _S, "where an owner's alerts are posted"),
    FieldInput("qa.max_check_failure_rate", _S, "a threshold of the QA verdict on what is published"),
    FieldInput("qa.max_fallback_rate", _S, "a threshold of the QA verdict on what is published"),
    FieldInput("qa.fixes_margin", _S, "a threshold of the QA verdict on what is published"),
    FieldInput("pages.*.template", _S, "the layout around the zones, rendered at serve time"),
    FieldInput("pages.*.zones", _C, "which zones are written for each account"),
    FieldInput("default_copy", _C, "the default rung's text and CTA"),
    FieldInput("segments", _C, "the segment rung's text and CTA; the label is given to the model provider"),
    FieldInput("proof_library", _C, "proof points a proof zone is filled with"),
    FieldInput("ctas", _C, "a link zone's label and link; the ids the model provider chooses from"),
    FieldInput("patterns", _C, "the offline composer's lines; approved words for the checks"),
    FieldInput("mail_in_home_date", _C, "how dates are worded on lines allowed on print"),
    FieldInput("fact_types", _C, "the campaign's own fact types: their slots, windows and surfaces"),
    FieldInput("experiment.id", _C, "part of the variant draw, recorded on every zone set"),
    FieldInput("experiment.zone", _C, "the zone whose copy the variants change"),
    FieldInput("experiment.variants", _C, "each variant's patterns and voice"),
    FieldInput("experiment.stopped.keep", _V, "the variant every personal account gets (hashed per account)"),
    FieldInput(
        "experiment.stopped.ran_under",
        _C,
        "hashed in place of `guideline_version`, so accounts already on the kept variant stay as they are",
    ),
    FieldInput(
        "theme",
        _S,
        "the frame around the zones; each account's pages are checked in it every run, and one whose "
        "answer changes is published again",
    ),
)

TENANT_INPUTS: tuple[FieldInput, ...] = (
    FieldInput("tenant", _S, "must equal the campaign's `tenant`, which is an input there"),
    FieldInput("banned_phrases", _C, "added to the campaign's: a draft that uses one falls back"),
    FieldInput("banned_openers", _C, "added to the campaign's: a draft that opens with one falls back"),
    FieldInput("prohibited_claims", _C, "added to the campaign's: a draft that makes one falls back"),
    FieldInput("checks", _C, "added to the campaign's checks"),
    FieldInput(
        "max_signal_windows_days",
        _S,
        "a ceiling that refuses a campaign window; the windows used are the campaign's",
    ),
    FieldInput("min_confidence", _C, "a floor under the campaign's: which facts are trusted"),
    FieldInput(
        "ip_ranges.allow_private",
        _S,
        "which accounts' IP ranges are kept, to recognise visitors; ranges are no input of the hash",
    ),
)


def _unwrap(annotation: Any) -> Iterator[tuple[str, Any]]:
    """(suffix, inner annotation) for every model or container inside `annotation`."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        yield from _unwrap(args[0])
    elif origin is typing.Union or origin is types.UnionType:
        for arg in args:
            if arg is not type(None):
                yield from _unwrap(arg)
    elif origin in (tuple, list, set, frozenset):
        yield from (("*", a) for a in args if a is not Ellipsis)
    elif origin is dict or origin is Mapping:
        yield "*", args[1]
    else:
        yield "", annotation


def _holds_model(annotation: Any) -> bool:
    return any(_is_model(a) or (s != "" and _holds_model(a)) for s, a in _unwrap(annotation))


def _walk(annotation: Any, path: str) -> Iterator[str]:
    """The leaf paths under a field: through models, and lists or mappings of models (`*`).

    A plain value, or a list or mapping of plain values (`patterns`), is one leaf."""
    nested = False
    for suffix, arg in _unwrap(annotation):
        here = f"{path}.{suffix}" if suffix else path
        if _is_model(arg):
            nested = True
            for name, field in arg.model_fields.items():
                yield from _walk(field.annotation, f"{here}.{name}")
        elif suffix and _holds_model(arg):
            nested = True
            yield from _walk(arg, here)
    if not nested:
        yield path


def _is_model(annotation: Any) -> bool:
    return inspect.isclass(annotation) and issubclass(annotation, BaseModel)


def field_paths(model: type[BaseModel]) -> tuple[str, ...]:
    """Every leaf field of `model`, walked through nested models, lists and mappings (`*`)."""
    found: dict[str, None] = {}
    for name, field in model.model_fields.items():
        found.update(dict.fromkeys(_walk(field.annotation, name)))
    return tuple(found)


def _own_role(path: str, table: tuple[FieldInput, ...]) -> InputRole | None:
    """The role of `path`'s own row, or `copy` when a `copy` section above it has one."""
    by_path = {f.path: f.role for f in table}
    if path in by_path:
        return by_path[path]
    parts = path.split(".")
    for end in range(len(parts) - 1, 0, -1):
        if by_path.get(".".join(parts[:end])) is InputRole.COPY:
            return InputRole.COPY
    return None


def role_of(path: str, table: tuple[FieldInput, ...]) -> InputRole | None:
    """The role of `path`: its own row, a `copy` section above it, or, for a section with no
    row, `setting` when every row under it is not `copy`. None: mixed or unclassified."""
    own = _own_role(path, table)
    if own is not None:
        return own
    below = [f.role for f in table if f.path.startswith(path + ".")]
    if below and InputRole.COPY not in below:
        return InputRole.SETTING
    return None


def unclassified_fields(model: type[BaseModel], table: tuple[FieldInput, ...]) -> tuple[str, ...]:
    """The leaf fields of `model` the table does not classify, and the table's rows that are wrong:
    naming no field, or a `setting`/`variant` row naming a whole section (a field added under it
    would be decided for no one). Empty when the table is complete."""
    leaves = field_paths(model)
    problems = [p for p in leaves if role_of(p, table) is None]
    for row in table:
        below = [p for p in leaves if p.startswith(row.path + ".")]
        if row.path not in leaves and not below:
            problems.append(f"{row.path} (no such field)")
        elif below and row.role is not InputRole.COPY:
            problems.append(f"{row.path} (a {row.role.value} row must name one field, not a section)")
    seen = [row.path for row in table]
    problems += [f"{p} (classified twice)" for p in dict.fromkeys(p for p in seen if seen.count(p) > 1)]
    return tuple(problems)


_DROP = object()


def _material(value: Any, path: str, table: tuple[FieldInput, ...]) -> Any:
    role = _own_role(path, table)
    if role is InputRole.COPY:
        return value.model_dump() if isinstance(value, BaseModel) else value
    if role is not None:
        return _DROP
    if isinstance(value, BaseModel):
        # A field no row names is kept (an input: the safe side; the table's test names it).
        kept = {
            name: _material(getattr(value, name), f"{path}.{name}", table)
            for name in type(value).model_fields
        }
        kept = {name: v for name, v in kept.items() if v is not _DROP}
        return kept if kept else _DROP
    if isinstance(value, Mapping):
        return {key: _material(v, f"{path}.*", table) for key, v in value.items()}
    if isinstance(value, tuple | list):
        return [_material(v, f"{path}.*", table) for v in value]
    if value is None and role_of(path, table) is not None:
        return _DROP  # an unset section of settings (`seller_alerts`): as if set, no input
    return value


def copy_material(model: BaseModel, table: tuple[FieldInput, ...]) -> dict[str, Any]:
    """The `copy` fields of `model` (a campaign or tenant policy) as Python values, to hash.

    A top-level field that is unset or empty (None, "", an empty list or mapping) is left
    out, so a field added later with an empty default leaves every hash as it was (and an
    upgrade costs no model call).
    """
    out: dict[str, Any] = {}
    for name in type(model).model_fields:
        value = _material(getattr(model, name), name, table)
        if value is _DROP or value is None or (isinstance(value, str | tuple | list | dict) and not value):
            continue
        out[name] = value
    return out
