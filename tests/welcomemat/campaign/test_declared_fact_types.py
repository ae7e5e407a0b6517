"""A campaign's own fact types (`fact_types:`) and the rule that every window is for a type a pattern uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acquisition_campaign import ACQUISITION, ACQUISITION_PATTERN, EXAMPLE, with_acquisition
from tests.corpora import REPO_ROOT
from welcomemat.campaign.contract import Campaign, check_campaign, load_campaign
from welcomemat.campaign.declared_fact_types import FactTypeDeclaration, narrow_surfaces, widen_zone_contracts
from welcomemat.campaign.guidelines import guideline_hash
from welcomemat.errors import ContractProblems
from welcomemat.reference import json_schema
from welcomemat.surfaces import Surface
from welcomemat.zones.contract import load_zone_contracts


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "campaign.yaml"
    path.write_text(text)
    return path


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if needle in line)


def problems_of(path: Path) -> list[tuple[int | None, str | None, str]]:
    campaign, problems = check_campaign(path, load_zone_contracts(REPO_ROOT / "zones"))
    assert campaign is None
    return [(p.line, p.field, p.message) for p in problems]


def test_a_declared_type_loads_with_its_slots_window_and_surfaces(tmp_path: Path) -> None:
    campaign = load_campaign(write(tmp_path, with_acquisition()), load_zone_contracts(REPO_ROOT / "zones"))
    assert campaign.fact_types["acquisition"] == FactTypeDeclaration(
        fields=("company",), window_days=60, surfaces=(Surface.WEB, Surface.EMAIL)
    )
    assert campaign.known_fact_types()["acquisition"].slots == {"company", "account", "when"}
    assert campaign.signal_windows()["acquisition"] == 60
    assert campaign.signal_windows()["funding"] == 30  # the built-in windows stay as written
    assert campaign.window_fields()["acquisition"] == ("fact_types", "acquisition", "window_days")


def test_a_window_for_a_type_no_pattern_can_use_is_refused_at_its_line(tmp_path: Path) -> None:
    path = write(
        tmp_path, EXAMPLE.replace("  leadership: 90\n", "  leadership: 90\n  product_launch: 60\n", 1)
    )
    assert problems_of(path) == [
        (
            line_of(path, "product_launch: 60"),
            "signal_windows_days.product_launch",
            "no pattern can use product_launch facts: write patterns.product_launch, or drop this window "
            "(a window lets facts be trusted that no approved line states)",
        )
    ]
    with pytest.raises(ContractProblems) as refused:
        load_campaign(path)
    assert refused.value.line == line_of(path, "product_launch: 60")


def test_a_window_for_a_type_nobody_knows_says_so(tmp_path: Path) -> None:
    path = write(tmp_path, EXAMPLE.replace("  leadership: 90\n", "  leadership: 90\n  acquisition: 60\n", 1))
    [(line, field, message)] = problems_of(path)
    assert (line, field) == (line_of(path, "acquisition: 60"), "signal_windows_days.acquisition")
    assert "'acquisition' is no fact type: built in, or declared under fact_types" in message


@pytest.mark.parametrize(
    ("declaration", "pattern", "field", "words"),
    [
        (
            ACQUISITION.replace("acquisition:", "funding:"),
            "",
            "fact_types.funding",
            "'funding' is a built-in fact type",
        ),
        (
            ACQUISITION,
            "",
            "fact_types.acquisition",
            "no pattern uses acquisition facts: write them under patterns.acquisition",
        ),
        (
            ACQUISITION,
            ACQUISITION_PATTERN.replace("{company}", "{compnay}"),
            "patterns.acquisition.hero_headline.0",
            "no acquisition fact fills slot {compnay}: did you mean {company}?",
        ),
        (
            ACQUISITION.replace("[web, email]", "[email, print]"),
            ACQUISITION_PATTERN,
            "fact_types.acquisition.surfaces",
            "must include web",
        ),
        (
            ACQUISITION.replace("[company]", "[company, statement]"),
            ACQUISITION_PATTERN,
            "fact_types.acquisition.fields",
            "'statement' is a field every fact has, never a slot",
        ),
        (
            ACQUISITION.replace("[company]", "[company, when]"),
            ACQUISITION_PATTERN,
            "fact_types.acquisition.fields",
            "{when} is a slot Welcomemat fills itself",
        ),
        (
            ACQUISITION.replace("window_days: 60", "window_days: 900"),
            ACQUISITION_PATTERN,
            "fact_types.acquisition.window_days",
            "less than or equal to 730",
        ),
    ],
)
def test_a_declaration_is_refused_at_its_line_saying_why(
    tmp_path: Path, declaration: str, pattern: str, field: str, words: str
) -> None:
    path = write(tmp_path, with_acquisition(declaration=declaration, pattern=pattern))
    found = problems_of(path)
    assert [f for _, f, _ in found] == [field], found
    line, _, message = found[0]
    assert words in message and line is not None and line > 1


def test_a_declared_type_may_not_also_have_a_signal_window(tmp_path: Path) -> None:
    text = with_acquisition().replace("  leadership: 90\n", "  leadership: 90\n  acquisition: 45\n", 1)
    path = write(tmp_path, text)
    [(line, field, message)] = problems_of(path)
    assert (line, field) == (line_of(path, "acquisition: 45"), "signal_windows_days.acquisition")
    assert "fact_types.acquisition.window_days: 60" in message


def test_a_pattern_for_an_undeclared_type_points_at_fact_types(tmp_path: Path) -> None:
    path = write(tmp_path, with_acquisition(declaration=""))
    [(_, field, message)] = problems_of(path)
    assert field == "patterns.acquisition"
    assert "no fact type 'acquisition'" in message and "declares under fact_types" in message


def test_declared_types_are_cited_only_in_the_zones_their_patterns_name(tmp_path: Path) -> None:
    campaign = load_campaign(write(tmp_path, with_acquisition()))
    zones = load_zone_contracts(REPO_ROOT / "zones")
    wide = widen_zone_contracts(zones, campaign.fact_types, campaign.patterns)
    assert "acquisition" in wide["hero_headline"].fact_types
    assert (
        "acquisition" not in wide["hero_support"].fact_types and "acquisition" not in wide["cta"].fact_types
    )
    assert wide["hero_headline"].fact_types - {"acquisition"} == zones["hero_headline"].fact_types
    assert widen_zone_contracts(zones, {}, campaign.patterns) == zones


def test_a_facts_surfaces_are_narrowed_to_its_declared_types() -> None:
    declared = FactTypeDeclaration(fields=(), window_days=30, surfaces=(Surface.WEB, Surface.EMAIL))
    assert narrow_surfaces((Surface.WEB, Surface.SELLER, Surface.PRINT), declared) == (Surface.WEB,)
    assert narrow_surfaces((Surface.WEB, Surface.EMAIL), declared) == (Surface.WEB, Surface.EMAIL)
    assert narrow_surfaces((Surface.WEB, Surface.PRINT), None) == (Surface.WEB, Surface.PRINT)


def test_declaring_a_type_is_a_guideline_change_and_no_declaration_keeps_the_hash(tmp_path: Path) -> None:
    plain = load_campaign(write(tmp_path, EXAMPLE))
    declared = load_campaign(write(tmp_path, with_acquisition()))
    assert guideline_hash(plain) != guideline_hash(declared)
    assert guideline_hash(plain) == guideline_hash(Campaign.model_validate(plain.model_dump()))


def test_the_json_schema_describes_the_section() -> None:
    schema = json_schema("campaign")
    section = schema["properties"]["fact_types"]
    assert "own fact types" in section["description"]
    declaration = schema["$defs"]["FactTypeDeclaration"]
    assert set(declaration["properties"]) == {"fields", "window_days", "surfaces"}
    assert declaration["required"] == ["window_days"] and declaration["additionalProperties"] is False


def test_a_config_published_before_the_window_rule_still_decodes() -> None:
    """The rule is a load-time one: the renderer reads back a stored config without re-judging it."""
    import yaml

    data = yaml.safe_load(
        EXAMPLE.replace("  leadership: 90\n", "  leadership: 90\n  product_launch: 60\n", 1)
    )
    campaign = Campaign.model_validate(data, context={"zones": load_zone_contracts(REPO_ROOT / "zones")})
    assert campaign.signal_windows()["product_launch"] == 60
