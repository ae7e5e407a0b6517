"""README and the docs pages: the two set-up commands are what CI runs; README stays a short front
door whose links point at files that exist; the docs' tables say what the code says."""

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
README_MAX_LINES = 200


def docs_page(name: str) -> str:
    """The text of one page of the documentation site (`docs/NAME`)."""
    return (REPO_ROOT / "docs" / name).read_text()


def marked_block(text: str, marker: str) -> str:
    """What lies between `<!-- marker -->` and `<!-- /marker -->`."""
    return text.split(f"<!-- {marker} -->", 1)[1].split(f"<!-- /{marker} -->", 1)[0]


def sh_lines(section: str) -> list[str]:
    blocks = re.findall(r"```sh\n(.+?)\n```", section, flags=re.DOTALL)
    return [line for block in blocks for line in block.splitlines()]


def section(text: str, heading: str) -> str:
    """The text under `## heading`, up to the next `## ` heading."""
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


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
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README):
        assert (REPO_ROOT / target).exists(), target


def test_readme_is_a_short_front_door() -> None:
    lines = README.count("\n") + (not README.endswith("\n"))
    assert lines <= README_MAX_LINES, f"README has {lines} lines; the rest belongs in docs/"


def test_readme_links_into_the_docs_land_on_a_heading() -> None:
    for page, anchor in re.findall(r"\]\(docs/([\w./-]+\.md)#([\w-]+)\)", README):
        headings = re.findall(r"^#+ (.+)$", docs_page(page), flags=re.MULTILINE)
        slugs = {re.sub(r"\s+", "-", re.sub(r"[^\w\- ]", "", h.strip().lower())) for h in headings}
        assert anchor in slugs, f"docs/{page} has no heading #{anchor}"


def test_getting_started_shows_the_readme_commands() -> None:
    guide = docs_page("getting-started.md")
    for marker in ("test-command", "demo-command"):
        assert f"```sh\n{command_after(marker)}\n```" in guide, marker
    first = "Your first campaign"
    assert sh_lines(section(guide, first)) == sh_lines(section(README, first))


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
    block = marked_block(docs_page("precompute.md"), "zone-reasons")
    rows = re.findall(r"^\| `([^`]+)` \| (.+) \|$", block, flags=re.MULTILINE)
    assert len(rows) == len({code for code, _ in rows}), "a code is listed twice"
    assert dict(rows) == {code.value: doc for code, doc in REASON_DOCS.items()}


def test_the_cohort_layer_table_is_the_code() -> None:
    block = marked_block(docs_page("precompute.md"), "cohort-layers")
    rows = re.findall(r"^\| `([^`]+)` \| (\w+) \| (.+) \|$", block, flags=re.MULTILINE)
    assert len(rows) == len({reason for reason, _, _ in rows}), "a reason is listed twice"
    assert rows == [(reason, layer, shift_conditions(reason)) for reason, layer in DEFAULT_LAYERS.items()]


def test_the_claim_class_table_is_the_enum_with_its_docs() -> None:
    block = marked_block(docs_page("precompute.md"), "claim-reasons")
    rows = re.findall(r"^\| `([^`]+)` \| (.+) \|$", block, flags=re.MULTILINE)
    assert len(rows) == len({code for code, _ in rows}), "a code is listed twice"
    assert dict(rows) == {code.value: doc for code, doc in CLAIM_REASON_DOCS.items()}


def test_the_off_voice_table_is_every_dimension_with_its_docs() -> None:
    block = marked_block(docs_page("precompute.md"), "off-voice-reasons")
    rows = re.findall(r"^\| `off_voice:([^`]+)` \| (.+) \|$", block, flags=re.MULTILINE)
    assert rows == list(OFF_VOICE_DOCS.items())
    assert tuple(OFF_VOICE_DOCS) == VOICE_DIMENSIONS


def test_the_input_limits_table_is_the_code() -> None:
    block = marked_block(docs_page("campaigns.md"), "input-limits")
    rows = re.findall(r"^\| (.+) \| (.+) \| (.+) \|$", block, flags=re.MULTILINE)[1:]  # the header row aside
    assert rows == [(row.applies_to, row.limit, row.past_it) for row in INPUT_LIMITS]
