"""What the guidelines page says of each version: its state, its verdict, and the step that comes next.

A version's next step is a person's (a sign-off, which an admin records with the page's button)
or a command's. A READY candidate proposed against the active version may be signed off whatever
its risk tier, as `welcomemat guidelines signoff` allows (`may_sign_off`: the core function's own
rule); a high-risk one must be, before its promotion (`needs_sign_off`). Promotion and rollback
rewrite `campaign.yaml` in the campaign's folder, which the renderer never reaches, so the page
shows the exact `welcomemat guidelines` command to run there. The report a command names is the
one `propose` writes by default (`guidelines/<version>.report.json`, beside `campaign.yaml`);
every path is quoted for a shell.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from welcomemat.campaign.guideline_signoff import sign_off_refusal
from welcomemat.campaign.guidelines import READY_FOR_PROMOTION, ActivationState, GuidelineChange

__all__ = ["CAMPAIGN_FILE", "STATE_LABELS", "NextStep", "VersionRow", "version_rows"]

CAMPAIGN_FILE = "campaign.yaml"  # the commands run in the campaign's folder
STATE_LABELS = {
    ActivationState.CANDIDATE: "candidate",
    ActivationState.ACTIVE: "active",
    ActivationState.SUPERSEDED: "superseded",
    ActivationState.ROLLED_BACK: "rolled back",
}


@dataclass(frozen=True)
class NextStep:
    """What comes next for a version: said in words, and the command that does it (if one does)."""

    text: str
    command: str | None = None


@dataclass(frozen=True)
class VersionRow:
    """One guideline version as the page shows it."""

    record: GuidelineChange
    state: str  # candidate, active, superseded, rolled back
    verdict: str | None  # READY, NOT READY; None for a version never replayed (the first one)
    needs_sign_off: bool  # a high-risk candidate, READY, not yet signed off, proposed against the active
    next: NextStep
    may_sign_off: bool = False  # any such candidate, whatever its risk tier (the command's rule)

    def to_json(self) -> dict[str, object]:
        return {
            **self.record.model_dump(mode="json"),
            "state_label": self.state,
            "verdict": self.verdict,
            "needs_sign_off": self.needs_sign_off,
            "may_sign_off": self.may_sign_off,
            "next": self.next.text,
            "command": self.next.command,
        }


def _report(version: str) -> str:
    return shlex.quote(f"guidelines/{version}.report.json")


def _command(action: str, *args: str) -> str:
    return " ".join(["welcomemat guidelines", action, CAMPAIGN_FILE, *args])


def _verdict(record: GuidelineChange) -> str | None:
    if not record.recommendation:
        return None
    return "READY" if record.recommendation == READY_FOR_PROMOTION else "NOT READY"


def _candidate_step(record: GuidelineChange, active: str | None) -> tuple[NextStep, bool]:
    propose = _command("propose", "NEW.yaml", "--reason", "TEXT", "--by", "NAME")
    if active is not None and record.previous_version is not None and active != record.previous_version:
        return NextStep(
            f"Proposed against {record.previous_version}, which is no longer active: propose it again.",
            propose,
        ), False
    if _verdict(record) != "READY":
        return NextStep("Not promotable: fix the candidate and propose it again.", propose), False
    promote = _command("promote", _report(record.version), "--by", "NAME")
    if record.approvers_required == 2 and record.signed_off_by is None:
        return NextStep(
            "Sign-off of the report's diagnosis by an admin (this page's button, or the command), "
            "then promotion by someone else.",
            _command("signoff", _report(record.version), "--by", "NAME"),
        ), True
    if record.signed_off_by is not None:
        return NextStep(
            f"Promotion, by someone other than {record.signed_off_by} (who signed off), in the campaign's "
            "folder.",
            promote,
        ), False
    return NextStep(
        "Promotion, in the campaign's folder (one approver: a sign-off is optional).", promote
    ), False


def _step(record: GuidelineChange, active: str | None) -> tuple[NextStep, bool]:
    if record.state is ActivationState.CANDIDATE:
        return _candidate_step(record, active)
    if record.state is ActivationState.ACTIVE:
        if record.rollback_target is None:
            return NextStep("None: in force."), False
        return NextStep(
            f"None: in force. A rollback would restore {record.rollback_target}.",
            _command("rollback", "--reason", "TEXT", "--by", "NAME"),
        ), False
    return NextStep(f"None: kept in {shlex.quote(f'guidelines/{record.version}.yaml')}."), False


def version_rows(history: list[GuidelineChange], active: str | None) -> list[VersionRow]:
    """The page's rows, newest proposal first; `active` is the version Redis says is active."""
    rows = []
    for record in reversed(history):
        step, needs_sign_off = _step(record, active)
        rows.append(
            VersionRow(
                record,
                STATE_LABELS[record.state],
                _verdict(record),
                needs_sign_off,
                step,
                may_sign_off=sign_off_refusal(record, record.version, active, None) is None,
            )
        )
    return rows
