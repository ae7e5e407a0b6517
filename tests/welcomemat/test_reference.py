"""docs/campaign.md and `welcomemat schema` say what the models do, and the real files pass them."""

from __future__ import annotations

import copy
import functools
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from cli import main as cli
from precompute.checks import ALWAYS_RUN
from precompute.claims.classes import KNOWN_CLAIM_CLASSES
from tests.corpora import REPO_ROOT
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.campaign.tenant_policy import TenantPolicy, load_tenant_policy
from welcomemat.errors import InputError
from welcomemat.records.accounts import Account, parse_account_line
from welcomemat.reference import FORMATS, JSON_SCHEMA_DIALECT, REGENERATE, format_models, json_schema
from welcomemat.zones.contract import ZoneContract, load_zone_contract

DOC = REPO_ROOT / "docs" / "campaign.md"
EXAMPLES = REPO_ROOT / "examples"
ZONE_FILES = sorted((REPO_ROOT / "zones").glob("*.yaml"))
TENANT_YAML = """\
tenant: acme
banned_phrases: ["Unlock your potential"]
prohibited_claims: [partnership]
max_signal_windows_days: {funding: 150, hiring: 60}
min_confidence: medium
"""


@functools.cache
def validator(kind: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json_schema(kind))


def schema_errors(kind: str, document: object) -> list[str]:
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator(kind).iter_errors(document)
    ]


def doc_section(text: str, heading: str) -> str:
    """The text under a `### heading`, up to the next heading."""
    start = text.index(f"\n### {heading}\n")
    following = re.search(r"\n##+ ", text[start + 1 :])
    return text[start : start + 1 + following.start()] if following else text[start:]


# -- the reference cannot drift ---------------------------------------------------------------


def test_the_committed_reference_is_what_the_models_generate() -> None:
    command = REGENERATE.split(" > ")[0].split()
    assert command[0] == "python"
    generated = subprocess.run(
        [sys.executable, *command[1:]], cwd=REPO_ROOT, capture_output=True, check=True
    ).stdout
    assert DOC.read_bytes() == generated, f"docs/campaign.md is out of date: run `{REGENERATE}`"


def test_the_reference_names_its_regenerate_command_first() -> None:
    first = DOC.read_text(encoding="utf-8").splitlines()[0]
    assert REGENERATE in first and "do not edit" in first


