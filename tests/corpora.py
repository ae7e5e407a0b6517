"""Where the external test corpora live: `../shared/corpora/` beside the repository.

They are written outside this project and kept out of it; a missing corpus is a failed
test run, not a skipped one, so CI can never go green without them.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPORA = Path(os.environ.get("WELCOMEMAT_CORPORA", REPO_ROOT.parent / "shared" / "corpora"))


def corpus_path(relative: str) -> Path:
    path = CORPORA / relative
    if not path.is_file():
        raise FileNotFoundError(
            f"test corpus {relative!r} not found under {CORPORA} "
            "(set WELCOMEMAT_CORPORA to the shared/corpora folder)"
        )
    return path


def corpus_lines(relative: str) -> list[str]:
    """Non-empty lines of a one-payload-per-line corpus file, newline stripped only."""
    text = corpus_path(relative).read_text(encoding="utf-8", errors="surrogateescape")
    return [line for line in text.split("\n") if line.strip()]
