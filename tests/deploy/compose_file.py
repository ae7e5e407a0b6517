"""compose.yaml read as Compose reads it: `${NAME}`, `${NAME:-default}`, `${NAME-default}` and
the `?` forms interpolated from an environment, `$$` an escaped dollar."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from tests.corpora import REPO_ROOT

__all__ = ["COMPOSE_FILE", "InterpolationError", "compose_document", "interpolate", "references"]

COMPOSE_FILE = REPO_ROOT / "compose.yaml"

_REFERENCE = re.compile(r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<op>:?[-?+])?(?P<arg>[^}]*)\}")


class InterpolationError(ValueError):
    """A `${NAME:?message}` (or `${NAME?message}`) whose variable is unset: Compose refuses the
    whole file, for every command."""


def references(text: str) -> list[tuple[str, str | None]]:
    """Every `${...}` in `text`: (variable, operator or None)."""
    return [(m["name"], m["op"]) for m in _REFERENCE.finditer(text) if m["name"]]


def interpolate(value: str, env: Mapping[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, arg = match["name"], match["op"], match["arg"]
        present = name in env
        empty_or_unset = not env.get(name)
        if op in (":-", "-"):
            unset = empty_or_unset if op == ":-" else not present
            return arg if unset else env[name]
        if op in (":?", "?"):
            if empty_or_unset if op == ":?" else not present:
                raise InterpolationError(f"{name}: {arg}")
            return env[name]
        if op in (":+", "+"):
            return "" if (empty_or_unset if op == ":+" else not present) else arg
        return env.get(name, "")

    return _REFERENCE.sub(one, value)


def _walk(node: Any, env: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, list):
        return [_walk(item, env) for item in node]
    if isinstance(node, dict):
        return {key: _walk(value, env) for key, value in node.items()}
    return node


def compose_document(env: Mapping[str, str] | None = None, text: str | None = None) -> dict[str, Any]:
    """compose.yaml (or `text`) as loaded; interpolated from `env` unless it is None."""
    document = yaml.safe_load(COMPOSE_FILE.read_text() if text is None else text)
    assert isinstance(document, dict)
    return document if env is None else dict(_walk(document, env))
