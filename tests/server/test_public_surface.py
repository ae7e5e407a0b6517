"""Each server module has a sorted, complete `__all__`; the package itself exports nothing."""

from __future__ import annotations

import importlib
import inspect

import pytest

import server
from tests.corpora import REPO_ROOT

MODULES = sorted(f"server.{p.stem}" for p in (REPO_ROOT / "server").glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_complete_and_real(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    # isort-style, as ruff's RUF022 sorts: CONSTANTS, then Classes, then functions.
    order = sorted(exported, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    assert list(exported) == order, f"{name}: __all__ is not sorted"
    for item in exported:
        assert hasattr(module, item), f"{name}.__all__ names {item!r}, which does not exist"
    defined_here = {
        key
        for key, value in vars(module).items()
        if not key.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", None) == name
    }
    missing = defined_here - set(exported)
    assert not missing, f"{name}: public but not in __all__: {sorted(missing)}"


def test_the_package_itself_exports_nothing() -> None:
    public = [n for n, v in vars(server).items() if not n.startswith("_") and not inspect.ismodule(v)]
    assert not public


def test_server_never_imports_precompute() -> None:
    for path in (REPO_ROOT / "server").glob("*.py"):
        text = path.read_text()
        assert "import precompute" not in text and "from precompute" not in text, path
