"""The locked dependencies agree with pyproject.toml, offline: every direct dependency is pinned to
a version its specifier allows, the image's lock is hash-checked and holds no installer, CI tests
the versions the image runs, and each lock says the command docs/operations.md tells to refresh it."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.corpora import REPO_ROOT

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
RUNTIME_LOCK = REPO_ROOT / "requirements" / "runtime.txt"
CI_LOCK = REPO_ROOT / "requirements" / "ci.txt"
OPERATIONS = (REPO_ROOT / "docs" / "operations.md").read_text()
_PIN = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)\s*(?:;(?P<marker>[^\\#]+))?"
)


@dataclass(frozen=True)
class Pin:
    name: str  # canonical
    version: Version
    marker: str
    hashes: int


def pins(text: str) -> list[Pin]:
    """Each `name==version [; marker]` entry of a lock (a name twice under different markers when
    the resolution forks by Python version or platform), with its number of `--hash` lines."""
    found: list[Pin] = []
    for entry in re.split(r"\n(?=\S)", text):
        match = _PIN.match(entry)
        if match:
            found.append(
                Pin(
                    canonicalize_name(match["name"]),
                    Version(match["version"]),
                    (match["marker"] or "").strip(),
                    entry.count("--hash=sha256:"),
                )
            )
    return found


def by_name(lock: list[Pin]) -> dict[str, list[Pin]]:
    named: dict[str, list[Pin]] = {}
    for pin in lock:
        named.setdefault(pin.name, []).append(pin)
    return named


def agreement_problems(requirements: list[str], lock: list[Pin], lock_name: str) -> list[str]:
    """Each requirement pinned in `lock`, every pin of it within the requirement's specifier."""
    named = by_name(lock)
    problems = []
    for line in requirements:
        requirement = Requirement(line)
        found = named.get(canonicalize_name(requirement.name))
        if not found:
            problems.append(f"{requirement.name}: in pyproject.toml, not pinned in {lock_name}")
            continue
        for pin in found:
            if not requirement.specifier.contains(pin.version, prereleases=True):
                problems.append(
                    f"{requirement.name}: {lock_name} pins {pin.version}, "
                    f"pyproject asks {requirement.specifier}"
                )
    return problems


RUNTIME = pins(RUNTIME_LOCK.read_text())
CI = pins(CI_LOCK.read_text())


def test_every_dependency_is_pinned_in_the_image_lock_within_its_specifier() -> None:
    assert agreement_problems(PYPROJECT["dependencies"], RUNTIME, "requirements/runtime.txt") == []


def test_every_dependency_and_test_dependency_is_pinned_in_the_ci_lock() -> None:
    wanted = PYPROJECT["dependencies"] + PYPROJECT["optional-dependencies"]["test"]
    assert agreement_problems(wanted, CI, "requirements/ci.txt") == []


def test_a_version_outside_the_specifier_is_caught() -> None:
    drifted = [Pin("starlette", Version("0.1"), "", 0)]
    assert agreement_problems(["starlette>=0.37"], drifted, "lock") == [
        "starlette: lock pins 0.1, pyproject asks >=0.37"
    ]


def test_the_image_lock_is_hash_checked_and_holds_no_installer() -> None:
    assert RUNTIME and all(pin.hashes > 0 for pin in RUNTIME)
    assert {"pip", "setuptools", "wheel"}.isdisjoint(pin.name for pin in RUNTIME)


def test_ci_tests_the_versions_the_image_runs() -> None:
    # By version: a marker may differ (colorama is Windows-only for the runtime, always for mkdocs).
    ci = {(pin.name, pin.version) for pin in CI}
    assert [pin for pin in RUNTIME if (pin.name, pin.version) not in ci] == []


@pytest.mark.parametrize("lock", [RUNTIME_LOCK, CI_LOCK], ids=lambda p: p.name)
def test_each_lock_was_made_by_the_documented_command(lock: Path) -> None:
    made_by = lock.read_text().splitlines()[1].removeprefix("#").strip()
    documented = [
        line.split("uv ", 1)[1].replace(" --upgrade", "")
        for line in OPERATIONS.split("<!-- lock-refresh -->", 1)[1]
        .split("<!-- /lock-refresh -->", 1)[0]
        .splitlines()
        if " pip compile " in line
    ]
    assert made_by.removeprefix("uv ") in documented
