"""`welcomemat experiment stop CAMPAIGN EXP --keep VARIANT`: end a copy experiment, keep the winner.

The stop is a guideline change like any other (`cli.guideline_versions`): campaign.yaml gets
`experiment.stopped: {keep, ran_under}` and a new `guideline_version`; the previous file is
kept as `guidelines/<previous>.yaml` (so `welcomemat guidelines rollback` restarts the
experiment), the new one as `guidelines/<new>.yaml`; Redis gets the new version's change
record (previous version and hash, reason, the operator as approver) as the active one, the
previous record superseded; the audit log gets an `experiment_stop` entry. The edit is two
lines of the file (comments and layout kept), and the result is loaded and checked like any
campaign.yaml before anything is written.

What visitors see (`welcomemat.campaign.experiments`): accounts the hash gave the kept variant keep
their zone sets as they are (same input hash: no new version, no model call); personal
accounts on a stopped variant are rewritten with the kept variant at the next precompute, and
no account is ever assigned a stopped variant again. Until that run, they are served the zone
set they had, so a returning visitor sees one change, not two.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from cli.guideline_versions import (
    ARCHIVE_FOLDER,
    active_record,
    audit_change,
    campaign_client,
    campaign_file,
    check_active,
    write_atomically,
)
from precompute.inputs import load_campaign_inputs
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.experiments import Experiment, stop_recommendation
from welcomemat.campaign.guidelines import ActivationState, GuidelineChange, GuidelineStore, guideline_hash
from welcomemat.errors import InputError
from welcomemat.records.audit import AuditAction, Auditor, check_reason
from welcomemat.yamlfile import line_of_field

__all__ = ["VERSION_PATTERN", "run_stop", "stopped_text"]

_VERSION_LINE = re.compile(r"^(?P<head>\s*guideline_version\s*:\s*)(?P<value>[^#\n]*?)(?P<tail>\s*(#.*)?)$")
_KEY_LINE = re.compile(r"^(?P<indent>\s*)(?:-\s+)?id\s*:")
# A version label this command writes: it goes into YAML, file names and the audit log as is.
VERSION_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")


def _experiment(campaign: Campaign, path: Path, experiment_id: str, keep: str) -> Experiment:
    experiment = campaign.experiment
    if experiment is None or experiment.id != experiment_id:
        running = f"it runs {experiment.id!r}" if experiment is not None else "it declares none"
        raise InputError(
            f"campaign {campaign.campaign!r} has no experiment {experiment_id!r} ({running})",
            file=path,
            line=line_of_field(path, ("experiment", "id")),
            field="EXPERIMENT",
        )
    if experiment.stopped is not None:
        raise InputError(
            f"experiment {experiment_id!r} was stopped already, keeping {experiment.stopped.keep!r}",
            file=path,
            line=line_of_field(path, ("experiment", "stopped")),
            field="experiment.stopped",
        )
    if experiment.variant(keep) is None:
        raise InputError(
            f"experiment {experiment_id!r} has no variant {keep!r}; its variants are "
            f"{', '.join(v.id for v in experiment.variants)}",
            file=path,
            field="--keep",
        )
    return experiment


def stopped_text(text: str, path: Path, *, version: str, keep: str, ran_under: str) -> str:
    """campaign.yaml's text with the new `guideline_version` and `experiment.stopped`, all else as it was."""
    lines = text.splitlines(keepends=True)
    version_at, id_at = line_of_field(path, ("guideline_version",)), line_of_field(path, ("experiment", "id"))
    version_match = _VERSION_LINE.match(lines[version_at - 1].rstrip("\n")) if version_at else None
    id_match = _KEY_LINE.match(lines[id_at - 1]) if id_at else None
    if version_at is None or id_at is None or version_match is None or id_match is None:
        raise InputError(
            "cannot edit this campaign.yaml's layout in place: write `experiment.stopped` and the new "
            "`guideline_version` by hand and promote it with `welcomemat guidelines`",
            file=path,
            field="experiment",
        )
    ending = "\n" if lines[version_at - 1].endswith("\n") else ""
    lines[version_at - 1] = (
        f"{version_match['head']}{json.dumps(version)}{version_match['tail']}{ending}"  # JSON is YAML
    )
    stop = json.dumps({"keep": keep, "ran_under": ran_under})
    indent = id_match["indent"] + ("  " if lines[id_at - 1].lstrip().startswith("- ") else "")
    lines.insert(id_at, f"{indent}stopped: {stop}  # welcomemat experiment stop\n")
    return "".join(lines)


