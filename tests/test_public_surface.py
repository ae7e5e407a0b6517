"""Each core module states its public surface in `__all__`, and the list is complete."""

from __future__ import annotations

import importlib
import inspect

import pytest

from tests.corpora import REPO_ROOT

MODULES = sorted(
    f"welcomemat.{p.stem}"
    for p in (REPO_ROOT / "welcomemat").glob("*.py")
    if p.name not in ("__init__.py", "cli.py")
)


@pytest.mark.parametrize("name", MODULES)
def test_all_is_complete_and_real(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    assert len(set(exported)) == len(exported), f"{name}: duplicates in __all__"
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
