"""Every module states its public surface in `__all__`: complete, real; packages export nothing."""

from __future__ import annotations

import importlib
import inspect

import pytest

from tests.corpora import REPO_ROOT

# Every package of the five, subpackages included: a new folder is covered without editing this list.
PACKAGES = tuple(
    sorted(
        ".".join(init.parent.relative_to(REPO_ROOT).parts)
        for top in ("welcomemat", "precompute", "server", "outbound", "cli")
        for init in (REPO_ROOT / top).rglob("__init__.py")
    )
)
EXCLUDED: set[str] = set()
MODULES = sorted(
    f"{package}.{path.stem}"
    for package in PACKAGES
    for path in (REPO_ROOT / package.replace(".", "/")).glob("*.py")
    if path.name != "__init__.py" and f"{package}.{path.stem}" not in EXCLUDED
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


@pytest.mark.parametrize("package", [p for p in PACKAGES if p != "welcomemat"])
def test_packages_themselves_export_nothing(package: str) -> None:
    module = importlib.import_module(package)
    public = [n for n, v in vars(module).items() if not n.startswith("_") and not inspect.ismodule(v)]
    assert not public
