"""A non-editable install (the image's) serves pages: the renderer's templates are package data,
installed beside `server/` where `server.render.TEMPLATES_DIR` looks for them."""

from __future__ import annotations

import tomllib

from server.render import TEMPLATES_DIR
from tests.corpora import REPO_ROOT

SETUPTOOLS = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_template_and_static_file_is_package_data() -> None:
    assert TEMPLATES_DIR == REPO_ROOT / "templates"  # beside server/, in a clone and in site-packages
    assert "templates" in SETUPTOOLS["packages"]["find"]["include"]
    # Globbed as setuptools globs them: `*` stays within one folder.
    packaged = {p for glob in SETUPTOOLS["package-data"]["templates"] for p in TEMPLATES_DIR.glob(glob)}
    files = {p for p in TEMPLATES_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert packaged and sorted(files - packaged - {TEMPLATES_DIR / "README.md"}) == []
