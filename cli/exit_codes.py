"""The command line's exit codes, the same for every command.

0 success; 1 the job ran and its verdict is NO GO or it failed; 2 bad usage or bad input
(the message names the file, line and field); 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

__all__ = ["EXIT_BAD_INPUT", "EXIT_CODE_MEANINGS", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

#: What each code tells a script that runs a command (docs/reference/cli.md is generated from it).
EXIT_CODE_MEANINGS: dict[int, str] = {
    EXIT_OK: "success",
    EXIT_FAILED: "the job ran and its verdict is NO GO, or it failed",
    EXIT_BAD_INPUT: "bad usage or bad input; the message names the file, line and field",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}
