"""The folders show the design: no folder of the five packages holds more than 40 modules, and no
module file name is used three times (a name used twice is a layer's module and the command that
runs it; a third is a prefix doing a folder's work)."""

from __future__ import annotations

from collections import Counter

from tests.corpora import REPO_ROOT

PACKAGES = ("welcomemat", "precompute", "server", "outbound", "cli")
MAX_MODULES_PER_FOLDER = 40


def modules() -> list[str]:
    return sorted(
        path.relative_to(REPO_ROOT).as_posix() for top in PACKAGES for path in (REPO_ROOT / top).rglob("*.py")
    )


def test_no_folder_holds_more_than_40_modules() -> None:
    per_folder = Counter(path.rsplit("/", 1)[0] for path in modules())
    crowded = {folder: n for folder, n in per_folder.items() if n > MAX_MODULES_PER_FOLDER}
    assert crowded == {}


def test_no_module_name_is_used_three_times() -> None:
    names = Counter(path.rsplit("/", 1)[1] for path in modules() if not path.endswith("__init__.py"))
    assert {name: n for name, n in names.items() if n > 2} == {}


def test_every_folder_is_a_package() -> None:
    folders = {path.rsplit("/", 1)[0] for path in modules()}
    assert all((REPO_ROOT / folder / "__init__.py").is_file() for folder in folders)
