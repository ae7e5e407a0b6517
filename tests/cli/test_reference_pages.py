"""The generated reference pages: current, complete, the same on any machine, and fixed by one command."""

from __future__ import annotations

import argparse
import fnmatch
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import build_parser
from cli.reference.command_page import Command, commands, render_cli_page
from cli.reference.layout_page import FOLDERS, PACKAGES, render_layout_page
from cli.reference_pages import PAGES, REGENERATE, main, render_pages
from tests.corpora import REPO_ROOT
from welcomemat.settings import SETTINGS


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return render_pages()


@pytest.mark.parametrize("path", sorted(PAGES))
def test_every_generated_page_is_what_the_generator_writes(path: str, generated: dict[str, str]) -> None:
    committed = (REPO_ROOT / path).read_bytes().decode("utf-8")
    assert committed == generated[path], f"{path} is out of date: run `{REGENERATE}`"


def test_check_names_the_stale_pages_and_the_generator_fixes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--check"], docs_root=tmp_path) == 1
    err = capsys.readouterr().err
    for path in PAGES:
        assert f"{path} is out of date: run `{REGENERATE}`" in err
    assert main([], docs_root=tmp_path) == 0
    assert sorted(capsys.readouterr().out.split()) == sorted(["wrote"] * len(PAGES) + list(PAGES))
    assert main(["--check"], docs_root=tmp_path) == 0
    layout = tmp_path / "docs" / "reference" / "layout.md"
    layout.write_text(layout.read_text() + "\nA line someone added by hand.\n")
    assert main(["--check"], docs_root=tmp_path) == 1
    assert capsys.readouterr().err == f"docs/reference/layout.md is out of date: run `{REGENERATE}`\n"


def test_the_regenerate_command_runs_as_a_module_and_finds_nothing_stale() -> None:
    done = subprocess.run(
        [sys.executable, "-m", *REGENERATE.split()[2:], "--check"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")


def test_the_pages_do_not_depend_on_the_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    pages = []
    for columns in ("40", "250"):
        monkeypatch.setenv("COLUMNS", columns)
        pages.append(render_cli_page(build_parser(), REGENERATE))
    assert pages[0] == pages[1]


def test_the_pages_name_no_path_of_this_machine(generated: dict[str, str]) -> None:
    for path, text in generated.items():
        assert str(REPO_ROOT) not in text and str(Path.home()) not in text, path


# -- the command line page ---------------------------------------------------------------------


def tree() -> list[Command]:
    return list(commands(build_parser()))


def test_every_command_has_a_summary_and_a_description_and_every_argument_a_help() -> None:
    for command in tree():
        assert (command.parser.description or "").strip(), f"`{command.name}` has no description"
        if command.depth:
            assert (command.summary or "").strip(), f"`{command.name}` has no one-line help"
        for action in command.parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue  # each of its commands is checked in its own right
            assert action.help, f"`{command.name}` {action.option_strings or action.dest} has no help"


def section(page: str, command: Command) -> str:
    heading = f"{'#' * (command.depth + 1)} `{command.name}`\n"
    assert heading in page, f"no section for `{command.name}`"
    return page.split(heading, 1)[1].split("\n#", 1)[0]


def test_the_cli_page_shows_every_commands_usage_description_and_visible_arguments(
    generated: dict[str, str],
) -> None:
    page = generated["docs/reference/cli.md"]
    for command in tree()[1:]:
        text = section(page, command)
        assert f"```text\nusage: {command.name} " in text
        assert f"[`{command.name}`](#" in page, f"`{command.name}` is not in the list of commands"
        for action in command.arguments():
            for flag in action.option_strings:
                assert f"`{flag}" in text or f", {flag}" in text, (
                    f"`{command.name}` {flag} is not on the page"
                )
            if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
                assert all(f"`{choice}`" in text for choice in action.choices), command.name
        hidden = [a for a in command.parser._actions if a.help == argparse.SUPPRESS]
        for action in hidden:
            assert f"`{action.option_strings[0]}" not in text, "a hidden flag stays hidden"


def test_the_cli_page_lists_the_exit_codes(generated: dict[str, str]) -> None:
    page = generated["docs/reference/cli.md"]
    for code in (0, 1, 2, 130):
        assert f"\n| `{code}` | " in page


# -- the configuration page --------------------------------------------------------------------


def test_the_configuration_page_has_a_row_per_setting_with_its_default(generated: dict[str, str]) -> None:
    page = generated["docs/reference/configuration.md"]
    for setting in SETTINGS:
        default = "unset" if setting.default is None else f"`{setting.default}`"
        assert f"\n| `{setting.name}` | {default} | " in page, setting.name


# -- the layout page ---------------------------------------------------------------------------


def test_the_layout_page_lists_every_module_under_its_package(generated: dict[str, str]) -> None:
    page = generated["docs/reference/layout.md"]
    for top in PACKAGES:
        for path in sorted((REPO_ROOT / top).rglob("*.py")):
            package = ".".join(path.parent.relative_to(REPO_ROOT).parts)
            heading = ("## " if "." not in package else "### ") + f"`{package}`\n"
            assert heading in page, f"no section for {package}"
            if path.name != "__init__.py":
                body = page.split(heading, 1)[1].split("\n#", 1)[0]
                assert f"\n| `{path.name}` | " in body, f"layout.md misses {path.relative_to(REPO_ROOT)}"


def test_a_module_without_a_docstring_is_named(tmp_path: Path) -> None:
    for top in PACKAGES:
        (tmp_path / top).mkdir()
        (tmp_path / top / "__init__.py").write_text('"""A package."""\n')
    (tmp_path / "server" / "silent.py").write_text("X = 1\n")
    with pytest.raises(ValueError, match=r"server/silent\.py: no module docstring"):
        render_layout_page(tmp_path, REGENERATE)


def ignored(name: str) -> bool:
    patterns = (REPO_ROOT / ".gitignore").read_text().split()
    return any(fnmatch.fnmatch(name + "/", p) or fnmatch.fnmatch(name, p.rstrip("/")) for p in patterns)


def test_every_top_level_folder_is_described_and_every_described_folder_exists() -> None:
    on_disk = {
        p.name
        for p in REPO_ROOT.iterdir()
        if p.is_dir() and not (p.name.startswith(".") and p.name != ".ci") and not ignored(p.name)
    }
    assert on_disk == set(FOLDERS) | set(PACKAGES)
