"""Load a YAML contract into a pydantic model, with errors that name file, line and field.

Every problem of a file is found in one pass: each pydantic error, each key a mapping
repeats, each value refused as it is read, and the cross-field problems a model's validator
reports. `check_yaml_model` returns them all; `load_yaml_model` refuses with them (reading
as the first).

A file is bounded before it can cost anything (`welcomemat.limits`): its size before it is
read; while it is composed, how deep its collections nest (PyYAML's composer recurses: 20,000
`[` would be a `RecursionError`), aliases that point into their own value (a cycle), and how
many values it holds with its aliases expanded (a "billion laughs" is a few lines). Those
refuse the file (`ContractError` at the line). A scalar that does not make a value (a number
past `NUMBER_MAX_CHARS` characters, which Python's `int` refuses past 4,300 digits anyway;
`.nan`, `.inf` or a float that overflows to it; a date that does not exist; a lone surrogate
escape) is refused at its line and field and read as null, so the rest is still checked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from welcomemat.errors import ContractError, ContractProblems
from welcomemat.limits import NESTING_MAX_DEPTH, NUMBER_MAX_CHARS, YAML_MAX_BYTES, YAML_MAX_VALUES
from welcomemat.validation_errors import dotted, every_problem

__all__ = [
    "FieldProblem",
    "FieldProblems",
    "UniqueKeyLoader",
    "YamlDocument",
    "check_yaml_model",
    "line_of_field",
    "load_yaml_model",
    "read_yaml",
    "valid_fields",
]

ModelT = TypeVar("ModelT", bound=BaseModel)
Loc = tuple[int | str, ...]
# Given the raw document and the top-level fields pydantic refused: the cross-field problems
# among the fields that are valid on their own (a model validator never runs on a model
# whose fields fail, so without this a second run would find them).
PartialCheck = Callable[[dict[str, Any], frozenset[str]], Sequence["FieldProblem"]]

_MERGE_TAG = "tag:yaml.org,2002:merge"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_SURROGATE = re.compile("[\ud800-\udfff]")
# A field path longer than this is shown cut (a refusal for nesting has one as deep as the limit).
_SHOWN_PATH_PARTS = 8


class _Refused(Exception):
    """The whole file refused while it was composed: where, and why."""

    def __init__(self, loc: Loc | None, line: int, message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.line = line
        self.message = message


def _shown_field(loc: Loc | None) -> str | None:
    if loc is None:
        return None
    if len(loc) > _SHOWN_PATH_PARTS:
        return f"{dotted(loc[:_SHOWN_PATH_PARTS])}…"
    return dotted(loc)


@dataclass(frozen=True)
class FieldProblem:
    """A cross-field problem at a precise field path (pydantic would put it at the model's root)."""

    loc: Loc
    message: str


class FieldProblems(Exception):
    """Raised by a model validator with every cross-field problem it found.

    Not a ValueError on purpose: pydantic passes it through untouched, so each problem
    keeps its own field path (and the loader finds its line).
    """

    def __init__(self, problems: Sequence[FieldProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(f"{dotted(p.loc) or '(top level)'}: {p.message}" for p in self.problems))


class UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that records every key a mapping repeats, instead of silently keeping the last.

    YAML says mapping keys are unique; PyYAML keeps the last value, so a second
    `holdout_fraction:` further down a long campaign would quietly win. Each repeat is kept
    as (field path, line, message); merge keys (`<<`) are not repeats. It also bounds the
    document (module docstring): scalars it refuses are kept in `refused` the same way and
    read as null; a document too deep, cyclic or too large raises `_Refused`.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[Loc, int, str]] = []
        self.refused: list[tuple[Loc, int, str]] = []
        self._paths: dict[int, Loc] = {}
        # While composing: the field path (None inside a mapping's key) and the anchors open.
        self._compose_path: list[int | str | None] = []
        self._open_anchors: set[str] = set()
        self._composed = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if parent is not None:
            part = index if isinstance(index, int) else getattr(index, "value", None)
            self._compose_path.append(part if isinstance(part, (int, str)) else None)
        try:
            return self._compose_bounded(parent, index)
        finally:
            if parent is not None:
                self._compose_path.pop()

    def _compose_bounded(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        line = event.start_mark.line + 1
        self._composed += 1
        if self._composed > YAML_MAX_VALUES:  # stop early: expanded, there are more still
            raise _Refused(None, line, f"not accepted: more than {YAML_MAX_VALUES} values")
        if isinstance(event, yaml.AliasEvent) and event.anchor in self._open_anchors:
            raise _Refused(
                self._where(),
                line,
                f"alias *{event.anchor} refers to the value it is part of (a cycle)",
            )
        if not isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            return super().compose_node(parent, index)
        depth = len(self._compose_path) + 1  # every node above this one is a list or mapping
        if depth > NESTING_MAX_DEPTH:
            raise _Refused(
                self._where(nesting=True),
                line,
                f"not accepted: lists and mappings nested deeper than {NESTING_MAX_DEPTH} levels",
            )
        anchor = event.anchor
        if anchor is not None:
            self._open_anchors.add(anchor)
        try:
            return super().compose_node(parent, index)
        finally:
            if anchor is not None:
                self._open_anchors.discard(anchor)

    def _where(self, *, nesting: bool = False) -> Loc | None:
        if any(part is None for part in self._compose_path):
            return None  # inside a mapping key: no field path names it
        loc: list[int | str] = [part for part in self._compose_path if part is not None]
        if nesting:  # the field whose value nests: not the run of list indexes under it
            while len(loc) > 1 and isinstance(loc[-1], int):
                loc.pop()
        return tuple(loc)

    def construct_document(self, node: yaml.Node) -> Any:
        sizes: dict[int, int] = {}
        if _expanded_size(node, sizes) > YAML_MAX_VALUES:
            loc, at, values = _largest_field(node, sizes)
            raise _Refused(
                loc,
                at.start_mark.line + 1,
                f"not accepted: {values} values once its aliases are expanded; at most {YAML_MAX_VALUES}",
            )
        self._paths = {id(n): loc for n, loc in _walk(node, ())}
        return super().construct_document(node)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            return super().construct_object(node, deep=deep)
        problem = _scalar_problem(node)
        if problem is None:
            try:
                value = super().construct_object(node, deep=deep)
            except yaml.YAMLError:
                raise
            except Exception as exc:  # a tag's constructor on text it cannot read (any error)
                problem = f"not a valid {node.tag.rsplit(':', 1)[-1]}: {_shown(str(node.value))}"
                if isinstance(exc, ValueError):  # says why (a date's month); other errors say nothing
                    problem += f" ({exc})"
            else:
                if isinstance(value, float) and not math.isfinite(value):
                    problem = f"must be a finite number, got {node.value}"
                elif isinstance(value, str) and _SURROGATE.search(value):
                    problem = "a lone surrogate escape (\\ud800-\\udfff) is not a character"
                else:
                    return value
        self.refused.append((self._paths.get(id(node), ()), node.start_mark.line + 1, problem))
        return None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        if isinstance(node, yaml.MappingNode):
            self._record_duplicates(node)
        return super().construct_mapping(node, deep=deep)

    def _record_duplicates(self, node: yaml.MappingNode) -> None:
        first_line: dict[object, int] = {}
        where = self._paths.get(id(node), ())
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            try:
                first = first_line.get(key)
            except TypeError:  # an unhashable key: pydantic refuses it anyway
                continue
            if first is None:
                first_line[key] = line
            else:
                message = f"duplicate key {key_node.value!r} (first on line {first}): keep one"
                self.duplicates.append(((*where, key_node.value), line, message))


def _shown(text: str) -> str:
    return repr(text if len(text) <= 24 else f"{text[:12]}…{text[-4:]}")


def _scalar_problem(node: yaml.ScalarNode) -> str | None:
    """Why a number scalar is refused before it is converted (its length), or None."""
    text = str(node.value)
    if len(text) <= NUMBER_MAX_CHARS or node.tag not in (_INT_TAG, _FLOAT_TAG):
        return None
    shown = text if len(text) <= 24 else f"{text[:12]}…{text[-4:]}"
    if node.tag == _INT_TAG:
        digits = sum(ch in "0123456789abcdefABCDEF" for ch in text)
        return f"number {shown} has {digits} digits; at most {NUMBER_MAX_CHARS} accepted"
    return f"number {shown} has {len(text)} characters; at most {NUMBER_MAX_CHARS} accepted"


def _largest_field(root: yaml.Node, sizes: dict[int, int]) -> tuple[Loc, yaml.Node, int]:
    """The top-level entry that takes the document past `YAML_MAX_VALUES` (the whole document
    when no single entry does): its path, the node to name its line, its expanded size."""
    entries: list[tuple[Loc, yaml.Node, yaml.Node]] = []
    if isinstance(root, yaml.MappingNode):
        entries = [((str(k.value),), k, v) for k, v in root.value if isinstance(k, yaml.ScalarNode)]
    elif isinstance(root, yaml.SequenceNode):
        entries = [((i,), item, item) for i, item in enumerate(root.value)]
    running = 1
    for loc, at, value in entries:
        size = sizes[id(value)]
        running += size
        if running > YAML_MAX_VALUES:
            return (loc, at, size) if size > YAML_MAX_VALUES else ((), root, sizes[id(root)])
    return (), root, sizes[id(root)]


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many nodes the tree holds with every alias expanded (each shared node counted once
    per use, computed once): what constructing, validating and storing it will walk."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    total = 1
    if isinstance(node, yaml.MappingNode):
        total += sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        total += sum(_expanded_size(item, sizes) for item in node.value)
    sizes[id(node)] = total
    return total


def _walk(node: yaml.Node, loc: Loc) -> Iterator[tuple[yaml.Node, Loc]]:
    """Every node of the tree with its field path (keys as written; list items by index)."""
    yield node, loc
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                yield from _walk(value, (*loc, key.value))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            yield from _walk(item, (*loc, i))


@dataclass(frozen=True)
class YamlDocument:
    """A YAML file read once: its data, its node tree (for line numbers), its repeated keys and
    the values refused as they were read (each read as null)."""

    path: Path
    data: Any
    tree: yaml.Node | None
    duplicates: tuple[ContractError, ...]
    refused: tuple[ContractError, ...] = ()
    refused_at: tuple[Loc, ...] = ()


def _line_of(node: yaml.Node | None, loc: Loc) -> int | None:
    """1-based line of the deepest node on `loc` that exists in the YAML tree."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            # The last of repeated keys: the one whose value the model was given.
            for key, value in reversed(node.value):
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    node = value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            return line
        line = node.start_mark.line + 1
    return line


def line_of_field(path: str | Path | None, loc: Loc) -> int | None:
    """1-based line of a field path in a YAML file (None if unreadable or not found)."""
    if path is None:
        return None
    try:
        document = read_yaml(Path(path))
    except ContractError:
        return None
    return _line_of(document.tree, loc)


def read_yaml(path: Path) -> YamlDocument:
    """The document, its node tree, its repeated keys and refused values. ContractError if it is
    unreadable, not YAML, or past a limit of the whole file (size, nesting, cycles, expansion)."""
    if not path.is_file():
        raise ContractError("file not found", file=path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(YAML_MAX_BYTES + 1)
    except OSError as exc:
        raise ContractError(f"cannot read: {exc.strerror}", file=path) from None
    if len(raw) > YAML_MAX_BYTES:
        raise ContractError(f"not accepted: larger than {YAML_MAX_BYTES} bytes", file=path)
    try:
        loader = UniqueKeyLoader(raw.decode("utf-8"))
        try:
            tree = loader.get_single_node()
            data = loader.construct_document(tree) if tree is not None else None
        finally:
            loader.dispose()
    except UnicodeDecodeError as exc:
        raise ContractError(f"not UTF-8 ({exc.reason})", file=path) from None
    except _Refused as refused:
        raise ContractError(
            refused.message, file=path, line=refused.line, field=_shown_field(refused.loc)
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise ContractError(f"not valid YAML: {getattr(exc, 'problem', exc)}", file=path, line=line) from None
    except (ValueError, TypeError, AttributeError, OverflowError, RecursionError) as exc:
        # The last net: PyYAML's constructors on text no check above foresaw. A clear refusal
        # of the file, never a traceback.
        raise ContractError(f"not valid YAML: cannot be read ({type(exc).__name__})", file=path) from None
    duplicates = tuple(
        ContractError(message, file=path, line=line, field=dotted(loc))
        for loc, line, message in loader.duplicates
    )
    refused_values = tuple(
        ContractError(message, file=path, line=line, field=dotted(loc))
        for loc, line, message in loader.refused
    )
    return YamlDocument(
        path=path,
        data=data,
        tree=tree,
        duplicates=duplicates,
        refused=refused_values,
        refused_at=tuple(loc for loc, _, _ in loader.refused),
    )


def valid_fields(
    model: type[BaseModel], data: dict[str, Any], failing: frozenset[str], context: dict[str, Any] | None
) -> dict[str, Any]:
    """The top-level fields of `data` that are valid on their own, validated (the others left out)."""
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name in failing or name not in data:
            continue
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(Annotated[info.annotation, info])  # type: ignore[arg-type]
            out[name] = adapter.validate_python(data[name], context=context)
        except ValidationError:
            continue
    return out


def check_yaml_model(
    path: str | Path,
    model: type[ModelT],
    context: dict[str, Any] | None = None,
    *,
    partial: PartialCheck | None = None,
) -> tuple[ModelT | None, list[ContractError]]:
    """Validate a YAML file as `model`: the model (None if refused) and every problem, in line order."""
    path = Path(path)
    try:
        document = read_yaml(path)
    except ContractError as exc:
        return None, [exc]
    data = document.data
    if not isinstance(data, dict):
        return None, [
            *document.duplicates,
            *document.refused,
            ContractError("expected a mapping at the top level", file=path, line=1),
        ]
    found: list[tuple[Loc, str]] = []
    value: ModelT | None = None
    try:
        value = model.model_validate(data, context=context)
    except ValidationError as exc:
        found = every_problem(exc)
        if partial is not None:
            failing = frozenset(str(loc[0]) for loc, _ in found if loc)
            found += [(p.loc, p.message) for p in partial(data, failing)]
    except FieldProblems as raised:
        found = [(p.loc, p.message) for p in raised.problems]
    # A refused value was read as null: what the model says about that null is not news.
    refused = [loc for loc in document.refused_at if loc]
    problems = [*document.duplicates, *document.refused]
    problems += [
        ContractError(message, file=path, line=_line_of(document.tree, loc), field=dotted(loc))
        for loc, message in found
        if not any(loc[: len(r)] == r for r in refused)
    ]
    problems.sort(key=lambda p: p.line or 0)
    return (value if not problems else None), problems


def load_yaml_model(path: str | Path, model: type[ModelT], context: dict[str, Any] | None = None) -> ModelT:
    """Validate a YAML file as `model`; ContractProblems (reading as the first) when anything is wrong."""
    value, problems = check_yaml_model(path, model, context)
    if problems or value is None:
        raise ContractProblems(problems)
    return value
