"""The documentation site builds with `mkdocs build --strict`: no broken link, no page left out of shape."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.corpora import REPO_ROOT


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    # NO_MKDOCS_2_WARNING: Material's notice about MkDocs 2 is advice, not a problem with these pages.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(REPO_ROOT / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"`mkdocs build --strict` failed:\n{done.stdout}{done.stderr}"
    assert any((tmp_path / "site").rglob("*.html"))
