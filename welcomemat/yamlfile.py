"""Load a YAML contract into a pydantic model, with errors that name file, line and field.

Every problem of a file is found in one pass: each pydantic error, each key a mapping
repeats, and the cross-field problems a model's validator reports. `check_yaml_model`
returns them all; `load_yaml_model` refuses with them (reading as the first).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from welcomemat.errors import ContractError, ContractProblems
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
    as (field path, line, message); merge keys (`<<`) are not repeats.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[Loc, int, str]] = []
        self._paths: dict[int, Loc] = {}

    def construct_document(self, node: yaml.Node) -> Any:
        self._paths = {id(n): loc for n, loc in _walk(node, ())}
        return super().construct_document(node)

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
    """A YAML file read once: its data, its node tree (for line numbers) and its repeated keys."""

    path: Path
    data: Any
    tree: yaml.Node | None
    duplicates: tuple[ContractError, ...]


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
    """The document, its node tree and its repeated keys. ContractError if unreadable or not YAML."""
    if not path.is_file():
        raise ContractError("file not found", file=path)
    try:
        text = path.read_text(encoding="utf-8")
        loader = UniqueKeyLoader(text)
        try:
            tree = loader.get_single_node()
            data = loader.construct_document(tree) if tree is not None else None
        finally:
            loader.dispose()
    except UnicodeDecodeError as exc:
        raise ContractError(f"not UTF-8 ({exc.reason})", file=path) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise ContractError(f"not valid YAML: {getattr(exc, 'problem', exc)}", file=path, line=line) from None
    duplicates = tuple(
        ContractError(message, file=path, line=line, field=dotted(loc))
        for loc, line, message in loader.duplicates
    )
    return YamlDocument(path=path, data=data, tree=tree, duplicates=duplicates)


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
    problems = [*document.duplicates]
    problems += [
        ContractError(message, file=path, line=_line_of(document.tree, loc), field=dotted(loc))
        for loc, message in found
    ]
    problems.sort(key=lambda p: p.line or 0)
    return (value if not problems else None), problems


def load_yaml_model(path: str | Path, model: type[ModelT], context: dict[str, Any] | None = None) -> ModelT:
    """Validate a YAML file as `model`; ContractProblems (reading as the first) when anything is wrong."""
    value, problems = check_yaml_model(path, model, context)
    if problems or value is None:
        raise ContractProblems(problems)
    return value
