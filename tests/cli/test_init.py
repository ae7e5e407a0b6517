"""`welcomemat init`: a campaign folder that validates, precomputes and explains as written.

The command-line cases run the real console script, with an embedded Redis under a
temporary WELCOMEMAT_HOME (stopped after each test); the calendar cases run the same
pipeline in-process on fixed days, because the folder is dated from the day it is made.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock_time
from pathlib import Path, PurePosixPath
from typing import Any

import httpx
import pytest
import redis
import yaml

from cli.init import write_scaffold
from cli.sample_accounts import sample_accounts, sample_accounts_jsonl
from cli.validate import validate_inputs
from precompute.inputs import load_campaign_inputs
from precompute.policy import TenantPolicy
from precompute.providers.offline import OfflineComposer
from precompute.qa import run_qa
from precompute.run import PrecomputeRun
from tests.corpora import REPO_ROOT
from tests.ports import free_port
from tests.precompute.test_date_phrases import expected_phrase
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.sections import ApprovalPolicy, QaThresholds
from welcomemat.storage.embedded_redis import EmbeddedRedis
from welcomemat.zones.review import show
from welcomemat.zones.store import ZoneSetStore

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
SCAFFOLD = REPO_ROOT / "cli" / "scaffold"
GETTING_STARTED = (REPO_ROOT / "docs" / "getting-started.md").read_text()
FUNDING_HEADLINE = re.compile(
    r"“Congrats on the Series A "
    r"(today|yesterday|on [A-Z][a-z]+day|this month|in [A-Z][a-z]+( \d{4})?|recently), Brightwave”"
)


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """The user's environment, minus anything that would point the CLI at another Redis or key."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("REDIS_URL", "WELCOMEMAT_SECRET", "WELCOMEMAT_PUBLIC_URL", "WELCOMEMAT_ALLOWED_HOSTS")
    }
    env.update({"WELCOMEMAT_HOME": str(home), **extra})
    return env


