"""The input formats' reference and JSON Schemas, built from the models the loaders validate with.

`docs/campaign.md` and `welcomemat schema KIND` both come from here, so neither can say
something the code does not do: every field's type and default is read from its model,
its meaning and example from the model's `Field(description=..., examples=[...])`, and
the rules checked at load from the docstrings of the model's validators. A test fails
when the committed file and the models disagree. Regenerate with:

    python -m welcomemat.reference > docs/campaign.md
"""

from __future__ import annotations

import inspect
import json
import sys
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.copy_inputs import CAMPAIGN_INPUTS, TENANT_INPUTS, FieldInput
from welcomemat.campaign.tenant_policy import TenantPolicy
from welcomemat.ids import ID_PATTERN
from welcomemat.limits import INPUT_LIMITS
from welcomemat.records.accounts import MAX_LINE_BYTES, Account
from welcomemat.zones.contract import ZoneContract

__all__ = [
    "FORMATS",
    "JSON_SCHEMA_DIALECT",
    "REGENERATE",
    "InputFormat",
    "format_models",
    "json_schema",
    "main",
    "render_markdown",
    "schema_text",
]

REGENERATE = "python -m welcomemat.reference > docs/campaign.md"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class InputFormat:
    """One input file format: its top model, and what the reference says around the tables."""

    kind: str  # the KIND of `welcomemat schema KIND`
    file: str
    model: type[BaseModel]
    about: str
    # Rules enforced outside the models' validators (by a loader or the precompute job).
    other_rules: tuple[str, ...]


FORMATS: Mapping[str, InputFormat] = {
    f.kind: f
    for f in (
        InputFormat(
            kind="campaign",
            file="campaign.yaml",
            model=Campaign,
            about="One file per campaign: its links, guardrails, pages and human-written copy. "
            "`welcomemat validate` and `welcomemat precompute` read it and check it against the zone "
            "contracts. Unknown keys are refused, so a misspelt key never passes silently. "
            "The repository's `examples/campaign.yaml` is a complete one.",
            other_rules=(
                "`welcomemat precompute` refuses a campaign that loosens its tenant's policy: a `tenant` "
                "other than `tenant.yaml`'s, a signal window above the tenant's maximum for its type, or a "
                "`min_confidence` stated below the tenant's.",
                "`welcomemat precompute` refuses a `prohibited_claims` class it has no detector for.",
                "Before any account is processed, `welcomemat precompute` runs the zone checks on every "
                "segment and default copy (banned phrases and openers, markup, prohibited claims...); "
                "copy that fails stops the run, naming the segment and zone.",
            ),
        ),
        InputFormat(
            kind="tenant",
            file="tenant.yaml",
            model=TenantPolicy,
            about="Optional, one per tenant, written once by the brand team: rules every campaign of the "
            "tenant inherits and may only tighten (hard rules in code ▸ `tenant.yaml` ▸ `campaign.yaml` ▸ "
            "zone contract). `welcomemat precompute` reads `tenant.yaml` beside the campaign file, or "
            "the file `--tenant-policy` names. Unknown keys are refused.",
            other_rules=(
                "Lists combine: a campaign's banned phrases, openers and prohibited claims are added to "
                "the tenant's, never replace them, and both add to the banned openers shipped with "
                "Welcomemat (Hope this email finds you well, Quick question, I noticed your work at ...), "
                "which no file can remove.",
            ),
        ),
        InputFormat(
            kind="zone",
            file="zones/*.yaml",
            model=ZoneContract,
            about="One typed contract per page zone, in `zones/` (or the folder `--zones` names): what the "
            "zone is for, its limits, the facts it may cite, its checks and its fallback. Unknown keys "
            "are refused. The repository's `zones/` holds the reference set.",
            other_rules=(
                "The file's name without `.yaml` is the contract's `id`.",
                "The folder holds at least one `*.yaml` contract.",
            ),
        ),
        InputFormat(
            kind="accounts",
            file="accounts.jsonl",
            model=Account,
            about="One account a line, a JSON object, as a CRM or research table exports it. Reading is "
            "strict about each line and forgiving of the file: a bad line is reported with its line "
            "number and field and skipped, and the rest is read. Unknown fields are kept (the schema "
            "allows them). The JSON Schema describes one line.",
            other_rules=(
                f"A line that is not UTF-8, not a JSON object, or longer than {MAX_LINE_BYTES:,} bytes is "
                "reported and skipped; so is a line with a field that breaks a rule above (the first "
                "problem is named).",
                "A repeated `account_id` is reported and skipped: the first line wins.",
                "Each `ip_ranges` entry is a CIDR range one company may claim: at most /8 wide (IPv4) "
                "or /32 (IPv6), outside special-purpose space (loopback, private, shared, link-local, "
                "multicast, reserved; an IPv4-mapped IPv6 range is judged, and stored, as its IPv4 range). "
                "`tenant.yaml` `ip_ranges.allow_private` admits private, shared and link-local ranges. The "
                "problem names the entry (`ip_ranges.1`) and says what would pass.",
                "Blank lines are ignored; a byte-order mark on the first line is allowed.",
                "Facts are never refused here: whether each may be built on is the trust policy's "
                "decision at precompute, one reason per fact (`welcomemat explain` shows them).",
            ),
        ),
    )
}


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one input format, `kind` a key of FORMATS."""
    fmt = FORMATS[kind]
    schema = fmt.model.model_json_schema()
    schema.pop("title", None)
    defs = schema.pop("$defs", None)
    head = {"$schema": JSON_SCHEMA_DIALECT, "title": f"Welcomemat {fmt.file}"}
    return {**head, **schema, **({"$defs": defs} if defs else {})}


def schema_text(kind: str) -> str:
    """The JSON Schema of one input format as the text `welcomemat schema KIND` prints."""
    return json.dumps(json_schema(kind), indent=2) + "\n"


def format_models(kind: str) -> tuple[type[BaseModel], ...]:
    """The format's model and every model its fields use, in the order the reference shows them."""
    found: dict[type[BaseModel], None] = {}

    def visit(model: type[BaseModel]) -> None:
        if model in found:
            return
        found[model] = None
        for field in model.model_fields.values():
            for inner in _models_in(field.annotation):
                visit(inner)

    visit(FORMATS[kind].model)
    return tuple(found)


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


