"""The renderer's modules import each other without a circle (imports under TYPE_CHECKING and
inside functions included): each one can be read, tested and moved on its own."""

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
    return {f"server.{p.stem}": server_imports(p) for p in SERVER.glob("*.py")}


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of `graph`, as the modules along it, or None."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done or module not in graph:
            return None
        for imported in sorted(graph[module]):
            circle = visit(imported, [*path, module])
            if circle is not None:
                return circle
        done.add(module)
        return None

    for module in sorted(graph):
        circle = visit(module, [])
        if circle is not None:
            return circle
    return None


def test_find_circle_finds_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_circle(graph) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set()}) is None


def test_the_server_modules_import_no_circle() -> None:
    assert find_circle(import_graph()) is None


def test_identifying_a_visitor_needs_no_app_state() -> None:
    graph = import_graph()
    for module in ("server.visitor", "server.known_visitors", "server.visit"):
        assert "server.renderer_state" not in graph[module], module
