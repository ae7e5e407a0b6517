"""The command-line checkers the `test` extra installs (hadolint, check-jsonschema): this
interpreter's own first (the versions requirements/ci.txt pins), else whatever PATH finds."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

__all__ = ["installed"]


def installed(name: str) -> str:
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    found = shutil.which(name)
    assert found, f"{name} is not installed: it comes with the test extra (pip install -e '.[test]')"
    return found
