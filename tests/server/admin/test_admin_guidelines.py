"""The guidelines page: every version with its state and next step, and a high-risk candidate's sign-off."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from markupsafe import escape
from starlette.applications import Starlette
from starlette.testclient import TestClient

from cli.main import main
from tests.corpora import REPO_ROOT
from tests.server.admin.test_admin_people import SAME_ORIGIN, TOKEN, Clock, invite, sign_in
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    PUBLIC_URL,
    TENANT,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.guidelines import (
    READY_FOR_PROMOTION,
    ActivationState,
    GuidelineChange,
    GuidelineStore,
    SetValidation,
)
from welcomemat.records.audit import AuditAction, Via, read_entries
from welcomemat.security.people import Role

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
PAGE = f"/admin/campaigns/{CAMPAIGN}/guidelines"
SIGNOFF = f"/admin/campaigns/{CAMPAIGN}/guidelines/signoff"
ANA = "ana@acme.example"
BEARER = {"authorization": f"Bearer {TOKEN}"}
HTML = {"accept": "text/html"}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def change(version: str, state: ActivationState, **fields: object) -> GuidelineChange:
    values: dict[str, object] = {
        "tenant": TENANT,
        "campaign": CAMPAIGN,
        "version": version,
        "hash": sha(version),
        "state": state,
        "proposed_at": NOW - timedelta(days=40),
        **fields,
    }
    return GuidelineChange.model_validate(values)


def candidate(version: str = "2026-12-01", **fields: object) -> GuidelineChange:
    values: dict[str, object] = {
        "previous_version": "2026-11-01",
        "previous_hash": sha("2026-11-01"),
        "reason": "product launches got segment copy only",
        "evidence": ("replay set changes: acct_00015, acct_00072",),
        "approvers_required": 2,
        "validation": (
            SetValidation(
                set="replay",
                accounts=3,
                passed_before=3,
                passed_after=3,
                failure_rate_before=0.1,
                failure_rate_after=0.05,
                changed_zones=3,
                new_blockers=0,
            ),
        ),
        "recommendation": READY_FOR_PROMOTION,
        "report_sha256": sha(f"report of {version}"),
        "rollback_target": "2026-11-01",
        "proposed_at": NOW - timedelta(days=1),
        **fields,
    }
    return change(version, ActivationState.CANDIDATE, **values)


def save_versions(client: redis.Redis, *candidates: GuidelineChange) -> None:
    """2026-10-01 (superseded), 2026-11-01 (active, from 2026-10-01), and the candidates."""
    GuidelineStore(client).save(
        change("2026-10-01", ActivationState.SUPERSEDED, reason="in force when versioned guidelines began"),
        change(
            "2026-11-01",
            ActivationState.ACTIVE,
            previous_version="2026-10-01",
            reason="softer openers",
            rollback_target="2026-10-01",
            approvers=("ben",),
            recommendation=READY_FOR_PROMOTION,
            proposed_at=NOW - timedelta(days=30),
            activated_at=NOW - timedelta(days=29),
        ),
        *candidates,
        active="2026-11-01",
    )


def stored(client: redis.Redis, version: str = "2026-12-01") -> GuidelineChange:
    record = GuidelineStore(client).get(TENANT, CAMPAIGN, version)
    assert record is not None
    return record


def signoffs(client: redis.Redis) -> list[tuple[str, Via]]:
    return [
        (e.actor, e.via) for e in read_entries(client, TENANT) if e.action is AuditAction.GUIDELINES_SIGNOFF
    ]


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW.timestamp())


def _app(client: redis.Redis, clock: Clock) -> Starlette:
    return renderer_app(
        renderer_settings(admin_token=TOKEN),
        redis_client=client,
        clock=clock,
        tuning=tuning_for_tests(watcher_poll_s=0.05),
    )


@pytest.fixture
def browser(redis_client: redis.Redis, published: Campaign, clock: Clock) -> Iterator[TestClient]:
    with TestClient(_app(redis_client, clock), base_url=BASE_URL) as client:
        yield client


def csrf_on(page: str) -> str:
    """The session's CSRF token, as every admin page's Sign out form carries it."""
    marker = 'name="csrf" value="'
    start = page.index(marker) + len(marker)
    return page[start : page.index('"', start)]


def row_of(page: str, version: str) -> str:
    start = page.index(f'data-admin-version="{version}"')
    return page[start : page.index("</tr>", start)]


def test_the_page_shows_every_version_its_state_verdict_approvers_and_next_step(
    browser: TestClient, redis_client: redis.Redis, clock: Clock
) -> None:
    not_ready = candidate(
        "2026-12-02",
        recommendation="NOT READY",
        approvers_required=1,
        reason="livelier funding headline",
        proposed_at=NOW - timedelta(hours=2),
    )
    save_versions(redis_client, candidate(), not_ready)
    sign_in(browser, invite(redis_client, clock, ANA, role=Role.ADMIN))
    page = browser.get(PAGE, headers=HTML)
    assert page.status_code == 200 and page.headers["content-security-policy"].startswith(
        "default-src 'none'"
    )
    text = page.text
    # newest proposal first
    order = [text.index(f'data-admin-version="{v}"') for v in ("2026-12-02", "2026-12-01", "2026-11-01")]
    assert order == sorted(order)
    ready = row_of(text, "2026-12-01")
    assert "candidate" in ready and "READY</strong>" in ready and "2 approvers needed" in ready
    assert "product launches got segment copy only" in ready and "acct_00015" in ready
    assert "replay (3): passed 3 → 3, check failures 10.0% → 5.0%" in ready
    assert "welcomemat guidelines signoff campaign.yaml guidelines/2026-12-01.report.json --by NAME" in ready
    assert (
        'action="/admin/campaigns/q4-pipeline/guidelines/signoff"' in ready and "Sign off 2026-12-01" in ready
    )
    blocked = row_of(text, "2026-12-02")
    assert "NOT READY" in blocked and "propose it again" in blocked and "Sign off" not in blocked
    active = row_of(text, "2026-11-01")
    assert "active" in active and "approved by ben" in active
    assert "welcomemat guidelines rollback campaign.yaml --reason TEXT --by NAME" in active
    assert "superseded" in row_of(text, "2026-10-01")
    assert "which this renderer cannot reach" in text
    # linked from every page of the campaign, and from the campaigns page
    assert f'href="{PAGE}"' in browser.get(f"/admin/campaigns/{CAMPAIGN}", headers=HTML).text
    assert f'href="{PAGE}"' in browser.get("/admin/", headers=HTML).text
    # The same as JSON for a script.
    browser.cookies.clear()
    as_json = browser.get(PAGE, headers={**BEARER, "accept": "application/json"}).json()
    assert as_json["active"] == "2026-11-01" and as_json["published"] == "2026-11-01"
    by_version = {v["version"]: v for v in as_json["versions"]}
    assert by_version["2026-12-01"]["needs_sign_off"] is True
    assert by_version["2026-12-02"]["verdict"] == "NOT READY"
    assert by_version["2026-12-01"]["command"].startswith("welcomemat guidelines signoff")


def test_an_admin_signs_off_with_the_button_and_the_audit_log_names_them(
    browser: TestClient, redis_client: redis.Redis, clock: Clock
) -> None:
    save_versions(redis_client, candidate())
    sign_in(browser, invite(redis_client, clock, ANA, role=Role.ADMIN))
    page = browser.get(PAGE, headers=HTML).text
    form = {
        "csrf": csrf_on(page),
        "version": "2026-12-01",
        "report_sha256": stored(redis_client).report_sha256,
    }
    answer = browser.post(SIGNOFF, data=form, headers=SAME_ORIGIN, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == f"{PUBLIC_URL}{PAGE}?signed_off=2026-12-01"
    done = browser.get(f"{PAGE}?signed_off=2026-12-01", headers=HTML).text
    assert f"Signed off 2026-12-01: its promotion is next, by someone other than {ANA}." in done
    row = row_of(done, "2026-12-01")
    assert f"signed off by {ANA}" in row and "Sign off 2026-12-01" not in row
    assert f"Promotion, by someone other than {ANA}" in row
    assert "welcomemat guidelines promote campaign.yaml guidelines/2026-12-01.report.json --by NAME" in row
    record = stored(redis_client)
    assert record.signed_off_by == ANA and record.signed_off_at == NOW
    assert record.state is ActivationState.CANDIDATE  # promotion is the command's, on disk
    assert signoffs(redis_client) == [(ANA, Via.HTTP)]
    again = browser.post(SIGNOFF, data=form, headers=SAME_ORIGIN)
    assert again.status_code == 409 and f"signed off by {ANA}" in again.text
    assert again.headers["content-type"].startswith("text/html")
    assert signoffs(redis_client) == [(ANA, Via.HTTP)]


def test_a_viewer_sees_the_page_but_the_sign_off_is_403(
    browser: TestClient, redis_client: redis.Redis, clock: Clock
) -> None:
    save_versions(redis_client, candidate())
    for role in (Role.VIEWER, Role.REVIEWER):
        sign_in(browser, invite(redis_client, clock, f"{role}@acme.example", role=role))
        page = browser.get(PAGE, headers=HTML)
        assert page.status_code == 200 and "2026-12-01" in page.text
        assert "Sign off 2026-12-01" not in page.text and "shown to a signed-in admin" in page.text
        form = {
            "csrf": csrf_on(page.text),
            "version": "2026-12-01",
            "report_sha256": sha("report of 2026-12-01"),
        }
        refused = browser.post(SIGNOFF, data=form, headers=SAME_ORIGIN)
        assert refused.status_code == 403 and f"this needs {Role.ADMIN}" in refused.text, role
    assert stored(redis_client).signed_off_by is None and signoffs(redis_client) == []


def test_another_tenants_person_meets_the_campaign_as_unknown(
    browser: TestClient, redis_client: redis.Redis, clock: Clock
) -> None:
    save_versions(redis_client, candidate())
    sign_in(browser, invite(redis_client, clock, "bob@other.example", role=Role.ADMIN, tenant="other"))
    page = browser.get(PAGE, headers=HTML)
    assert page.status_code == 404 and escape(f"no published campaign {CAMPAIGN!r}") in page.text
    assert "2026-12-01" not in page.text
    form = {"csrf": csrf_on(browser.get("/admin", headers=HTML).text), "version": "2026-12-01"}
    form["report_sha256"] = sha("report of 2026-12-01")
    assert browser.post(SIGNOFF, data=form, headers=SAME_ORIGIN).status_code == 404
    assert stored(redis_client).signed_off_by is None and signoffs(redis_client) == []


def test_hostile_text_in_a_version_is_escaped(
    browser: TestClient, redis_client: redis.Redis, clock: Clock
) -> None:
    hostile = '<script>alert("why")</script><img src=x onerror=alert(1)>'
    version = '2026-12"><b>x'
    save_versions(redis_client, candidate(version, reason=hostile, evidence=(hostile,)))
    sign_in(browser, invite(redis_client, clock, ANA, role=Role.ADMIN))
    page = browser.get(PAGE, headers=HTML).text
    assert "<script>alert" not in page and "<img src=x" not in page and '"><b>x' not in page
    assert page.count(escape(hostile)) == 2  # why and evidence, as text
    assert f'name="version" value="{escape(version)}"' in page
    # The shell command quotes the version's path.
    assert escape("guidelines/'2026-12\"><b>x.report.json'") not in page
    assert escape("'guidelines/2026-12\"><b>x.report.json'") in page


def test_a_sign_off_is_refused_unless_a_ready_candidate_waits_for_it(
    browser: TestClient, redis_client: redis.Redis
) -> None:
    save_versions(
        redis_client,
        candidate(),
        candidate("2026-12-02", approvers_required=1),
        candidate("2026-12-03", recommendation="NOT READY"),
        candidate("2026-12-04", previous_version="2026-10-01"),
    )

    def post(version: str, report: str | None = None) -> tuple[int, str]:
        body = {"version": version, "report_sha256": report or sha(f"report of {version}")}
        answer = browser.post(SIGNOFF, json=body, headers=BEARER)
        return answer.status_code, answer.text

    assert post("2026-12-01", sha("an older report"))[0] == 409
    refusals = {v: post(v) for v in ("2026-12-03", "2026-12-04", "2026-11-01")}
    assert {status for status, _ in refusals.values()} == {409}
    assert "NOT READY" in refusals["2026-12-03"][1]
    assert "2026-11-01 is active now" in refusals["2026-12-04"][1]
    assert "is active, not a candidate" in refusals["2026-11-01"][1]
    assert post("2099-01-01")[0] == 404
    assert browser.post(SIGNOFF, json={"version": "2026-12-01"}, headers=BEARER).status_code == 400
    assert signoffs(redis_client) == []
    status, text = post("2026-12-01")
    assert status == 200, text
    assert signoffs(redis_client) == [("admin", Via.HTTP)] and stored(redis_client).signed_off_by == "admin"
    # A standard-risk candidate may be signed off too, as the command allows: anyone promotes it then.
    status, text = post("2026-12-02")
    assert status == 200, text
    assert "promotion next (risk_tier: standard" in text
    assert stored(redis_client, "2026-12-02").signed_off_by == "admin"


def test_a_standard_risk_candidate_has_an_optional_sign_off_button(
    browser: TestClient, redis_client: redis.Redis, clock: Clock
) -> None:
    save_versions(redis_client, candidate("2026-12-02", approvers_required=1))
    sign_in(browser, invite(redis_client, clock, ANA, role=Role.ADMIN))
    page = browser.get(PAGE, headers=HTML).text
    row = row_of(page, "2026-12-02")
    assert "Sign off 2026-12-02 (optional)" in row and "a sign-off is optional" in row
    form = {"csrf": csrf_on(page), "version": "2026-12-02", "report_sha256": sha("report of 2026-12-02")}
    answer = browser.post(SIGNOFF, data=form, headers=SAME_ORIGIN, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    done = browser.get(answer.headers["location"].removeprefix(PUBLIC_URL), headers=HTML).text
    assert "Signed off 2026-12-02: its promotion is next, by anyone (one approver)." in done
    assert signoffs(redis_client) == [(ANA, Via.HTTP)]


def test_the_cli_refuses_the_web_signer_as_promoter_and_promotes_by_someone_else(
    browser: TestClient,
    redis_client: redis.Redis,
    redis_url: str,
    clock: Clock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = tmp_path / "campaign"
    shutil.copytree(REPO_ROOT / "examples", folder, ignore=shutil.ignore_patterns("accounts.jsonl", "*.py"))
    shutil.copytree(REPO_ROOT / "zones", folder / "zones")
    for name in ("campaign.yaml", "campaign.candidate.yaml"):
        path = folder / name
        path.write_text(
            path.read_text().replace("holdout_fraction:", "risk_tier: high\nholdout_fraction:", 1)
        )
    for name in [n for n in os.environ if n.startswith("WELCOMEMAT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("WELCOMEMAT_HOME", str(tmp_path / "home"))
    campaign, report = str(folder / "campaign.yaml"), str(folder / "guidelines" / "2026-12-01.report.json")
    proposed = main(
        [
            "guidelines",
            "propose",
            campaign,
            str(folder / "campaign.candidate.yaml"),
            "--reason",
            "launches",
            "--by",
            "carl",
        ]
    )
    assert proposed == 0, capsys.readouterr()

    sign_in(browser, invite(redis_client, clock, ANA, role=Role.ADMIN))
    page = browser.get(PAGE, headers=HTML).text
    record = stored(redis_client)
    assert record.report_sha256 == hashlib.sha256(Path(report).read_bytes()).hexdigest()
    form = {"csrf": csrf_on(page), "version": "2026-12-01", "report_sha256": record.report_sha256}
    assert browser.post(SIGNOFF, data=form, headers=SAME_ORIGIN, follow_redirects=False).status_code == 303

    capsys.readouterr()
    assert main(["guidelines", "promote", campaign, report, "--by", ANA]) == 2
    assert "the promotion must be by someone else" in capsys.readouterr().err
    assert main(["guidelines", "promote", campaign, report, "--by", "ben"]) == 0
    assert f"signed off by {ANA}, promoted by ben" in capsys.readouterr().out
    active = stored(redis_client)
    assert active.state is ActivationState.ACTIVE and active.approvers == (ANA, "ben")
    guidelines = [e for e in read_entries(redis_client, TENANT) if e.action.value.startswith("guidelines")]
    assert [(e.action, e.actor) for e in guidelines] == [
        (AuditAction.GUIDELINES_PROPOSE, "carl"),
        (AuditAction.GUIDELINES_SIGNOFF, ANA),
        (AuditAction.GUIDELINES_PROMOTE, "ben"),
    ]