def run(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [WELCOMEMAT, *args], cwd=cwd, env=cli_env(home), capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """WELCOMEMAT_HOME for the test; the embedded Redis a command started there is stopped after."""
    path = tmp_path / "home"
    yield path
    EmbeddedRedis().stop(path)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A working directory outside the repository (no zones/ or examples/ to fall back on)."""
    path = tmp_path / "work"
    path.mkdir()
    return path


def test_init_then_validate_precompute_and_explain_the_funding_account(home: Path, work: Path) -> None:
    made = run("init", "my-campaign", home=home, cwd=work)
    assert made.returncode == 0, made.stderr
    folder = work / "my-campaign"
    written = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    zone_files = sorted(f"zones/{p.name}" for p in (SCAFFOLD / "zones").glob("*.yaml"))
    theme_files = ["theme/base.html", "theme/site.css"]
    assert written == sorted(["accounts.jsonl", "campaign.yaml", "tenant.yaml", *zone_files, *theme_files])
    for name in ("my-campaign/campaign.yaml", "my-campaign/tenant.yaml", "my-campaign/accounts.jsonl"):
        assert name in made.stdout
    assert "welcomemat precompute my-campaign/campaign.yaml my-campaign/accounts.jsonl" in made.stdout

    validated = run(
        "validate", "my-campaign/campaign.yaml", "my-campaign/accounts.jsonl", home=home, cwd=work
    )
    # Nothing is malformed; the three sample facts made to be refused will not be used (exit 1).
    assert validated.returncode == 1, validated.stderr
    assert "campaign yourco/first-campaign: ok" in validated.stdout
    assert "accounts: 5 read, 0 lines skipped" in validated.stdout and "note:" not in validated.stdout
    reasons = re.findall(
        r"^my-campaign/accounts\.jsonl:(\d+): facts\[(\d)\]\.(\w+): (\w+): ", validated.stderr, re.M
    )
    assert reasons == [
        ("3", "0", "published_at", "stale"),
        ("5", "0", "subject", "wrong_subject"),
        ("5", "1", "source_url", "no_source"),
    ], validated.stderr
    assert "7 checked, 4 used, 3 will not be used" in validated.stdout

    computed = run(
        "precompute", "my-campaign/campaign.yaml", "my-campaign/accounts.jsonl", home=home, cwd=work
    )
    assert computed.returncode == 0, computed.stdout + computed.stderr
    assert "published 5 new versions" in computed.stdout and "0 failed" in computed.stdout
    verdict = re.search(r"QA verdict: (GO WITH FIXES|GO|NO GO) ", computed.stdout)
    assert verdict is not None and verdict.group(1) in ("GO", "GO WITH FIXES"), computed.stdout

    explained = run("explain", "my-campaign/campaign.yaml", "acct_brightwave", home=home, cwd=work)
    assert explained.returncode == 0, explained.stderr
    lines = explained.stdout.splitlines()
    headline = next(i for i, line in enumerate(lines) if line.strip().startswith("hero_headline:"))
    assert lines[headline].strip() == (
        "hero_headline: personal (personal:funding) cites brightwave-series-a, shown on web, email, seller"
    )
    assert FUNDING_HEADLINE.fullmatch(lines[headline + 1].strip()), lines[headline + 1]
    assert "trusted  brightwave-series-a [funding] trusted" in explained.stdout
    assert "https://brightwave.example/press/series-a" in explained.stdout


def test_init_refuses_a_folder_that_is_not_empty_and_writes_nothing(home: Path, work: Path) -> None:
    folder = work / "taken"
    folder.mkdir()
    (folder / "notes.txt").write_text("somebody's work\n")
    refused = run("init", "taken", home=home, cwd=work)
    assert refused.returncode == 2 and refused.stdout == ""
    assert "taken: folder is not empty" in refused.stderr and "nothing was written" in refused.stderr
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    assert (folder / "notes.txt").read_text() == "somebody's work\n"

    (work / "a-file").write_text("x")
    assert run("init", "a-file", home=home, cwd=work).returncode == 2
    assert (work / "a-file").read_text() == "x"
    assert not home.exists(), "init never starts Redis"


def test_init_fills_an_empty_folder(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    written = write_scaffold(folder, date(2027, 6, 1))
    assert (folder / "campaign.yaml") in written and (folder / "accounts.jsonl").is_file()


def test_the_campaigns_own_zones_come_before_the_working_directorys(home: Path, tmp_path: Path) -> None:
    """Run from a clone (which has zones/), a folder made by init is checked against its own contracts."""
    folder = tmp_path / "mine"
    write_scaffold(folder, date(2027, 6, 1))
    contract = folder / "zones" / "hero_headline.yaml"
    contract.write_text(contract.read_text().replace("max_chars: 80", "max_chars: 20"))
    result = run("validate", str(folder / "campaign.yaml"), home=home, cwd=REPO_ROOT)
    assert result.returncode == 2, result.stdout
    assert f"{folder / 'campaign.yaml'}:" in result.stderr and "hero_headline" in result.stderr
    assert "20 characters" in result.stderr


def first_campaign_commands() -> list[str]:
    """The shell lines of the "Your first campaign" section (docs/getting-started.md), in order."""
    section = GETTING_STARTED.split("\n## Your first campaign\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.+?)\n```", section, flags=re.DOTALL)
    return [line for block in blocks for line in block.splitlines()]


def test_the_first_campaign_walkthrough_runs_as_written(home: Path, work: Path, tmp_path: Path) -> None:
    """Every line of the section, verbatim, in one shell that stops at the first failure.

    Three adjustments, all outside the text: `.venv/bin/welcomemat` is this environment's
    console script, `serve` gets a free port (and the links that port) instead of 8000,
    which another process on the machine may hold, and `validate` may exit 1 (as the guide
    says, three sample facts are made to be refused) but nothing else.
    """
    commands = first_campaign_commands()
    assert commands[0] == ".venv/bin/welcomemat init my-campaign"
    assert commands[-1] == ".venv/bin/welcomemat serve"
    bin_dir = work / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "welcomemat").symlink_to(WELCOMEMAT)
    port = free_port()
    lines = [
        f"{c} || [ $? -eq 1 ]" if c.startswith(".venv/bin/welcomemat validate ") else c for c in commands
    ]
    script = "\n".join([*lines[:-1], f"{lines[-1]} --port {port}"])
    env = cli_env(home, WELCOMEMAT_PUBLIC_URL=f"http://127.0.0.1:{port}")
    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("w") as stderr:
        shell = subprocess.Popen(
            ["sh", "-e", "-c", script],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,  # its own process group: the shell and the server stop together
        )
    out: list[str] = []
    try:
        assert shell.stdout is not None
        link_re = re.compile(rf"http://127\.0\.0\.1:{port}/c/first-campaign\?wm=\S+")
        link = None
        for line in shell.stdout:
            out.append(line)
            if link_re.fullmatch(line.strip()):
                link = line.strip()
                break
        assert link is not None, "".join(out) + stderr_path.read_text()
        page = fetch_when_up(link, shell, stderr_path)
    finally:
        os.killpg(shell.pid, signal.SIGTERM)
        shell.wait(timeout=30)
        assert shell.stdout is not None
        shell.stdout.close()
    assert page.status_code == 200
    assert 'data-wm-zone="hero_headline" data-wm-rung="personal">Congrats on the Series A' in page.text
    printed = "".join(out)
    assert "accounts: 5 read, 0 lines skipped" in printed
    assert "hero_headline: personal (personal:funding) cites brightwave-series-a" in printed
    # init prints the same next steps the guide gives.
    steps = printed.split("Next: ", 1)[1].split("and open the printed link", 1)[0].splitlines()[1:]
    guide = [c.replace(".venv/bin/welcomemat", "welcomemat") for c in commands[1:]]
    assert [s.strip() for s in steps] == guide


def fetch_when_up(url: str, shell: subprocess.Popen[str], stderr_path: Path) -> httpx.Response:
    deadline = time.monotonic() + 60
    with httpx.Client(timeout=10) as client:
        while True:
            try:
                return client.get(url)
            except httpx.TransportError:
                assert shell.poll() is None, "serve exited: " + stderr_path.read_text()[-3000:]
                assert time.monotonic() < deadline, "serve did not answer within 60 s"
                time.sleep(0.2)


def comment_text(path: Path) -> str:
    return "\n".join(line.split("#", 1)[1] for line in path.read_text().splitlines() if "#" in line)


@pytest.mark.parametrize(
    ("name", "fields"),
    [
        ("campaign.yaml", [*Campaign.model_fields, *ApprovalPolicy.model_fields, *QaThresholds.model_fields]),
        ("tenant.yaml", list(TenantPolicy.model_fields)),
    ],
)
def test_the_scaffold_comments_explain_every_field(name: str, fields: list[str]) -> None:
    """A field added to the model and not to the scaffold's comments fails here."""
    comments = comment_text(SCAFFOLD / name)
    missing = [f for f in fields if not re.search(rf"\b{re.escape(f)}\b", comments)]
    assert not missing, f"{name}'s comments never mention {missing}"


def test_the_scaffold_campaign_sets_every_top_level_field() -> None:
    data = yaml.safe_load((SCAFFOLD / "campaign.yaml").read_text())
    assert set(data) == set(Campaign.model_fields)


def test_the_scaffold_zone_contracts_are_the_repositorys() -> None:
    ours = {p.name: p.read_bytes() for p in (SCAFFOLD / "zones").glob("*.yaml")}
    repo = {p.name: p.read_bytes() for p in (REPO_ROOT / "zones").glob("*.yaml")}
    assert ours == repo


def test_a_non_editable_install_ships_every_scaffold_file() -> None:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["cli"]
    for path in (p for p in SCAFFOLD.rglob("*") if p.is_file()):
        file = PurePosixPath(path.relative_to(REPO_ROOT / "cli").as_posix())
        assert any(len(file.parts) == len(PurePosixPath(g).parts) and file.match(g) for g in globs), file


def test_the_sample_accounts_are_the_same_for_the_same_day(tmp_path: Path) -> None:
    day = date(2027, 3, 14)
    assert sample_accounts_jsonl(day) == sample_accounts_jsonl(day)
    first, second = tmp_path / "a", tmp_path / "b"
    write_scaffold(first, day)
    write_scaffold(second, day)
    for path in first.rglob("*"):
        if path.is_file():
            assert path.read_bytes() == (second / path.relative_to(first)).read_bytes(), path
    assert sample_accounts_jsonl(day + timedelta(days=1)) != sample_accounts_jsonl(day)


CALENDAR = [
    pytest.param(date(2028, 2, 29), id="leap-day"),
    pytest.param(date(2028, 3, 1), id="after-leap-day"),
    pytest.param(date(2026, 12, 31), id="year-end"),
    pytest.param(date(2027, 1, 1), id="new-year"),
]


@pytest.mark.parametrize("today", CALENDAR)
def test_each_sample_account_shows_its_outcome_on_any_day(
    tmp_path: Path, redis_client: redis.Redis, today: date
) -> None:
    folder = tmp_path / "campaign"
    write_scaffold(folder, today)
    checked = validate_inputs(
        folder / "campaign.yaml", folder / "accounts.jsonl", zones=None, tenant_policy=None
    )
    assert checked.ok and checked.accounts is not None and checked.accounts.skipped == 0, checked.problems
    inputs = load_campaign_inputs(folder / "campaign.yaml", None, None)
    assert inputs.tenant is not None, "tenant.yaml beside the campaign is read"
    campaign, zones, policy = inputs.campaign, inputs.zones, inputs.policy
    now = datetime.combine(today, clock_time(12), tzinfo=UTC)
    report = PrecomputeRun(
        client=redis_client,
        campaign=campaign,
        zones=zones,
        policy=policy,
        provider=OfflineComposer(),
        now=now,
    ).run(folder / "accounts.jsonl")
    assert (report.published, report.failed, report.check_failures, report.pending_review) == (5, [], {}, 0)

    def explained(account: str) -> dict[str, Any]:
        record = show(redis_client, "yourco", "first-campaign", account)
        assert record is not None, account
        return record

    def zones_of(account: str) -> dict[str, dict[str, Any]]:
        return {z["zone_id"]: z for z in explained(account)["zones"]}

    announced = today - timedelta(days=3)
    brightwave = zones_of("acct_brightwave")["hero_headline"]
    assert brightwave["rung"] == "personal" and brightwave["facts"] == ["brightwave-series-a"]
    when = expected_phrase(announced, today, campaign.signal_windows_days["funding"])
    assert brightwave["text"] == f"Congrats on the Series A {when}, Brightwave"
    fernhill = zones_of("acct_fernhill")["hero_headline"]
    assert fernhill["rung"] == "personal" and fernhill["text"] == "Hiring three AEs in Leeds?"
    assert fernhill["facts"] == ["fernhill-ae-1", "fernhill-ae-2", "fernhill-ae-3"]

    reasons = {
        a: {f["id"]: f["reason"] for f in explained(a)["facts"]} for a in ("acct_oakridge", "acct_lumen")
    }
    reasons["acct_quillmate"] = {f["id"]: f["reason"] for f in explained("acct_quillmate")["facts"]}
    assert reasons == {
        "acct_oakridge": {"oakridge-seed": "stale"},
        "acct_lumen": {},
        "acct_quillmate": {"quillmate-1": "wrong_subject", "quillmate-2": "no_source"},
    }
    # What init prints about each account is what it gets.
    # A personal page opens personal; a line naming no specific of its fact (the CTA's label, a
    # generic support line) is segment copy on it, as on every page.
    for sample in sample_accounts(today):
        zones_by_id = zones_of(sample.account_id)
        rungs = {z["rung"] for z in zones_by_id.values()}
        if sample.shows.startswith("personal"):
            assert zones_by_id["hero_headline"]["rung"] == "personal", sample.account_id
            assert rungs <= {"personal", "segment"}, (sample.account_id, rungs)
            generic = [z for z in zones_by_id.values() if z["rung"] == "segment"]
            assert all(z["reason"].startswith("not_specific") for z in generic), (sample.account_id, generic)
        else:
            assert rungs == {"segment"}, (sample.account_id, rungs)
    qa = run_qa(ZoneSetStore(redis_client), campaign, zones, now=now)
    assert qa.verdict == "GO", qa.findings_by_code  # as the guide says: two personal, three segment
