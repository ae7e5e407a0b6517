"""The banned openers shipped with Welcomemat, and the rule that a configuration only adds to them.

Why in code: the openers sales-writing guides ban ("Hope this email finds you well",
"Quick question", "I noticed your work at") tell a reader at once that a template wrote to
them, on a page as in a mail. They are refused for every tenant; `tenant.yaml` and
`campaign.yaml` may add openers of their own (`banned_openers`), never remove one. A file
that tries — a key such as `allowed_openers`, `banned_openers: null`, an entry
`"!Quick question"` — is refused at load with a message that says so, rather than read as
something else (an unknown key, a wrong type) or, worse, half obeyed.

The list is written as people write these openers; the checks compare case, spacing and
punctuation aside (`precompute.checks`), at the start of the text and of each sentence,
a greeting before it aside ("Hi Joram, hope you're doing well").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from welcomemat.validation_errors import every_problem
from welcomemat.yamlfile import FieldProblem, FieldProblems

__all__ = ["DEFAULT_BANNED_OPENERS", "OPENERS_FIELD", "opener_override_problems", "refuse_opener_overrides"]

# Shipped with the product: always banned, whatever tenant.yaml and campaign.yaml say.
DEFAULT_BANNED_OPENERS: tuple[str, ...] = (
    "I noticed your work at",
    "I noticed you",
    "I came across your profile",
    "I came across your",
    "I stumbled upon your",
    "Hope this email finds you well",
    "I hope this email finds you well",
    "Hope this finds you well",
    "I hope this finds you well",
    "Hope this message finds you well",
    "I hope this message finds you well",
    "Hope this note finds you well",
    "I hope this note finds you well",
    "I trust this email finds you well",
    "Hope you're doing well",
    "I hope you're doing well",
    "Hope you are doing well",
    "I hope you are doing well",
    "Hope you're well",
    "I hope you're well",
    "Hope all is well",
    "I hope all is well",
    "Quick question",
    "I wanted to reach out",
    "Just wanted to reach out",
    "I'm reaching out",
    "I am reaching out",
    "Just reaching out",
    "I wanted to touch base",
    "Just checking in",
    "Allow me to introduce myself",
    "I know you're busy",
    "Sorry to bother you",
    "To whom it may concern",
)

OPENERS_FIELD = "banned_openers"
_RULE = (
    f"the {len(DEFAULT_BANNED_OPENERS)} banned openers shipped with Welcomemat "
    f"({', '.join(repr(o) for o in DEFAULT_BANNED_OPENERS[:3])} ...) always apply; "
    f"`{OPENERS_FIELD}` adds openers to them and cannot remove one"
)

ModelT = TypeVar("ModelT")


def opener_override_problems(data: Mapping[str, Any]) -> list[FieldProblem]:
    """Every way a top-level mapping of `tenant.yaml` or `campaign.yaml` tries to drop shipped openers.

    A key other than `banned_openers` that names openers (`allowed_openers`,
    `default_banned_openers: false`...), `banned_openers: null`, and `!`-prefixed entries.
    """
    problems: list[FieldProblem] = []
    for key, value in data.items():
        if not isinstance(key, str) or "opener" not in key.casefold():
            continue
        if key != OPENERS_FIELD:
            problems.append(FieldProblem((key,), f"{key!r} cannot change the banned openers: {_RULE}"))
        elif value is None:
            problems.append(FieldProblem((key,), f"null cannot switch banned openers off: {_RULE}"))
        elif isinstance(value, list | tuple):
            problems += [
                FieldProblem(
                    (key, i), f"{entry!r} reads as removing an opener, which no file can do: {_RULE}"
                )
                for i, entry in enumerate(value)
                if isinstance(entry, str) and entry.strip().startswith("!")
            ]
    return problems


def refuse_opener_overrides(data: Any, handler: Callable[[Any], ModelT]) -> ModelT:
    """The body of a wrap model validator: validate as usual, but refuse any opener override.

    The rest of the file is still validated, so every other problem is reported with it.
    """
    problems = opener_override_problems(data) if isinstance(data, Mapping) else []
    if not problems:
        return handler(data)
    refused = {p.loc[0] for p in problems}
    rest = {k: v for k, v in data.items() if k not in refused}
    found = list(problems)
    try:
        handler(rest)
    except ValidationError as exc:
        found += [FieldProblem(loc, message) for loc, message in every_problem(exc)]
    except FieldProblems as exc:
        found += exc.problems
    raise FieldProblems(found)
