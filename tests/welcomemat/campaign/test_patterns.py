"""Pattern slots: one parser, plain `{name}` slots only, and only slots the fact type fills."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.corpora import REPO_ROOT
from welcomemat.campaign.contract import check_campaign
from welcomemat.campaign.fact_types import COMPUTED_SLOTS, EVERY_TYPE_SLOTS, FACT_TYPES, slots_for
from welcomemat.campaign.patterns import parse_pattern, pattern_problems
from welcomemat.zones.contract import load_zone_contracts

ZONES = load_zone_contracts(REPO_ROOT / "zones")
CAMPAIGN = REPO_ROOT / "examples" / "campaign.yaml"

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,11}", fullmatch=True)
literals = st.text(st.characters(blacklist_characters="{}", blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=300)
@given(st.text(max_size=40))
def test_any_text_is_refused_or_formats_with_exactly_its_slots(text: str) -> None:
    try:
        shape = parse_pattern(text)
    except ValueError as exc:
        assert str(exc)  # says what is wrong
        return
    assert all(name.isidentifier() for name in shape.slots)
    named = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    assert named == shape.slots
    text.format_map(dict.fromkeys(shape.slots, "v"))  # fills without reaching anywhere else


@settings(max_examples=300)
@given(st.lists(st.tuples(literals, names), max_size=5), literals)
def test_plain_slots_are_found_and_literal_braces_are_text(parts: list[tuple[str, str]], tail: str) -> None:
    pattern = "".join(f"{literal}{{{name}}}" for literal, name in parts) + tail + "{{not a slot}}"
    shape = parse_pattern(pattern)
    assert shape.slots == {name for _, name in parts}
    opening = parts[0][1] if parts and parts[0][0] == "" else None
    assert shape.opening_slot == opening


@settings(max_examples=300)
@given(
    names,
    st.sampled_from([".attr", "[0]", "!r", "!s", ":>70", ":{x}", "!r:>3"]),
    literals,
)
def test_slots_that_reach_beyond_a_plain_name_are_refused(name: str, suffix: str, literal: str) -> None:
    with pytest.raises(ValueError, match="slot"):
        parse_pattern(f"{literal}{{{name}{suffix}}}")


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("Congrats {", "Single '{'"),
        ("Congrats }", "Single '}'"),
        ("{0} raised", "positional slot {0}"),
        ("{} raised", "positional slot {}"),
        ("{account.__class__}", "reaches into a value"),
        ("{account[0]}", "reaches into a value"),
        ("{account!r}", "conversion"),
        ("{round:>70}", "format spec"),
        ("{first name}", "is not a name"),
    ],
)
def test_malformed_patterns_say_what_is_wrong(pattern: str, words: str) -> None:
    assert any(words in p for p in pattern_problems("funding", pattern))


def test_the_registry_lists_the_composer_slots_and_every_example_pattern_fits_it() -> None:
    assert {"account", "when", "role_count"} == COMPUTED_SLOTS
    assert slots_for("hiring") == EVERY_TYPE_SLOTS | {
        "role",
        "role_short",
        "role_plural",
        "location",
        "role_count",
    }
    assert slots_for("funding") == EVERY_TYPE_SLOTS | {"round"}
    assert slots_for("webinar") is None
    example = yaml.safe_load(CAMPAIGN.read_text())
    for fact_type, by_zone in example["patterns"].items():
        assert fact_type in FACT_TYPES
        for patterns in by_zone.values():
            for pattern in patterns:
                assert pattern_problems(fact_type, pattern) == [], pattern


def with_pattern(tmp_path: Path, fact_type: str, pattern: str) -> Path:
    data = yaml.safe_load(CAMPAIGN.read_text())
    data["patterns"].setdefault(fact_type, {})["hero_headline"] = ["Fine {account}", pattern]
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


@pytest.mark.parametrize(
    ("fact_type", "pattern", "message"),
    [
        ("hiring", "Hiring in {locaton}?", "no hiring fact fills slot {locaton}: did you mean {location}?"),
        ("funding", "The {rund}, {account}", "no funding fact fills slot {rund}: did you mean {round}?"),
        ("funding", "Hiring in {location}", "no funding fact fills slot {location}"),
        ("expansion", "{subject} grew", "no expansion fact fills slot {subject}"),
        ("funding", "{role_count} rounds", "no funding fact fills slot {role_count}"),  # hiring only
        ("funding", "Congrats {0}", "positional slot {0}"),
        ("funding", "Congrats {", "not a pattern"),
    ],
)
def test_campaign_refuses_a_pattern_slot_nothing_fills(
    tmp_path: Path, fact_type: str, pattern: str, message: str
) -> None:
    path = with_pattern(tmp_path, fact_type, pattern)
    campaign, problems = check_campaign(path, ZONES)
    assert campaign is None
    [problem] = problems
    assert problem.field == f"patterns.{fact_type}.hero_headline.1"
    assert message in problem.message
    assert problem.line is not None and pattern in yaml.safe_load(
        path.read_text().splitlines()[problem.line - 1]
    )


def test_unknown_fact_type_is_refused_with_the_closest(tmp_path: Path) -> None:
    path = with_pattern(tmp_path, "fundng", "Congrats {account}")
    _, [problem] = check_campaign(path, ZONES)
    assert problem.field == "patterns.fundng"
    assert "no fact type 'fundng': did you mean 'funding'?" in problem.message


def test_every_bad_slot_is_reported_not_the_first(tmp_path: Path) -> None:
    data = yaml.safe_load(CAMPAIGN.read_text())
    data["patterns"]["hiring"]["hero_headline"] = ["{locaton} {role_plurl}", "{persn}"]
    data["patterns"]["funding"]["hero_support"] = ["{rnd}"]
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    _, problems = check_campaign(path, ZONES)
    assert sorted((p.field, p.message.split(":")[0].split(";")[0]) for p in problems) == [
        ("patterns.funding.hero_support.0", "no funding fact fills slot {rnd}"),
        ("patterns.hiring.hero_headline.0", "no hiring fact fills slot {locaton}"),
        ("patterns.hiring.hero_headline.0", "no hiring fact fills slot {role_plurl}"),
        ("patterns.hiring.hero_headline.1", "no hiring fact fills slot {persn}"),
    ]
