"""The guidelines page's Sign off button accepts exactly what `welcomemat guidelines signoff` accepts.

A real campaign folder per risk tier, a real `propose`, then each state a candidate can be in,
reached with the commands where a command reaches it; from one snapshot of the folder and
Redis, the command signs off, and from the same snapshot again, an admin's button does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from starlette.testclient import TestClient

from cli.main import main
from tests.corpora import REPO_ROOT
from tests.server.admin.test_admin_guidelines import ANA, HTML, PAGE, SIGNOFF, csrf_on, stored
from tests.server.admin.test_admin_people import SAME_ORIGIN, TOKEN, Clock, invite, sign_in
from tests.server.conftest import (
    BASE_URL,
    example_inputs,
    publish_config,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.guidelines import ActivationState, GuidelineChange, GuidelineStore
from welcomemat.security.people import Role

VERSION = "2026-12-01"
REPORT = Path("guidelines") / f"{VERSION}.report.json"
RISKS = ("standard", "high")


class Folder:
    """The campaign folder the commands run on, and what restores it and Redis to one moment."""

    def __init__(self, root: Path, client: redis.Redis) -> None:
        self.root, self.client = root, client

    @property
    def campaign(self) -> str:
        return str(self.root / "campaign.yaml")

    @property
    def report(self) -> str:
        return str(self.root / REPORT)

    def snapshot(self, into: Path) -> dict[bytes, bytes]:
        shutil.copytree(self.root, into)
        return {key: self.client.dump(key) for key in self.client.scan_iter(count=1000)}  # type: ignore[misc]

    def restore(self, copy: Path, keys: dict[bytes, bytes]) -> None:
        shutil.rmtree(self.root)
        shutil.copytree(copy, self.root)
        self.client.flushdb()
        for key, value in keys.items():
            self.client.restore(key, 0, value)


def run(*args: str) -> int:
    return main(list(args))


def proposed(tmp_path: Path, client: redis.Redis, risk: str) -> Folder:
    """A fresh Redis holding the published example campaign, and a candidate proposed in a new folder."""
    client.flushdb()
    publish_config(client, *example_inputs())
    root = tmp_path / f"campaign-{risk}"
    shutil.copytree(REPO_ROOT / "examples", root, ignore=shutil.ignore_patterns("accounts.jsonl", "*.py"))
    shutil.copytree(REPO_ROOT / "zones", root / "zones")
    if risk == "high":
        for name in ("campaign.yaml", "campaign.candidate.yaml"):
            path = root / name
            path.write_text(
                path.read_text().replace("holdout_fraction:", "risk_tier: high\nholdout_fraction:", 1)
            )
    folder = Folder(root, client)
    candidate = str(root / "campaign.candidate.yaml")
    assert (
        run("guidelines", "propose", folder.campaign, candidate, "--reason", "launches", "--by", "carl") == 0
    )
    return folder


# -- the states, each reached from the proposed candidate --------------------------------------


def ready(folder: Folder) -> None:
    """Proposed, READY, nobody signed off yet."""


def signed_off(folder: Folder) -> None:
    assert run("guidelines", "signoff", folder.campaign, folder.report, "--by", "dora") == 0


def not_ready(folder: Folder) -> None:
    """The report says NOT READY (as a regression that changed would make it), and so its record."""
    path = Path(folder.report)
    report = json.loads(path.read_text())
    report |= {"recommendation": "NOT READY", "reasons": ["a regression case changed"]}
    path.write_text(json.dumps(report, indent=2))
    store = GuidelineStore(folder.client)
    record = stored(folder.client, VERSION)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    store.save(record.model_copy(update={"recommendation": "NOT READY", "report_sha256": sha}))


def overtaken(folder: Folder) -> None:
    """Another version became active since it was proposed (campaign.yaml holds it)."""
    store = GuidelineStore(folder.client)
    before = stored(folder.client, "2026-11-01")
    newer = GuidelineChange(
        tenant=before.tenant,
        campaign=before.campaign,
        version="2026-11-15",
        hash=before.hash,
        previous_version=before.version,
        reason="a quick fix",
        state=ActivationState.ACTIVE,
        proposed_at=datetime(2026, 11, 15, tzinfo=UTC),
    )
    store.save(newer, before.model_copy(update={"state": ActivationState.SUPERSEDED}), active="2026-11-15")
    path = Path(folder.campaign)
    text = re.sub(
        r'(?m)^guideline_version: "2026-11-01"', 'guideline_version: "2026-11-15"', path.read_text()
    )
    path.write_text(text)


def promoted(folder: Folder) -> None:
    if stored(folder.client, VERSION).approvers_required == 2:
        signed_off(folder)
    assert run("guidelines", "promote", folder.campaign, folder.report, "--by", "ben") == 0


def rolled_back(folder: Folder) -> None:
    promoted(folder)
    assert run("guidelines", "rollback", folder.campaign, "--reason", "too loud", "--by", "ben") == 0


STATES: dict[str, Callable[[Folder], None]] = {
    "ready": ready,
    "signed off": signed_off,
    "NOT READY": not_ready,
    "overtaken": overtaken,
    "promoted": promoted,
    "rolled back": rolled_back,
}
# What both must do: sign off a READY candidate waiting for it, whatever its risk tier; nothing else.
ACCEPTED = {(risk, "ready") for risk in RISKS}


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, redis_url: str, tmp_path: Path) -> None:
    for name in [n for n in os.environ if n.startswith("WELCOMEMAT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("WELCOMEMAT_HOME", str(tmp_path / "home"))


@pytest.fixture
def browser(redis_client: redis.Redis, published: Campaign) -> Iterator[tuple[TestClient, Clock]]:
    clock = Clock(datetime.now(UTC).timestamp())
    app = renderer_app(
        renderer_settings(admin_token=TOKEN),
        redis_client=redis_client,
        clock=clock,
        tuning=tuning_for_tests(watcher_poll_s=0.05),
    )
    with TestClient(app, base_url=BASE_URL) as client:
        yield client, clock


def page_sign_off(client: TestClient, clock: Clock, redis_client: redis.Redis) -> tuple[bool, str]:
    """An admin signs the candidate off with the button's form (the report its record names)."""
    client.cookies.clear()
    sign_in(client, invite(redis_client, clock, ANA, role=Role.ADMIN))
    page = client.get(PAGE, headers=HTML).text
    form = {"csrf": csrf_on(page), "version": VERSION, "report_sha256": stored(redis_client).report_sha256}
    answer = client.post(SIGNOFF, data=form, headers=SAME_ORIGIN, follow_redirects=False)
    assert answer.status_code in (303, 409), answer.text
    return answer.status_code == 303, answer.text


