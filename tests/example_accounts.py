"""The example accounts generator (`examples/make_accounts.py`), loaded for tests."""

from __future__ import annotations

import importlib.util
from datetime import date
from pathlib import Path
from types import ModuleType

from tests.corpora import REPO_ROOT


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_accounts", REPO_ROOT / "examples" / "make_accounts.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_example_accounts(path: Path, count: int, today: date | None = None) -> Path:
    """`count` example accounts dated from `today` (default: the real today, so signals are fresh)."""
    generator().write(path, today or date.today(), count)
    return path