def run_stop(
    campaign_arg: str,
    experiment_id: str,
    *,
    keep: str,
    version: str | None,
    reason: str | None,
    auditor: Auditor,
) -> int:
    """Stop the experiment, keep `keep`: a new active guideline version, audit-logged."""
    recorded_reason = check_reason(reason, AuditAction.EXPERIMENT_STOP, source="--reason")
    campaign_path = campaign_file(campaign_arg)
    active = load_campaign_inputs(campaign_path, None, None)
    campaign = active.campaign
    experiment = _experiment(campaign, campaign_path, experiment_id, keep)
    new_version = version or f"{campaign.guideline_version}+{experiment.id}-{keep}"
    if not VERSION_PATTERN.match(new_version):
        raise InputError(
            f"guideline version {new_version!r}: use 1-64 letters, digits and _ . + - "
            "(a letter or digit first)",
            field="--version",
        )
    if new_version == campaign.guideline_version:
        raise InputError(f"the new guideline version must differ from {new_version!r}", field="--version")
    old_bytes = campaign_path.read_bytes()
    new_text = stopped_text(
        old_bytes.decode(),
        campaign_path,
        version=new_version,
        keep=keep,
        ran_under=campaign.guideline_version,
    )
    # Checked as the file precompute will read, beside it (the same zones folder and tenant file).
    draft = campaign_path.with_name(f".{campaign_path.name}.stop.tmp")
    write_atomically(draft, new_text.encode())
    try:
        stopped = load_campaign_inputs(draft, None, active.tenant_file).campaign
    finally:
        draft.unlink(missing_ok=True)
    if (
        stopped.experiment is None
        or stopped.experiment.stopped is None
        or stopped.guideline_version != new_version
    ):
        raise InputError("the edited campaign.yaml does not read back as stopped", file=campaign_path)
    now = datetime.now(UTC)
    client = campaign_client(campaign)
    try:
        store = GuidelineStore(client)
        check_active(store, campaign, campaign_path)
        if store.get(campaign.tenant, campaign.campaign, new_version) is not None:
            raise InputError(
                f"guideline version {new_version!r} exists already: choose another", field="--version"
            )
        previous = active_record(store, campaign, now)
        record = GuidelineChange(
            tenant=campaign.tenant,
            campaign=campaign.campaign,
            version=new_version,
            hash=guideline_hash(stopped),
            previous_version=previous.version,
            previous_hash=previous.hash,
            reason=recorded_reason or f"experiment {experiment.id} stopped; {keep} kept",
            approvers=(auditor.actor,),
            recommendation=stop_recommendation(experiment.id, keep),
            state=ActivationState.ACTIVE,
            rollback_target=previous.version,
            proposed_at=now,
            activated_at=now,
        )
        archive = campaign_path.parent / ARCHIVE_FOLDER
        write_atomically(archive / f"{previous.version}.yaml", old_bytes)
        write_atomically(archive / f"{new_version}.yaml", new_text.encode())
        write_atomically(campaign_path, new_text.encode())
        store.save(
            record, previous.model_copy(update={"state": ActivationState.SUPERSEDED}), active=new_version
        )
        detail = f"{experiment.id}: {keep} kept; guideline version {previous.version} -> {new_version}"
        where = (campaign.tenant, campaign.campaign)
        audit_change(client, auditor, AuditAction.EXPERIMENT_STOP, where, detail, recorded_reason)
    finally:
        client.close()
    print(
        f"experiment {campaign.tenant}/{campaign.campaign} {detail}. Accounts already on {keep} keep "
        f"their zone sets; run `welcomemat precompute` to move the others to it "
        f"(`welcomemat guidelines rollback` restarts the experiment)."
    )
    return 0