def test_the_button_and_the_command_accept_and_refuse_the_same_sign_offs(
    tmp_path: Path,
    redis_client: redis.Redis,
    cli_env: None,
    browser: tuple[TestClient, Clock],
    capsys: pytest.CaptureFixture[str],
) -> None:
    client, clock = browser
    outcomes: dict[tuple[str, str], tuple[bool, bool]] = {}
    for risk in RISKS:
        folder = proposed(tmp_path, redis_client, risk)
        base_copy, base_keys = tmp_path / f"base-{risk}", folder.snapshot(tmp_path / f"base-{risk}")
        for state, reach in STATES.items():
            folder.restore(base_copy, base_keys)
            reach(folder)
            copy = tmp_path / f"{risk}-{state}"
            keys = folder.snapshot(copy)
            capsys.readouterr()
            by_command = run("guidelines", "signoff", folder.campaign, folder.report, "--by", "erin") == 0
            printed = capsys.readouterr()
            after_command = None
            if by_command:
                assert stored(redis_client).signed_off_by == "erin"
                after_command = stored(redis_client)
            else:
                assert printed.err.strip(), (risk, state)  # a refusal says why
            folder.restore(copy, keys)
            by_button, said = page_sign_off(client, clock, redis_client)
            if by_button:
                after_button = stored(redis_client)
                assert after_command is not None, (risk, state, said)
                assert after_button.signed_off_by == ANA
                # The same record, but for who signed off and when.
                assert after_button.approvers_required == after_command.approvers_required
                assert after_button.state is after_command.state is ActivationState.CANDIDATE
            outcomes[risk, state] = (by_command, by_button)
    assert {case for case, (command, _) in outcomes.items() if command} == ACCEPTED, outcomes
    assert {case for case, (_, button) in outcomes.items() if button} == ACCEPTED, outcomes
    assert len(outcomes) == len(RISKS) * len(STATES)
