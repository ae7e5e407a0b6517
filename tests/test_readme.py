"""README: the two set-up commands are what CI runs; its links point at files that exist; its
tables say what the code says."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from precompute.layers import DEFAULT_LAYERS, shift_conditions
from tests.corpora import REPO_ROOT
from welcomemat.campaign.voice import VOICE_DIMENSIONS
from welcomemat.limits import INPUT_LIMITS
from welcomemat.reasons import CLAIM_REASON_DOCS, OFF_VOICE_DOCS, REASON_DOCS

README = (REPO_ROOT / "README.md").read_text()


def command_after(marker: str) -> str:
    block = README.split(f"<!-- {marker} -->", 1)[1]
    match = re.search(r"```sh\n(.+?)\n```", block, flags=re.DOTALL)
    assert match, marker
    return match.group(1).strip()


def test_ci_runs_exactly_the_readme_commands() -> None:
    ci = (REPO_ROOT / ".ci" / "run").read_text().splitlines()
    for marker in ("test-command", "demo-command"):
        command = command_after(marker)
        assert "\n" not in command, "each set-up step is one command"
        assert command in ci, f"{marker}: .ci/run must run {command!r} verbatim"


def test_readme_links_exist() -> None:
    for target in re.findall(r"\]\(([^)#:]+)\)", README):
        assert (REPO_ROOT / target).exists(), target


def test_readme_lists_every_core_module() -> None:
    core = REPO_ROOT / "welcomemat"
    modules = {p.relative_to(core).as_posix() for p in core.rglob("*.py") if p.name != "__init__.py"}
    for name in modules:
        assert f"`{name}`" in README, f"README's core table misses {name}"


def test_the_test_command_installs_the_system_packages_before_running_the_tests() -> None:
    command = command_after("test-command")
    install = command.find("sh scripts/install-test-deps.sh")
    assert install >= 0, "the test command must install Chromium and faketime for the tests"
    assert install < command.find("pytest"), "they are installed before the tests run"
    script = (REPO_ROOT / "scripts" / "install-test-deps.sh").read_text()
    assert "chromium:/usr/bin/chromium" in script and "faketime:/usr/bin/faketime" in script


def test_the_install_script_does_nothing_when_everything_is_there() -> None:
    script = REPO_ROOT / "scripts" / "install-test-deps.sh"
    syntax = subprocess.run(["sh", "-n", str(script)], capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, syntax.stderr
    if not (Path("/usr/bin/chromium").exists() and Path("/usr/bin/faketime").exists()):
        pytest.skip("Chromium or faketime is not installed here (the tests that need them fail and say so)")
    again = subprocess.run(["sh", str(script)], capture_output=True, text=True, check=False)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")


def test_the_zone_reason_table_is_the_enum_with_its_docs() -> None:
    block = README.split("<!-- zone-reasons -->", 1)[1].split("<!-- /zone-reasons -->", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (.+) \|$", block, flags=re.MULTILINE)
    assert len(rows) == len({code for code, _ in rows}), "a code is listed twice"
    assert dict(rows) == {code.value: doc for code, doc in REASON_DOCS.items()}


def test_the_cohort_layer_table_is_the_code() -> None:
    block = README.split("<!-- cohort-layers -->", 1)[1].split("<!-- /cohort-layers -->", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (\w+) \| (.+) \|$", block, flags=re.MULTILINE)
    assert len(rows) == len({reason for reason, _, _ in rows}), "a reason is listed twice"
    assert rows == [(reason, layer, shift_conditions(reason)) for reason, layer in DEFAULT_LAYERS.items()]


def test_the_claim_class_table_is_the_enum_with_its_docs() -> None:
    block = README.split("<!-- claim-reasons -->", 1)[1].split("<!-- /claim-reasons -->", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (.+) \|$", block, flags=re.MULTILINE)
    assert len(rows) == len({code for code, _ in rows}), "a code is listed twice"
    assert dict(rows) == {code.value: doc for code, doc in CLAIM_REASON_DOCS.items()}


def test_the_off_voice_table_is_every_dimension_with_its_docs() -> None:
    block = README.split("<!-- off-voice-reasons -->", 1)[1].split("<!-- /off-voice-reasons -->", 1)[0]
    rows = re.findall(r"^\| `off_voice:([^`]+)` \| (.+) \|$", block, flags=re.MULTILINE)
    assert rows == list(OFF_VOICE_DOCS.items())
    assert tuple(OFF_VOICE_DOCS) == VOICE_DIMENSIONS


def test_the_input_limits_table_is_the_code() -> None:
    block = README.split("<!-- input-limits -->", 1)[1].split("<!-- /input-limits -->", 1)[0]
    rows = re.findall(r"^\| (.+) \| (.+) \| (.+) \|$", block, flags=re.MULTILINE)[1:]  # the header row aside
    assert rows == [(row.applies_to, row.limit, row.past_it) for row in INPUT_LIMITS]
