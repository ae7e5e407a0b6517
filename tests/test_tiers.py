"""The suite's tiers: `-m "not slow"` leaves out exactly the files the tier table names, the
table names files that exist, and every tier is a registered marker (docs/testing.md)."""

from __future__ import annotations

import tomllib

import pytest

from tests.conftest import SLOW_TIERS, TIER_MARKERS, tiers_of
from tests.corpora import REPO_ROOT


def registered_markers() -> set[str]:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    lines: list[str] = pyproject["tool"]["pytest"]["ini_options"]["markers"]
    return {line.split(":", 1)[0] for line in lines}


def test_every_tier_is_a_registered_marker_and_so_is_slow() -> None:
    assert {*TIER_MARKERS, "slow"} <= registered_markers()
    assert {tier for tiers in SLOW_TIERS.values() for tier in tiers} <= set(TIER_MARKERS)


@pytest.mark.parametrize("where", sorted(SLOW_TIERS))
def test_the_table_names_a_folder_or_file_that_exists(where: str) -> None:
    path = REPO_ROOT / where
    assert path.is_dir() if where.endswith("/") else path.is_file(), where


def test_a_file_takes_its_folders_tier_and_an_unlisted_file_has_none() -> None:
    assert tiers_of("tests/browser/test_snippet.py") == ("browser",)
    assert "calendar" in tiers_of("tests/cli/test_demo_calendar.py")
    assert tiers_of("tests/test_tiers.py") == ()
    # A name that merely starts like a listed file is not that file.
    assert tiers_of("tests/cli/test_demo_calendar.py.orig") == ()


def test_a_tiered_test_is_slow_and_the_fast_tier_keeps_the_rest(request: pytest.FixtureRequest) -> None:
    items = request.session.items
    tiered = [item for item in items if any(item.get_closest_marker(t) for t in TIER_MARKERS)]
    assert all(item.get_closest_marker("slow") for item in tiered)
    here = next(item for item in items if item.nodeid == request.node.nodeid)
    assert here.get_closest_marker("slow") is None
