"""The fields of each admin form post, declared once: what its handler reads, and what OpenAPI says.

A page's button posts `application/x-www-form-urlencoded` (`server.admin.form_body`). Each
route that takes such a post declares a `FormPost`: the pydantic model its JSON body is read
with, and the form fields it reads into that model, each with its JSON Schema. The handler
reads the form only through `FormPost.read`, and `server.openapi` publishes `FormPost.schema`
under `components.schemas`, so what is described is what is read:

- a field the declaration does not name is 400, naming it (as the JSON body's `extra="forbid"`);
- a value longer than its `maxLength` is 400 (counted as sent: an HTML input's `maxlength`);
- a blank optional field is as if not sent (a browser sends every input of a form), a blank
  required one is 400;
- an integer field of digits is read as a number; anything else is left for the model to refuse.

`csrf`, the session's CSRF token, is in every form: `server.admin.csrf` checks it (403 without
it or with another) before the handler runs, for a person's session only; a bearer token's
request is not checked, so the schema does not call it required.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from server.admin.csrf import CSRF_FIELD
from server.problems import HTTPProblem

__all__ = ["CSRF_FORM_FIELD", "FormField", "FormPost"]


@dataclass(frozen=True)
class FormField:
    """One field of a form post: its name, its JSON Schema (as OpenAPI shows it), whether it is required."""

    name: str
    schema: Mapping[str, Any]
    required: bool = False

    @property
    def max_chars(self) -> int | None:
        limit = self.schema.get("maxLength")
        return limit if isinstance(limit, int) else None

    def value(self, raw: str) -> object:
        """The value as the body model reads it: an integer field's digits as a number."""
        if self.schema.get("type") != "integer":
            return raw
        digits = len(str(self.schema.get("maximum", "")))
        return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= digits else raw


CSRF_FORM_FIELD = FormField(
    CSRF_FIELD,
    {
        "type": "string",
        "maxLength": 64,
        "description": "The session's CSRF token, as the page's form carries it: required with a session "
        "cookie (403 without it, or with another), not read with a bearer token.",
    },
)


@dataclass(frozen=True)
class FormPost:
    """A route's form post: the body model its fields are read into, and the fields (the CSRF token aside)."""

    name: str  # its schema's name under components.schemas
    model: type[BaseModel]
    fields: tuple[FormField, ...]
    description: str = ""
    all_fields: tuple[FormField, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "all_fields", (CSRF_FORM_FIELD, *self.fields))

    def schema(self) -> dict[str, Any]:
        """The form's JSON Schema, for OpenAPI."""
        return {
            "type": "object",
            "description": self.description,
            "additionalProperties": False,
            "properties": {f.name: dict(f.schema) for f in self.all_fields},
            "required": [f.name for f in self.all_fields if f.required],
        }

    def read(self, form: Mapping[str, str]) -> dict[str, object]:
        """The form's fields as the model reads them (see the module docstring); 400 naming the field."""
        declared = {f.name: f for f in self.all_fields}
        for name in form:
            if name not in declared:
                raise HTTPProblem(
                    400, f"the form's {name[:40]!r} is not a field of this form ({', '.join(declared)})"
                )
        data: dict[str, object] = {}
        for f in self.all_fields:
            raw = form.get(f.name, "")
            limit = f.max_chars
            if limit is not None and len(raw) > limit:
                raise HTTPProblem(400, f"the form's {f.name}: at most {limit} characters")
            if f is CSRF_FORM_FIELD:  # checked before the handler runs (a session's), never the model's
                continue
            if raw.strip():
                data[f.name] = f.value(raw)
            elif f.required:
                raise HTTPProblem(400, f"the form needs a {f.name} (it is blank or missing)")
        return data