# -- markdown ---------------------------------------------------------------------------------


def render_markdown() -> str:
    """docs/campaign.md, whole."""
    out = [
        f"<!-- Generated by `{REGENERATE}` from the models in welcomemat/; do not edit: "
        "change the models, then regenerate. -->",
        "",
        "# Input formats: campaign, tenant, zones, accounts",
        "",
        "Every field Welcomemat reads from its four input files: type, default (or *required*), "
        "meaning and an example, taken from the models the loaders validate with. A file that breaks "
        "a rule is refused (or, for an accounts line, skipped) with a message that names the file, "
        "line and field; `welcomemat validate CAMPAIGN.yaml ACCOUNTS.jsonl` checks them all at once.",
        "",
        *(f"- [{f.file}](#{_anchor(f.file)}) (`welcomemat schema {f.kind}`)" for f in FORMATS.values()),
        "- [What writes pages again](#what-writes-pages-again)",
        "- [Validate as you type](#validate-as-you-type)",
        "",
        f"An **id** is letters, digits and `_ . -`, starting with a letter or digit, at most 64 "
        f"characters (`{ID_PATTERN}`): it goes into Redis keys, URLs and tokens unescaped.",
        "",
        "**Limits.** Every input is read within these (`welcomemat/limits.py`), before or while it "
        "is parsed, so no file decides what reading it costs:",
        "",
        *(f"- {row.applies_to}: {row.limit}; past it: {row.past_it}." for row in INPUT_LIMITS),
        "",
    ]
    for fmt in FORMATS.values():
        out += _format_section(fmt)
    out += _copy_inputs_section()
    out += _editor_section()
    return "\n".join(out)


