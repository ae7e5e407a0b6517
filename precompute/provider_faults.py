"""Provider faults: why a model provider could not write, and what the person running it should do.

A fault is not a decision. When the provider cannot answer for a reason that has nothing to
do with the account (a bad key, an unknown model, a wrong URL, a timeout, a refused
connection, an overloaded endpoint), the account is deferred: nothing new is published for
it, a version already published stays exactly as it was, and the next run asks again. The
key is no part of any input hash, and need not be: a fault records no decision, so fixing
the key is enough for the next run to regenerate every deferred account.

A model that answered is different: what it wrote faces the checks, and a draft they refuse
(or a page the model declined) takes the fallback. That is a decision, kept until the inputs
change.

`ProviderFault` (a `ProviderUnavailable`) carries a `FaultCause`; the run report counts the
deferred accounts by cause (`RunReport.deferred_causes`) and the summary prints one line
per cause, saying what to fix (`deferral_lines`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from precompute.report import RunReport
from welcomemat.errors import ProviderUnavailable

__all__ = ["FaultCause", "ProviderFault", "deferral_lines", "every_call_failed", "fault_cause"]


class FaultCause(enum.StrEnum):
    """Why the provider could not answer (the report's key for counting deferred accounts)."""

    UNAUTHORIZED = "http_401"
    FORBIDDEN = "http_403"
    NOT_FOUND = "http_404"
    MODEL_NOT_FOUND = "model_not_found"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    RATE_LIMITED = "http_429"
    SERVER_ERROR = "http_5xx"
    DEADLINE = "deadline"
    UNAVAILABLE = "unavailable"


# (what happened, what to do): one summary line per cause.
_ADVICE: Mapping[FaultCause, tuple[str, str]] = {
    FaultCause.UNAUTHORIZED: ("the provider answered 401", "check OPENAI_API_KEY"),
    FaultCause.FORBIDDEN: (
        "the provider answered 403",
        "check that OPENAI_API_KEY may use WELCOMEMAT_MODEL",
    ),
    FaultCause.NOT_FOUND: ("the provider answered 404", "check OPENAI_BASE_URL and WELCOMEMAT_MODEL"),
    FaultCause.MODEL_NOT_FOUND: ("the provider does not know the model", "check WELCOMEMAT_MODEL"),
    FaultCause.TIMEOUT: (
        "the provider did not answer in time",
        "check the endpoint's health, or allow more time (--deadline)",
    ),
    FaultCause.CONNECTION: ("the provider could not be reached", "check OPENAI_BASE_URL"),
    FaultCause.RATE_LIMITED: (
        "the provider answered 429 (rate limit)",
        "lower --concurrency or raise the account's limit",
    ),
    FaultCause.SERVER_ERROR: ("the provider answered 5xx", "run again when the provider recovers"),
    FaultCause.DEADLINE: ("the job deadline was reached", "run again, or allow more time (--deadline)"),
    FaultCause.UNAVAILABLE: ("the provider was unavailable", "run again when the provider recovers"),
}


class ProviderFault(ProviderUnavailable):
    """The provider could not answer, for `cause`: the account is deferred, never decided."""

    def __init__(self, cause: FaultCause, detail: str) -> None:
        self.cause = cause
        self.detail = detail
        super().__init__(f"{_ADVICE[cause][0]}: {detail}" if detail else _ADVICE[cause][0])


def fault_cause(exc: ProviderUnavailable) -> FaultCause:
    """The cause a provider gave, `unavailable` when it gave none (a provider of another kind)."""
    return exc.cause if isinstance(exc, ProviderFault) else FaultCause.UNAVAILABLE


def deferral_lines(causes: Mapping[str, int]) -> list[str]:
    """One line per cause, most accounts first: "120 accounts deferred: ...; check OPENAI_API_KEY"."""
    lines = []
    for code, count in sorted(causes.items(), key=lambda kv: (-kv[1], kv[0])):
        try:
            what, fix = _ADVICE[FaultCause(code)]
        except ValueError:  # a cause recorded by a newer version (a worker's counters): say it as is
            what, fix = code, "run again"
        noun = "account" if count == 1 else "accounts"
        lines.append(f"{count} {noun} deferred: {what}; {fix}")
    return lines


def every_call_failed(report: RunReport) -> bool:
    """True when the run deferred accounts and the provider answered for none: the run failed
    (exit 1), even though every published version it found was kept."""
    return report.deferred > 0 and report.provider_answered == 0
