"""Only `cli` writes to the terminal: the four layers below it return values.

`welcomemat`, `server`, `precompute` and `outbound` return what they did (a result, rows, a
report, a summary) or take a callback or stream the command passes in (progress, log lines,
an export written where the command chose); `cli` decides what is printed, where, and the
exit code. Read from the source with `ast`, like the import boundary: no module of the four
refers to `print`, to `sys.stdout` / `sys.stderr` (however `sys` or its streams are
imported), or imports `tqdm` (a progress bar draws on stderr), outside `ALLOWED`.

The checker runs on the real tree and on synthetic sources, so a checker that stopped seeing
a write would fail here too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from tests.corpora import REPO_ROOT

LAYERS = ("welcomemat", "server", "precompute", "outbound")
STREAMS = frozenset({"stdout", "stderr", "__stdout__", "__stderr__"})
# (file, function) -> why it may write to the terminal. Keep it as short as possible: a layer
# returns values or takes the stream or callback its command passes in.
ALLOWED = {
    # Not a command: the generator of docs/campaign.md (`python -m welcomemat.reference > docs/campaign.md`,
    # the file's regenerate line); its text is `render_markdown`'s, this only writes it out as UTF-8.
    ("welcomemat/reference.py", "main"),
}


@dataclass(frozen=True, order=True)
class TerminalWrite:
    """One place a module writes to the terminal: where, in which function, and how."""

    path: str
    line: int
    scope: str  # the enclosing functions and classes, dotted; `<module>` at the top level
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what} in {self.scope}"


def terminal_writes(text: str, path: str) -> list[TerminalWrite]:
    """Every reference to `print`, `sys.stdout`/`sys.stderr` or tqdm in one module's source."""
    tree = ast.parse(text, filename=path)
    sys_names = {"sys"} | {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name == "sys"
    }
    found: list[TerminalWrite] = []

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        what: str | None = None
        if isinstance(node, ast.Name) and node.id == "print" and isinstance(node.ctx, ast.Load):
            what = "print"
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in sys_names and node.attr in STREAMS:
                what = f"sys.{node.attr}"
            elif node.value.id == "builtins" and node.attr == "print":
                what = "print"
        elif isinstance(node, ast.ImportFrom) and node.module == "sys":
            streams = sorted(alias.name for alias in node.names if alias.name in STREAMS)
            what = f"sys.{streams[0]}" if streams else None
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module]
            if any(m is not None and m.split(".")[0] == "tqdm" for m in modules):
                what = "tqdm"
        if what is not None:
            found.append(TerminalWrite(path, getattr(node, "lineno", 0), ".".join(scope) or "<module>", what))
        inner = scope
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            inner = (*scope, node.name)
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, ())
    return sorted(found)


def layer_writes(root: Path) -> list[TerminalWrite]:
    return [
        write
        for layer in LAYERS
        for source in sorted((root / layer).rglob("*.py"))
        for write in terminal_writes(source.read_text(), source.relative_to(root).as_posix())
    ]


def test_no_module_below_the_cli_writes_to_the_terminal() -> None:
    writes = [w for w in layer_writes(REPO_ROOT) if (w.path, w.scope) not in ALLOWED]
    assert not writes, "return the value (or take a callback or stream) and print it in cli/:\n" + "\n".join(
        map(str, writes)
    )


def test_every_allowed_place_still_writes() -> None:
    # A stale entry would let the next write in that function through unseen.
    used = {(w.path, w.scope) for w in layer_writes(REPO_ROOT)}
    assert ALLOWED <= used, f"allowed but no longer writing (remove them): {sorted(ALLOWED - used)}"


def test_the_checker_sees_every_way_of_writing() -> None:
    source = """
import sys as system
from sys import stderr
import tqdm.auto


def report(n):
    print(n)
    system.stdout.write(str(n))


class Worker:
    def __init__(self, log=None):
        self.log = log or (lambda line: print(line, file=sys.__stderr__))
        self.other = print
"""
    writes = terminal_writes(source, "pkg/mod.py")
    assert [(w.line, w.scope, w.what) for w in writes] == [
        (3, "<module>", "sys.stderr"),
        (4, "<module>", "tqdm"),
        (8, "report", "print"),
        (9, "report", "sys.stdout"),
        (14, "Worker.__init__", "print"),
        (14, "Worker.__init__", "sys.__stderr__"),
        (15, "Worker.__init__", "print"),
    ]
    assert str(writes[2]) == "pkg/mod.py:8: print in report"


def test_the_checker_ignores_what_only_looks_like_a_write() -> None:
    source = """
import logging

HINT = "run `python3 -c 'print(1)'` or write to sys.stderr"
log = logging.getLogger(__name__)


def fingerprint(report, out):
    report.print(out)  # a method of the caller's object
    out.write(report.sys.stdout)
    log.info("%s", report)
    return fingerprint
"""
    assert terminal_writes(source, "pkg/mod.py") == []