def _format_section(fmt: InputFormat) -> list[str]:
    schema = json_schema(fmt.kind)
    defs: dict[str, Any] = schema.get("$defs", {})
    out = [f"## {fmt.file}", "", fmt.about, ""]
    rules: list[str] = []
    for model in format_models(fmt.kind):
        own = schema if model is fmt.model else defs[model.__name__]
        out += _model_section(model, _object_branch(own), defs)
        rules += _validator_rules(model)
    out += ["### Checked at load", ""]
    out += [f"- {rule}" for rule in (*rules, *fmt.other_rules)]
    out.append("")
    return out


def _model_section(model: type[BaseModel], schema: Mapping[str, Any], defs: Mapping[str, Any]) -> list[str]:
    out = [f"### {model.__name__}", "", _one_line(inspect.getdoc(model) or ""), ""]
    out += ["| field | type | default | meaning | example |", "|---|---|---|---|---|"]
    for name, field in model.model_fields.items():
        where = f"{model.__module__}.{model.__name__}.{name}"
        if not field.description:
            raise ValueError(f"{where} has no description (Field(description=...))")
        if not field.examples:
            raise ValueError(f"{where} has no example (Field(examples=[...]))")
        cells = (
            f"`{name}`",
            _type(schema["properties"][name], defs),
            "required" if field.is_required() else _code(field.get_default(call_default_factory=True)),
            _one_line(field.description),
            _code(field.examples[0]),
        )
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    extra = model.model_config.get("extra")
    out += ["", "Unknown fields are kept." if extra == "allow" else "Unknown fields are refused.", ""]
    return out


def _validator_rules(model: type[BaseModel]) -> list[str]:
    """The rules a model's validators enforce, as their docstrings state them."""
    decorators = model.__pydantic_decorators__
    rules: list[str] = []
    functions: list[tuple[str, Any]] = [(n, d.func) for n, d in decorators.field_validators.items()]
    functions += [(n, d.func) for n, d in decorators.model_validators.items()]
    for name, func in functions:
        doc = inspect.getdoc(getattr(func, "__func__", func))
        if not doc:
            where = f"{model.__module__}.{model.__name__}.{name}"
            raise ValueError(f"{where}: a validator states its rule in a docstring")
        head, _, rest = doc.partition("\n\n")
        rest = rest.strip()
        items = [_one_line(i) for i in rest.removeprefix("- ").split("\n- ")] if rest.startswith("- ") else []
        link = f"[{model.__name__}](#{_anchor(model.__name__)})"
        rules.append(f"{link}: {_one_line(head)}" + "".join(f"\n  - {i}" for i in items))
    return rules


