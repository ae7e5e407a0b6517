"""A campaign's `theme:` folder is a plain folder inside the campaign's own folder.

Its files are published and served to every visitor, so an absolute path, a `..` step or a
symlink (the folder, a folder on the way to it, or a file in it) would publish files from
anywhere on the machine running precompute. Each is refused by `welcomemat validate` and
by precompute (exit 2, naming campaign.yaml, the `theme` line and field) before anything
is published; the renderer serves only what precompute published.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cli.main import main
from tests.corpora import REPO_ROOT

ZONES = str(REPO_ROOT / "zones")


def campaign_with_theme(tmp_path: Path, theme: str) -> Path:
    """The example campaign in tmp_path/campaign with `theme:` set; a copy of its theme outside."""
    home = tmp_path / "campaign"
    home.mkdir()
    text = (REPO_ROOT / "examples" / "campaign.yaml").read_text()
    assert "theme: ./theme\n" in text
    (home / "campaign.yaml").write_text(text.replace("theme: ./theme\n", f"theme: {theme}\n"))
    shutil.copytree(REPO_ROOT / "examples" / "theme", tmp_path / "outside")
    return home / "campaign.yaml"


def theme_line(campaign: Path) -> int:
    lines = campaign.read_text().split("\n")
    return next(i for i, line in enumerate(lines, 1) if line.startswith("theme:"))


def absolute(tmp_path: Path) -> Path:
    return campaign_with_theme(tmp_path, str(tmp_path / "outside"))


def parent_step(tmp_path: Path) -> Path:
    return campaign_with_theme(tmp_path, "../outside")


def step_out_and_back(tmp_path: Path) -> Path:
    campaign = campaign_with_theme(tmp_path, "./theme/../theme")
    shutil.copytree(tmp_path / "outside", campaign.parent / "theme")
    return campaign


def symlinked_folder(tmp_path: Path) -> Path:
    campaign = campaign_with_theme(tmp_path, "./theme")
    (campaign.parent / "theme").symlink_to(tmp_path / "outside", target_is_directory=True)
    return campaign


def symlinked_step(tmp_path: Path) -> Path:
    campaign = campaign_with_theme(tmp_path, "./brand/theme")
    (tmp_path / "elsewhere").mkdir()
    shutil.copytree(tmp_path / "outside", tmp_path / "elsewhere" / "theme")
    (campaign.parent / "brand").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    return campaign


def symlink_inside(tmp_path: Path) -> Path:
    """Even a link to a folder inside the campaign's own: the rule is plain folders, no links."""
    campaign = campaign_with_theme(tmp_path, "./theme")
    shutil.copytree(tmp_path / "outside", campaign.parent / "real")
    (campaign.parent / "theme").symlink_to(campaign.parent / "real", target_is_directory=True)
    return campaign


CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "absolute": (absolute, "is not a path inside the campaign's folder"),
    "parent-step": (parent_step, "steps outside the campaign's folder"),
    "out-and-back": (step_out_and_back, "steps outside the campaign's folder"),
    "symlinked-folder": (symlinked_folder, "is or passes through a symlink"),
    "symlinked-step": (symlinked_step, "is or passes through a symlink"),
    "symlink-inside": (symlink_inside, "is or passes through a symlink"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_validate_refuses_a_theme_folder_outside_the_campaign(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    build, says = CASES[case]
    campaign = build(tmp_path)
    code = main(["validate", str(campaign), "--zones", ZONES])
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 2, text
    assert f"{campaign}:{theme_line(campaign)}: theme: " in text and says in text, text


@pytest.mark.parametrize("case", ["absolute", "symlinked-folder"])
def test_precompute_refuses_it_before_publishing_anything(tmp_path: Path, case: str) -> None:
    """Exit 2 before Redis is ever reached (REDIS_URL is a closed port): nothing is published."""
    build, says = CASES[case]
    campaign = build(tmp_path)
    accounts = tmp_path / "accounts.jsonl"
    accounts.write_text('{"account_id": "a1", "name": "A", "domain": "a.com", "segment": "saas-mid"}\n')
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "WELCOMEMAT_HOME": str(tmp_path / "home"),
        "REDIS_URL": "redis://127.0.0.1:9/0",
    }
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "precompute", str(campaign), str(accounts), "--zones", ZONES],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert f"{campaign}:{theme_line(campaign)}, field 'theme'" in result.stderr and says in result.stderr
    assert "Traceback" not in result.stderr


def test_a_symlinked_file_in_the_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    campaign = campaign_with_theme(tmp_path, "./theme")
    shutil.copytree(tmp_path / "outside", campaign.parent / "theme")
    (campaign.parent / "theme" / "secret.css").symlink_to(REPO_ROOT / "pyproject.toml")
    assert main(["validate", str(campaign), "--zones", ZONES]) == 2
    out = capsys.readouterr()
    assert "secret.css" in out.out + out.err and "no subfolders or links" in out.out + out.err


def test_a_plain_folder_beside_the_campaign_still_validates(tmp_path: Path) -> None:
    campaign = campaign_with_theme(tmp_path, "brand")
    shutil.copytree(tmp_path / "outside", campaign.parent / "brand")
    assert main(["validate", str(campaign), "--zones", ZONES]) == 0
