"""Who runs a command, for the audit log: `--by NAME` ▸ `WELCOMEMAT_OPERATOR` ▸ the login name.

The name is what the person says it is: whoever can run `welcomemat` against a Redis can
write to it anyway, so the command line records a name, not a proof. The login-name fallback
is recorded as `login:NAME`, so an auditor can tell it from a name someone gave.
"""

from __future__ import annotations

import argparse
import getpass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when a handler runs: `welcomemat --help` loads no pydantic or redis
    from welcomemat.records.audit import Auditor, Via
    from welcomemat.settings import Settings

__all__ = ["add_by_argument", "cli_auditor"]


def add_by_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--by",
        metavar="NAME",
        default=None,
        help="who you are, for the audit log (default: WELCOMEMAT_OPERATOR, else login:<your login>)",
    )


def cli_auditor(by: str | None, settings: Settings | None = None, *, via: Via | None = None) -> Auditor:
    """The auditor of this command (`via` default `cli`): its actor named as above, the wall clock
    read at each entry."""
    from welcomemat.records.audit import Auditor, Via, check_actor
    from welcomemat.settings import Settings

    if by is not None:
        actor = check_actor(by, source="--by")
    else:
        configured = (settings or Settings.from_env()).operator
        if configured is not None:
            actor = check_actor(configured, source="WELCOMEMAT_OPERATOR")
        else:
            actor = check_actor(f"login:{_login()}", source="--by")
    return Auditor(actor, via or Via.CLI, lambda: datetime.now(UTC))


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, no LOGNAME/USER (a bare container)
        return "unknown"
