"""YAML contracts: a key a mapping repeats is refused with file, line and field, never "last wins"."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.corpora import REPO_ROOT
from welcomemat.campaign.contract import load_campaign
from welcomemat.errors import ContractError, ContractProblems
from welcomemat.limits import YAML_MAX_BYTES
from welcomemat.yamlfile import UniqueKeyLoader, read_yaml
from welcomemat.zones.contract import load_zone_contract, load_zone_contracts

# A mapping as written: (key, value) pairs in order, repeats allowed; a value is a scalar
# or a nested mapping.
Tree = list[tuple[str, "Tree | int"]]


def render(tree: Tree, indent: int = 0, lines: list[str] | None = None) -> list[str]:
    lines = [] if lines is None else lines
    for key, value in tree:
        if isinstance(value, list):
            lines.append(" " * indent + f"{key}:")
            render(value, indent + 2, lines)
        else:
            lines.append(" " * indent + f"{key}: {value}")
    return lines


def expected_repeats(
    tree: Tree, path: tuple[str, ...] = (), line: int = 1
) -> tuple[list[tuple[str, int]], int]:
    """(dotted field, line) of every repeated key, worked out from the tree alone; and the next line."""
    found: list[tuple[str, int]] = []
    seen: set[str] = set()
    for key, value in tree:
        if key in seen:
            found.append((".".join((*path, key)), line))
        seen.add(key)
        line += 1
        if isinstance(value, list):
            nested, line = expected_repeats(value, (*path, key), line)
            found += nested
    return found, line


keys = st.sampled_from(["a", "b", "c", "tenant"])  # few keys: repeats are common
trees: st.SearchStrategy[Tree] = st.recursive(
    st.lists(st.tuples(keys, st.integers(0, 9)), min_size=1, max_size=4),
    lambda inner: st.lists(st.tuples(keys, st.one_of(st.integers(0, 9), inner)), min_size=1, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(trees)
def test_every_repeated_key_is_found_at_its_line_and_path(tree: Tree) -> None:
    text = "\n".join(render(tree)) + "\n"
    loader = UniqueKeyLoader(text)
    try:
        data = loader.get_single_data()
    finally:
        loader.dispose()
    found = sorted((".".join(str(p) for p in loc), line) for loc, line, _ in loader.duplicates)
    assert found == sorted(expected_repeats(tree)[0])
    # Reading is unchanged otherwise: the data is what PyYAML's SafeLoader makes of the text.
    assert data == yaml.safe_load(text)


@pytest.mark.parametrize(
    ("text", "field", "line"),
    [
        ("a: 1\nb: 2\na: 3\n", "a", 3),
        ("a:\n  x: 1\n  x: 2\n", "a.x", 3),
        ("a:\n  - x: 1\n    y: 2\n  - y: 3\n    y: 4\n", "a.1.y", 5),
        ("a: {x: 1, x: 2}\n", "a.x", 1),
        ("a:\n  b:\n    c:\n      d: 1\n      d: 2\n", "a.b.c.d", 5),
        ("'a': 1\n\"a\": 2\n", "a", 2),  # quoting does not make another key
        ("1: x\n1: y\n", "1", 2),
    ],
)
def test_repeated_keys_name_line_and_field(tmp_path: Path, text: str, field: str, line: int) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    [problem] = read_yaml(path).duplicates
    assert (problem.file, problem.line, problem.field) == (str(path), line, field)
    assert "duplicate key" in problem.message and "first on line" in problem.message


@pytest.mark.parametrize(
    "text",
    [
        "base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  x: 3\n",  # a merge key's values may be overridden
        "a: 1\nb:\n  a: 2\n",  # the same key in different mappings
        "a:\n  - x: 1\n  - x: 2\n",  # the same key in different list items
        "1: x\n'1': y\n",  # an int and a string are different keys
    ],
)
def test_what_is_not_a_repeat(tmp_path: Path, text: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert read_yaml(path).duplicates == ()


def test_a_campaign_with_a_repeated_key_is_refused_even_when_the_last_value_is_valid(tmp_path: Path) -> None:
    text = (REPO_ROOT / "examples" / "campaign.yaml").read_text()
    text = text.replace("holdout_fraction: 0.10\n", "holdout_fraction: 0.10\nholdout_fraction: 0.20\n", 1)
    path = tmp_path / "campaign.yaml"
    path.write_text(text)
    with pytest.raises(ContractError) as caught:
        load_campaign(path, load_zone_contracts(REPO_ROOT / "zones"))
    line = text.splitlines().index("holdout_fraction: 0.20") + 1
    assert (caught.value.file, caught.value.line, caught.value.field) == (str(path), line, "holdout_fraction")
    assert "duplicate key 'holdout_fraction'" in caught.value.message


def test_a_zone_contract_and_a_tenant_file_with_repeated_keys_are_refused(tmp_path: Path) -> None:
    from precompute.policy import load_tenant_policy

    zone = tmp_path / "cta.yaml"
    zone.write_text((REPO_ROOT / "zones" / "cta.yaml").read_text() + "max_words: 5\n")
    with pytest.raises(ContractError) as caught:
        load_zone_contract(zone)
    assert caught.value.field == "max_words" and caught.value.line == len(zone.read_text().splitlines())

    tenant = tmp_path / "tenant.yaml"
    tenant.write_text("tenant: acme\nmax_signal_windows_days:\n  funding: 30\n  funding: 60\n")
    with pytest.raises(ContractProblems) as refused:
        load_tenant_policy(tenant)
    assert [(p.field, p.line) for p in refused.value.problems] == [("max_signal_windows_days.funding", 4)]


# -- hostile documents: each a problem with file, line and field, never a traceback -----------------

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("a: 1\nholdout_fraction: 1" + "0" * 5000 + "\n", 2, "holdout_fraction", "5001 digits"),
        ("a: 1\nb: 0x" + "f" * 50_000 + "\n", 2, "b", "digits"),
        ("a:\n  - 1." + "5" * 100 + "\n", 2, "a.0", "characters"),
        ("holdout_fraction: .nan\n", 1, "holdout_fraction", "must be a finite number, got .nan"),
        ("a:\n  b: -.inf\n", 2, "a.b", "must be a finite number, got -.inf"),
        ("a: 1.0e+999\n", 1, "a", "must be a finite number, got 1.0e+999"),
        ("a: 2024-13-45\n", 1, "a", "not a valid timestamp: '2024-13-45'"),
        ("a:\n  b: !!timestamp 'never'\n", 2, "a.b", "not a valid timestamp: 'never'"),
        ("a: !!int '12x'\n", 1, "a", "not a valid int: '12x'"),
        ('a: "x\\ud800y"\n', 1, "a", "lone surrogate"),
        ("a: 1\nb: " + "[" * 20_000 + "]" * 20_000 + "\n", 2, "b", "nested deeper than 32 levels"),
        ("a: " + "{a: " * 20_000 + "1" + "}" * 20_000 + "\n", 1, "a.a.a.a.a.a.a.a…", "nested deeper"),
        ("".join("  " * i + "a:\n" for i in range(300)), 33, "a.a.a.a.a.a.a.a…", "nested deeper"),
        ("? " + "[" * 5000 + "]" * 5000 + "\n: 1\n", 1, None, "nested deeper"),
        ("a: &x [*x]\n", 1, "a.0", "alias *x refers to the value it is part of"),
        ("a: &x {b: *x}\n", 1, "a.b", "alias *x refers to the value it is part of"),
        (LAUGHS, 5, "e", "111111 values once its aliases are expanded; at most 100000"),
    ],
)
def test_hostile_yaml_is_a_problem_with_line_and_field(
    tmp_path: Path, text: str, line: int, field: str | None, words: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        document = read_yaml(path)
    except ContractError as refused:
        problem = refused
    else:
        [problem] = document.refused
    assert (problem.file, problem.line, problem.field) == (str(path), line, field)
    assert words in problem.message


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with path.open("wb") as handle:
        handle.write(b"a: '" + b"x" * YAML_MAX_BYTES + b"'\n")
    with pytest.raises(ContractError) as refused:
        read_yaml(path)
    assert f"larger than {YAML_MAX_BYTES} bytes" in refused.value.message


def test_a_refused_value_is_one_problem_and_the_others_are_still_found(tmp_path: Path) -> None:
    text = (REPO_ROOT / "examples" / "campaign.yaml").read_text()
    text = text.replace("holdout_fraction: 0.10\n", "holdout_fraction: .nan\n", 1)
    text = text.replace("min_confidence: medium\n", "min_confidence: 1" + "0" * 5000 + "\n", 1)
    path = tmp_path / "campaign.yaml"
    path.write_text(text)
    with pytest.raises(ContractProblems) as refused:
        load_campaign(path, load_zone_contracts(REPO_ROOT / "zones"))
    lines = text.splitlines()
    assert [(p.line, p.field) for p in refused.value.problems] == [
        (lines.index("holdout_fraction: .nan") + 1, "holdout_fraction"),
        (next(i for i, t in enumerate(lines, 1) if t.startswith("min_confidence: 1000")), "min_confidence"),
    ]
    assert refused.value.problems[0].message == "must be a finite number, got .nan"