@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_every_field_of_every_model_has_a_row_in_its_models_section(kind: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    assert f"\n## {FORMATS[kind].file}\n" in text
    for model in format_models(kind):
        section = doc_section(text, model.__name__)
        for name in model.model_fields:
            assert f"\n| `{name}` |" in section, f"{model.__name__}.{name} missing from docs/campaign.md"


def test_the_reference_shows_every_model_of_a_format() -> None:
    assert format_models("campaign")[0] is Campaign
    assert {m.__name__ for m in format_models("campaign")} >= {"Cta", "ZoneCopy", "SegmentCopy", "PageSpec"}
    accounts = {m.__name__ for m in format_models("accounts")}
    assert accounts == {"Account", "Contact", "Fact", "PostalAddress", "Source"}


def field_examples() -> list[tuple[str, type[BaseModel], str]]:
    return [(kind, m, name) for kind in FORMATS for m in format_models(kind) for name in m.model_fields]


@pytest.mark.parametrize(("kind", "model", "name"), field_examples())
def test_each_fields_example_passes_its_own_schema(kind: str, model: type[BaseModel], name: str) -> None:
    schema = json_schema(kind)
    own = schema if model is FORMATS[kind].model else schema["$defs"][model.__name__]
    own = own if "properties" in own else next(s for s in own["anyOf"] if "properties" in s)
    field_schema = {"$defs": schema.get("$defs", {}), **own["properties"][name]}
    example = (model.model_fields[name].examples or [None])[0]
    errors = [e.message for e in jsonschema.Draft202012Validator(field_schema).iter_errors(example)]
    assert not errors, f"{model.__name__}.{name} example {example!r}: {errors}"


def test_descriptions_name_the_claim_classes_and_the_checks_that_always_run() -> None:
    for model in (Campaign, TenantPolicy):
        description = model.model_fields["prohibited_claims"].description or ""
        named = set(re.findall(r"`([a-z_]+)`", description))
        assert named == set(KNOWN_CLAIM_CLASSES), (model.__name__, named)
    checks = ZoneContract.model_fields["checks"].description or ""
    assert set(ALWAYS_RUN) <= set(re.findall(r"`([a-z_]+)`", checks))


def test_the_readme_and_the_guide_point_at_the_reference_and_the_schema_command() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/campaign.md)" in readme
    guide = (REPO_ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    assert "(campaign.md)" in guide
    assert "`welcomemat schema campaign`" in guide


# -- `welcomemat schema KIND` ------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_schema_prints_a_draft_2020_12_schema_with_a_title(
    kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["schema", kind]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json_schema(kind)
    assert printed["$schema"] == JSON_SCHEMA_DIALECT
    assert printed["title"] == f"Welcomemat {FORMATS[kind].file}"
    jsonschema.Draft202012Validator.check_schema(printed)


def test_schema_of_an_unknown_kind_is_bad_usage_and_lists_the_kinds() -> None:
    result = subprocess.run(
        [str(Path(sys.executable).parent / "welcomemat"), "schema", "campain"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    listed = re.search(r"invalid choice: 'campain' \(choose from (.+)\)", result.stderr)
    assert listed, result.stderr
    assert set(re.findall(r"'(\w+)'", listed.group(1))) == set(FORMATS)


def test_accounts_keep_unknown_fields_and_our_formats_refuse_them() -> None:
    accounts = json_schema("accounts")
    assert accounts["additionalProperties"] is True
    assert all(d["additionalProperties"] is True for d in accounts["$defs"].values())
    for kind in ("campaign", "tenant", "zone"):
        schema = json_schema(kind)
        objects = [schema, *schema.get("$defs", {}).values()]
        for obj in objects:
            obj = (
                obj
                if "properties" in obj
                else next((s for s in obj.get("anyOf", []) if "properties" in s), {})
            )
            assert obj.get("additionalProperties", False) is False, (kind, obj.get("title"))


# -- the real files pass the schemas --------------------------------------------------------


def test_the_example_campaign_passes_its_schema() -> None:
    document = yaml.safe_load((EXAMPLES / "campaign.yaml").read_text(encoding="utf-8"))
    assert schema_errors("campaign", document) == []


@pytest.mark.parametrize("path", ZONE_FILES, ids=lambda p: p.name)
def test_every_zone_contract_passes_its_schema(path: Path) -> None:
    assert schema_errors("zone", yaml.safe_load(path.read_text(encoding="utf-8"))) == []


def test_every_example_account_line_passes_its_schema() -> None:
    check = validator("accounts")
    lines = (EXAMPLES / "accounts.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) > 100
    for number, line in enumerate(lines, start=1):
        problems = [e.message for e in check.iter_errors(json.loads(line))]
        assert not problems, f"examples/accounts.jsonl line {number}: {problems}"


def test_a_tenant_file_the_loader_takes_passes_its_schema(tmp_path: Path) -> None:
    path = tmp_path / "tenant.yaml"
    path.write_text(TENANT_YAML, encoding="utf-8")
    load_tenant_policy(path)
    assert schema_errors("tenant", yaml.safe_load(TENANT_YAML)) == []


# -- schema and loader refuse the same mistakes -----------------------------------------------


EXAMPLE_CAMPAIGN = yaml.safe_load((EXAMPLES / "campaign.yaml").read_text(encoding="utf-8"))
EXAMPLE_ZONE = yaml.safe_load((REPO_ROOT / "zones" / "hero_headline.yaml").read_text(encoding="utf-8"))
EXAMPLE_ACCOUNT = json.loads((EXAMPLES / "accounts.jsonl").read_text(encoding="utf-8").splitlines()[0])


def changed(example: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    document = copy.deepcopy(example)
    change(document)
    return document


def campaign_with(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    return changed(EXAMPLE_CAMPAIGN, change)


def zone_with(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    return changed(EXAMPLE_ZONE, change)


def account_with(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    return changed(EXAMPLE_ACCOUNT, change)


MISTAKES: list[tuple[str, str, dict[str, Any]]] = [
    ("campaign", "holdout_fraction", campaign_with(lambda d: d.update(holdout_fraction="ten percent"))),
    ("campaign", "holdout_fraction", campaign_with(lambda d: d.update(holdout_fraction=0.6))),
    ("campaign", "holdout_fracton", campaign_with(lambda d: d.update(holdout_fracton=0.1))),
    (
        "campaign",
        "signal_windows_days.funding",
        campaign_with(lambda d: d["signal_windows_days"].update(funding=9000)),
    ),
    ("campaign", "min_confidence", campaign_with(lambda d: d.update(min_confidence="sure"))),
    ("campaign", "ctas", campaign_with(lambda d: d.update(ctas="book_ramp_review"))),
    ("campaign", "default_copy.cta.cta", campaign_with(lambda d: d["default_copy"]["cta"].update(cta=["x"]))),
    ("campaign", "approval.review_tiers", campaign_with(lambda d: d["approval"].update(review_tiers="1"))),
    ("zone", "max_words", zone_with(lambda d: d.update(max_words="twelve"))),
    ("zone", "checks", zone_with(lambda d: d.update(checks=["spellcheck"]))),
    ("zone", "fallback", zone_with(lambda d: d.update(fallback="personal"))),
    ("zone", "link", zone_with(lambda d: d.update(link="sometimes"))),
    ("tenant", "min_confidence", {"tenant": "acme", "min_confidence": "sure"}),
    (
        "tenant",
        "max_signal_windows_days.funding",
        {"tenant": "acme", "max_signal_windows_days": {"funding": 0}},
    ),
    ("tenant", "banned_phrase", {"tenant": "acme", "banned_phrase": ["x"]}),
    ("accounts", "tier", account_with(lambda d: d.update(tier="gold"))),
    ("accounts", "employee_count", account_with(lambda d: d.update(employee_count=-1))),
    ("accounts", "contacts.0.contact_id", account_with(lambda d: d["contacts"][0].update(contact_id="a b"))),
    ("accounts", "facts.0.surfaces", account_with(lambda d: d["facts"][0].update(surfaces="web"))),
]


def load_as_the_commands_do(kind: str, document: dict[str, Any], folder: Path) -> None:
    """Write the document as its file and read it with the format's loader (InputError if refused)."""
    if kind == "accounts":
        parse_account_line(json.dumps(document), file="accounts.jsonl", line=1)
        return
    path = folder / (f"{document.get('id')}.yaml" if kind == "zone" else f"{kind}.yaml")
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    {"campaign": load_campaign, "tenant": load_tenant_policy, "zone": load_zone_contract}[kind](path)


@pytest.mark.parametrize(("kind", "field", "document"), MISTAKES, ids=[f"{k}:{f}" for k, f, _ in MISTAKES])
def test_a_wrong_field_is_refused_by_the_schema_and_by_the_loader(
    kind: str, field: str, document: dict[str, Any], tmp_path: Path
) -> None:
    assert schema_errors(kind, document), f"the {kind} schema takes a bad {field}"
    with pytest.raises(InputError) as refused:
        load_as_the_commands_do(kind, document, tmp_path)
    assert refused.value.field == field


@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_the_unchanged_documents_pass_both(kind: str, tmp_path: Path) -> None:
    document = {
        "campaign": campaign_with(lambda d: None),
        "zone": zone_with(lambda d: None),
        "tenant": yaml.safe_load(TENANT_YAML),
        "accounts": account_with(lambda d: None),
    }[kind]
    assert schema_errors(kind, document) == []
    load_as_the_commands_do(kind, document, tmp_path)


def test_an_unknown_account_field_passes_both() -> None:
    document = account_with(lambda d: d.update(crm_owner="sam@example.com", extra={"any": ["thing"]}))
    assert schema_errors("accounts", document) == []
    kept = Account.model_validate(document).model_extra or {}
    assert (kept["crm_owner"], kept["extra"]) == ("sam@example.com", {"any": ["thing"]})


@pytest.mark.parametrize(
    ("copy", "valid"),
    [("Plain words", True), ({"text": "Plain words"}, True), ("", False), ({"cta": "talk_to_sales"}, False)],
)
def test_zone_copy_is_a_string_or_a_mapping_for_both(copy: object, valid: bool, tmp_path: Path) -> None:
    document = campaign_with(lambda d: d["default_copy"].update(hero_headline=copy))
    assert (schema_errors("campaign", document) == []) is valid
    if valid:
        load_as_the_commands_do("campaign", document, tmp_path)
    else:
        with pytest.raises(InputError):
            load_as_the_commands_do("campaign", document, tmp_path)


@settings(deadline=None)  # the machine is shared: timing says nothing about this property
@given(st.integers(min_value=-10, max_value=300))
def test_schema_and_loader_agree_on_zone_limits(words: int) -> None:
    document = zone_with(lambda d: d.update(max_words=words))
    try:
        ZoneContract.model_validate(document)
        loader_takes = True
    except ValidationError:
        loader_takes = False
    assert (not schema_errors("zone", document)) == loader_takes


@settings(deadline=None)
@given(st.integers(min_value=-3, max_value=9), st.floats(allow_nan=False, min_value=-1, max_value=2))
def test_schema_and_loader_agree_on_tier_and_holdout(tier: int, fraction: float) -> None:
    account = account_with(lambda d: d.update(tier=tier))
    try:
        Account.model_validate(account)
        loader_takes = True
    except ValidationError:
        loader_takes = False
    assert (not schema_errors("accounts", account)) == loader_takes
    campaign = campaign_with(lambda d: d.update(holdout_fraction=fraction))
    try:
        Campaign.model_validate(campaign)
        loader_takes = True
    except ValidationError:
        loader_takes = False
    assert (not schema_errors("campaign", campaign)) == loader_takes
