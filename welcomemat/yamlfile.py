"""Load a YAML contract into a pydantic model, with errors that name file, line and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from welcomemat.errors import ContractError
from welcomemat.validation_errors import dotted, first_problem

__all__ = [
    "FieldProblem",
    "line_of_field",
    "load_yaml_model",
    "read_yaml",
]

ModelT = TypeVar("ModelT", bound=BaseModel)


class FieldProblem(Exception):
    """Raised by a model validator for a cross-field problem at a precise field path.

    Pydantic reports a model validator's ValueError at the model's root; this exception
    passes through validation untouched, so the error can still name the field and line.
    """

    def __init__(self, loc: tuple[int | str, ...], message: str) -> None:
        self.loc = loc
        self.message = message
        super().__init__(message)


def _line_of(node: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """1-based line of the deepest node on `loc` that exists in the YAML tree."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
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


def line_of_field(path: str | Path | None, loc: tuple[int | str, ...]) -> int | None:
    """1-based line of a field path in a YAML file (None if unreadable or not found)."""
    if path is None:
        return None
    try:
        _, tree = read_yaml(Path(path))
    except ContractError:
        return None
    return _line_of(tree, loc)


def read_yaml(path: Path) -> tuple[Any, yaml.Node | None]:
    """The document and its node tree (for line numbers). ContractError if unreadable."""
    if not path.is_file():
        raise ContractError("file not found", file=path)
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        tree = yaml.compose(text, Loader=yaml.SafeLoader)
    except UnicodeDecodeError as exc:
        raise ContractError(f"not UTF-8 ({exc.reason})", file=path) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise ContractError(f"not valid YAML: {getattr(exc, 'problem', exc)}", file=path, line=line) from None
    return data, tree


def load_yaml_model(path: str | Path, model: type[ModelT], context: dict[str, Any] | None = None) -> ModelT:
    """Validate a YAML file as `model`; the first problem becomes a ContractError."""
    path = Path(path)
    data, tree = read_yaml(path)
    if not isinstance(data, dict):
        raise ContractError("expected a mapping at the top level", file=path, line=1)
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        loc, message = first_problem(exc)
    except FieldProblem as problem:
        loc, message = problem.loc, problem.message
    raise ContractError(message, file=path, line=_line_of(tree, loc), field=dotted(loc))
