"""What the experiments page says of a campaign's copy experiment: state, variants and split, next step.

The experiment is the one the campaign declares as published (what its zone sets were written
under). Whether it was stopped, and which variant was kept, is read from that campaign
(`experiment.stopped`) and from the guideline versions in Redis: `welcomemat experiment stop`
records its stop as a new active version whose change record says so
(`welcomemat.campaign.experiments.stopped_in`), which the published campaign shows only after the
next `welcomemat precompute`. A stop that was rolled back (`welcomemat guidelines rollback`)
restarts the experiment at the next precompute.

Stopping rewrites `campaign.yaml` in the campaign's folder, which the renderer never reaches: to
an admin the page shows the exact command per variant, run in that folder (every argument quoted
for a shell: `shlex.join`), and the precompute that follows; to a viewer or reviewer, the state
and that an admin stops experiments. Stops of experiments the campaign no longer declares are
listed from the guideline versions.
"""

from __future__ import annotations

import enum
import shlex
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction

from server.admin.guideline_steps import CAMPAIGN_FILE, STATE_LABELS, NextStep
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.experiments import Experiment, stopped_in
from welcomemat.campaign.guidelines import ActivationState, GuidelineChange

__all__ = [
    "PRECOMPUTE_COMMAND",
    "ExperimentRow",
    "ExperimentState",
    "StopRecord",
    "VariantRow",
    "experiment_rows",
    "stop_command",
    "stop_records",
]

# The renderer knows neither the folder nor the accounts file: both are the operator's.
PRECOMPUTE_COMMAND = shlex.join(["welcomemat", "precompute", CAMPAIGN_FILE, "ACCOUNTS.jsonl"])


class ExperimentState(enum.StrEnum):
    RUNNING = "running"
    STOPPING = "stopped, not yet published"  # stopped by a guideline version precompute has not published
    STOPPED = "stopped"


def stop_command(experiment_id: str, keep: str, by: str | None) -> str:
    """`welcomemat experiment stop` keeping `keep`, as a shell reads it; `--by` the person who runs it."""
    args = ["welcomemat", "experiment", "stop", CAMPAIGN_FILE, experiment_id, "--keep", keep]
    return shlex.join([*args, "--by", by] if by else args)


@dataclass(frozen=True)
class StopRecord:
    """A guideline version that stopped an experiment (its change record)."""

    record: GuidelineChange
    experiment: str
    keep: str

    @property
    def state(self) -> str:
        return STATE_LABELS[self.record.state]

    @property
    def stopped_by(self) -> str | None:
        return self.record.approvers[0] if self.record.approvers else None

    @property
    def stopped_at(self) -> datetime | None:
        return self.record.activated_at

    def to_json(self) -> dict[str, object]:
        return {
            "experiment": self.experiment,
            "kept": self.keep,
            "version": self.record.version,
            "version_state": self.state,
            "stopped_by": self.stopped_by,
            "stopped_at": self.stopped_at.isoformat() if self.stopped_at else None,
            "reason": self.record.reason,
        }


def stop_records(history: list[GuidelineChange]) -> list[StopRecord]:
    """Every guideline version a stop wrote, newest first."""
    found = []
    for record in reversed(history):
        stop = stopped_in(record.recommendation)
        if stop is not None:
            found.append(StopRecord(record, *stop))
    return found


@dataclass(frozen=True)
class VariantRow:
    """One variant as the page shows it: what it changes, its share, whether it is kept, its stop command."""

    id: str
    patterns: tuple[str, ...]  # the fact types whose patterns it replaces, for the experiment's zone
    voice: str | None
    share: Fraction  # of the personal arm while the experiment runs (equal shares)
    kept: bool
    command: str | None  # stop the experiment keeping this variant (an admin's, while it runs)

    @property
    def control(self) -> bool:
        return not self.patterns and self.voice is None

    def to_json(self, holdout_fraction: float) -> dict[str, object]:
        return {
            "id": self.id,
            "patterns_for": list(self.patterns),
            "voice": self.voice,
            "control": self.control,
            "share_of_personal": float(self.share),
            "share_of_accounts": float(self.share) * (1.0 - holdout_fraction),
            "kept": self.kept,
            "command": self.command,
        }