def _object_branch(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object schema of a model (a model that also accepts a shorthand has an `anyOf`)."""
    if "properties" in schema:
        return schema
    return next(s for s in schema["anyOf"] if "properties" in s)


def _type(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    """A property's JSON Schema, in words."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        target = defs[name]
        if "enum" in target:
            return _one_of(target["enum"])
        return f"[{name}](#{_anchor(name)})"
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"]
        text = " or ".join(_type(s, defs) for s in options)
        return text + (" or null" if len(options) < len(schema["anyOf"]) else "")
    if "enum" in schema:
        return _one_of(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        return _string(schema)
    if kind in ("integer", "number"):
        return f"{kind}{_range(schema.get('minimum'), schema.get('maximum'))}"
    if kind == "array":
        text = f"list of {_type(schema.get('items', {}), defs)}"
        notes = [f"at least {schema['minItems']}"] if "minItems" in schema else []
        notes += ["no repeats"] if schema.get("uniqueItems") else []
        return text + (f" ({', '.join(notes)})" if notes else "")
    if kind == "object":
        by_pattern: dict[str, Any] = schema.get("patternProperties", {})
        key = "id" if ID_PATTERN in by_pattern else "string"
        value = by_pattern.get(ID_PATTERN, schema.get("additionalProperties", {}))
        least = schema.get("minProperties")
        sized = f" (at least {least} {'entry' if least == 1 else 'entries'})" if least else ""
        return f"mapping of {key} → {_type(value, defs)}{sized}"
    return kind if isinstance(kind, str) else "any value"


def _string(schema: Mapping[str, Any]) -> str:
    pattern = schema.get("pattern")
    if pattern == ID_PATTERN:
        return "id"
    if pattern is not None:
        return f"string matching `{pattern}`"
    low, high = schema.get("minLength"), schema.get("maxLength")
    if high is not None:
        return f"string ({low or 0}–{high} characters)"
    return "string (not empty)" if low == 1 else "string"


def _range(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" ({low:g}–{high:g})"
    if low is not None:
        return f" (≥ {low:g})"
    return f" (≤ {high:g})" if high is not None else ""


def _one_of(values: Sequence[Any]) -> str:
    return "one of " + ", ".join(f"`{v}`" for v in values)


def _code(value: Any) -> str:
    if isinstance(value, BaseModel):
        return "each field's default"
    return f"`{json.dumps(to_jsonable_python(value), ensure_ascii=False)}`"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to dashes."""
    kept = "".join(c for c in heading.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def _copy_inputs_section() -> list[str]:
    """Which fields are inputs of the input hash (`welcomemat.campaign.copy_inputs`), one line of why each."""

    def table(rows: tuple[FieldInput, ...]) -> list[str]:
        out = ["| field | role | why |", "|---|---|---|"]
        cells = ((f"`{r.path}`", r.role.value, r.why) for r in rows)
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells]
        return [*out, ""]

    return [
        "## What writes pages again",
        "",
        "`welcomemat precompute` writes an account's zone set again (a model call with a model "
        "provider, a new version, and for a tier the campaign reviews, a page to approve again) only "
        "when one of its inputs changed: its record (its `ip_ranges` aside), the zone contracts, the "
        "provider and model, and the fields below marked **copy**, the ones that can change a zone's "
        "text, link or rung. A field marked **setting** changes nothing published: edit it and rerun, "
        "and every account is `unchanged`, with no model call and every approval kept (a review "
        "policy change applies to zone sets written from then on). A field marked **variant** "
        "rewrites only the accounts whose copy variant it moves. `*` stands for any key or item; a "
        "**copy** row for a section covers every field in it.",
        "",
        "### campaign.yaml",
        "",
        *table(CAMPAIGN_INPUTS),
        "### tenant.yaml",
        "",
        *table(TENANT_INPUTS),
    ]


def _editor_section() -> list[str]:
    kinds = "|".join(FORMATS)
    return [
        "## Validate as you type",
        "",
        f"`welcomemat schema {kinds}` prints the JSON Schema (draft 2020-12) of a format. Write "
        "each one you use to a file (again after upgrading Welcomemat):",
        "",
        "```sh",
        *(f"welcomemat schema {f.kind} > {f.kind}.schema.json" for f in FORMATS.values()),
        "```",
        "",
        "An editor with the YAML language server (VS Code's YAML extension, Neovim, Helix, JetBrains "
        "IDEs) then checks every key, type and range as you type, and completes field names with their "
        "meaning, when the file's first line names its schema (a path relative to the YAML file, or a "
        "URL):",
        "",
        "```yaml",
        "# yaml-language-server: $schema=./campaign.schema.json",
        "tenant: acme",
        "```",
        "",
        "Or map files to schemas once, in VS Code's `settings.json`:",
        "",
        "```json",
        '"yaml.schemas": {"./zone.schema.json": "zones/*.yaml", "./campaign.schema.json": "campaign.yaml"}',
        "```",
        "",
        "A schema checks each field on its own. What spans fields or files (under *Checked at load* "
        "above) is checked by `welcomemat validate CAMPAIGN.yaml ACCOUNTS.jsonl` (the campaign against "
        "its zone contracts, every accounts line) and, for the tenant's rules, by "
        "`welcomemat precompute`. The accounts schema describes one line of `accounts.jsonl`: any JSON "
        "Schema validator can check each line against it.",
        "",
    ]


def main() -> int:
    """`python -m welcomemat.reference`: docs/campaign.md on stdout, UTF-8 whatever the locale.

    The generator's entry point, not a command: the text is `render_markdown`'s."""
    sys.stdout.buffer.write(render_markdown().encode("utf-8"))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
