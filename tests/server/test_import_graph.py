"""Identifying a visitor needs only its sources, not the renderer's whole app state.

(That no module imports itself back, here or anywhere, is tests/test_import_boundary.py's.)"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.corpora import REPO_ROOT

SERVER = REPO_ROOT / "server"


def server_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("server."):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("server.")}
    return found


def import_graph() -> dict[str, set[str]]:
    return {
        ".".join(p.relative_to(SERVER.parent).with_suffix("").parts): server_imports(p)
        for p in SERVER.rglob("*.py")
        if p.name != "__init__.py"
    }


def test_identifying_a_visitor_needs_no_app_state() -> None:
    graph = import_graph()
    for module in ("server.visitor", "server.known_visitors", "server.visit"):
        assert "server.renderer_state" not in graph[module], module