@dataclass(frozen=True)
class ExperimentRow:
    """The experiment the campaign declares, as the page shows it."""

    experiment: Experiment
    state: ExperimentState
    kept: str | None
    ran_under: str | None
    stop: StopRecord | None  # the guideline version that stopped it (when one is recorded)
    variants: tuple[VariantRow, ...]
    next: NextStep
    stops: tuple[StopRecord, ...]  # every version that stopped it, newest first (a rollback restarts it)

    def to_json(self, holdout_fraction: float) -> dict[str, object]:
        return {
            "id": self.experiment.id,
            "zone": self.experiment.zone,
            "state": self.state.value,
            "kept": self.kept,
            "ran_under": self.ran_under,
            "stop": self.stop.to_json() if self.stop else None,
            "variants": [v.to_json(holdout_fraction) for v in self.variants],
            "next": self.next.text,
            "command": self.next.command,
            "stops": [s.to_json() for s in self.stops],
        }


def _next(
    state: ExperimentState, kept: str | None, stop: StopRecord | None, restarts: bool, *, may_stop: bool
) -> NextStep:
    precompute = PRECOMPUTE_COMMAND if may_stop else None
    if state is ExperimentState.RUNNING:
        if may_stop:
            return NextStep(
                "Stop it by keeping one variant: run that variant's command in the campaign's folder, then "
                "welcomemat precompute with the campaign's accounts file."
            )
        return NextStep("An admin stops experiments (welcomemat experiment stop), keeping one variant.")
    if state is ExperimentState.STOPPING:
        where = f" in guideline version {stop.record.version}" if stop else ""
        return NextStep(
            f"Stopped{where}, keeping {kept}: the next precompute moves the other personal "
            f"accounts to {kept} (accounts already on it keep their zone sets).",
            precompute,
        )
    if restarts and stop is not None:
        return NextStep(
            f"Its stop (guideline version {stop.record.version}) was rolled back: the experiment runs again "
            "after the next precompute.",
            precompute,
        )
    return NextStep(f"None: every personal account gets {kept}.")


def experiment_rows(
    campaign: Campaign, history: list[GuidelineChange], active: str | None, *, may_stop: bool, by: str | None
) -> tuple[list[ExperimentRow], list[StopRecord]]:
    """The declared experiment's row (none, or one), and the stops of experiments no longer declared.

    `active`: the version Redis says is active; `may_stop`: the reader's role stops experiments
    (commands shown); `by`: who runs the command (`--by`), or None to leave it to the command.
    """
    stops = stop_records(history)
    experiment = campaign.experiment
    if experiment is None:
        return [], stops
    mine = tuple(s for s in stops if s.experiment == experiment.id)
    restarts = False
    kept: str | None = None
    ran_under: str | None = None
    if experiment.stopped is not None:
        state, kept, ran_under = (
            ExperimentState.STOPPED,
            experiment.stopped.keep,
            experiment.stopped.ran_under,
        )
        stop = next((s for s in mine if s.record.version == campaign.guideline_version), None)
        restarts = (
            stop is not None
            and stop.record.state is ActivationState.ROLLED_BACK
            and active is not None
            and active != campaign.guideline_version
        )
    else:
        stop = next((s for s in mine if s.record.version == active), None)
        state = ExperimentState.RUNNING if stop is None else ExperimentState.STOPPING
        if stop is not None:
            kept, ran_under = stop.keep, campaign.guideline_version
    running = state is ExperimentState.RUNNING
    share = Fraction(1, len(experiment.variants))
    variants = tuple(
        VariantRow(
            id=v.id,
            patterns=tuple(sorted(v.patterns)),
            voice=v.voice,
            share=share,
            kept=v.id == kept,
            command=stop_command(experiment.id, v.id, by) if running and may_stop else None,
        )
        for v in experiment.variants
    )
    row = ExperimentRow(
        experiment=experiment,
        state=state,
        kept=kept,
        ran_under=ran_under,
        stop=stop,
        variants=variants,
        next=_next(state, kept, stop, restarts, may_stop=may_stop),
        stops=mine,
    )
    return [row], [s for s in stops if s.experiment != experiment.id]
