"""The experiments page: the campaign's copy experiment, its variants, split and figures, and how it stops."""

from __future__ import annotations

import os
import shlex
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
import redis
from markupsafe import escape
from starlette.testclient import TestClient

from cli.main import main
from tests.corpora import REPO_ROOT
from tests.server.admin.results_data import EXPERIMENT, NOW, publish_results_campaign
from tests.server.admin.test_admin_guidelines import csrf_on
from tests.server.admin.test_admin_people import TOKEN, Clock, invite, sign_in
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    TENANT,
    example_inputs,
    publish_config,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.campaign.experiments import (
    CopyVariant,
    Experiment,
    ExperimentStop,
    assign_variant,
    stop_recommendation,
)
from welcomemat.campaign.guidelines import ActivationState, GuidelineChange, GuidelineStore
from welcomemat.lift.groups import LiftDimension, campaign_grouped_report
from welcomemat.security.people import Role
from welcomemat.zones.contract import load_zone_contracts

PAGE = f"/admin/campaigns/{CAMPAIGN}/experiments"
ANA = "ana@acme.example"
BEARER = {"authorization": f"Bearer {TOKEN}"}
HTML = {"accept": "text/html"}
JSON = {"accept": "application/json"}
STOP = "welcomemat experiment stop campaign.yaml headline-angle --keep"


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW.timestamp())


@pytest.fixture
def browser(redis_client: redis.Redis, clock: Clock) -> Iterator[TestClient]:
    app = renderer_app(
        renderer_settings(admin_token=TOKEN),
        redis_client=redis_client,
        clock=clock,
        tuning=tuning_for_tests(watcher_poll_s=0.05, config_refresh_s=0.05),
    )
    with TestClient(app, base_url=BASE_URL) as client:
        yield client


def variant_row(page: str, variant: str) -> str:
    start = page.index(f'data-admin-variant="{variant}"')
    return page[start : page.index("</tr>", start)]


def commands(page: str) -> list[list[str]]:
    """Every command the page shows, as a shell splits it."""
    found = []
    for chunk in page.split('<code class="wm-admin-command"')[1:]:
        text = chunk[chunk.index(">") + 1 : chunk.index("</code>")]
        found.append(shlex.split(unescape(text)))
    return found


def test_an_admin_sees_the_variants_their_split_and_figures_and_the_exact_stop_command(
    browser: TestClient, redis_client: redis.Redis, clock: Clock
) -> None:
    population = publish_results_campaign(redis_client)
    sign_in(browser, invite(redis_client, clock, ANA, role=Role.ADMIN))
    answer = browser.get(PAGE, headers=HTML)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-security-policy"].startswith("default-src 'none'")
    page = answer.text
    assert 'data-admin-experiment="headline-angle"' in page and "on the zone hero_headline" in page
    assert '<strong class="wm-admin-ok">running</strong>' in page
    # Each variant: what it changes, its share, its figures (the lift code's, by variant).
    per_variant = Counter(assign_variant(CAMPAIGN, EXPERIMENT, a).id for a in population.personal)
    for variant in ("control", "direct"):
        row = variant_row(page, variant)
        assert "1/2 of the personal arm (45% of accounts)" in row
        assert f"<td>{per_variant[variant]}</td>" in row
    assert "the campaign as written" in variant_row(page, "control")
    assert 'data-admin="contrasts"' in page and "direct vs control" in page
    # The exact commands: one per variant, with the campaign path the renderer knows and the
    # person who will run it, each argument as a shell reads it.
    shown = commands(page)
    assert [c for c in shown if c[:3] == ["welcomemat", "experiment", "stop"]] == [
        [*STOP.split(), variant, "--by", ANA] for variant in ("control", "direct")
    ]
    assert "then <code>welcomemat precompute</code>" in page
    # Linked from every page of the campaign, and from the campaigns page.
    assert f'href="{PAGE}"' in browser.get(f"/admin/campaigns/{CAMPAIGN}", headers=HTML).text
    assert f'href="{PAGE}"' in browser.get("/admin/", headers=HTML).text

    # A bearer token (automation) gets the same as JSON, with the figures `report lift --by variant` gives.
    browser.cookies.clear()
    data = browser.get(PAGE, headers={**BEARER, **JSON}).json()
    [experiment] = data["experiments"]
    assert (experiment["id"], experiment["state"], experiment["kept"]) == ("headline-angle", "running", None)
    assert [v["command"] for v in experiment["variants"]] == [f"{STOP} control", f"{STOP} direct"]
    assert [v["share_of_accounts"] for v in experiment["variants"]] == [pytest.approx(0.45)] * 2
    expected = campaign_grouped_report(
        redis_client,
        browser.app.state.renderer.campaigns.cached(CAMPAIGN).view,  # type: ignore[attr-defined]
        LiftDimension.VARIANT,
        now=NOW,
    ).model_dump(mode="json")
    assert experiment["figures"] == expected and data["may_stop"] is True


@pytest.mark.parametrize("role", [Role.VIEWER, Role.REVIEWER])
def test_a_viewer_or_reviewer_sees_the_state_and_who_stops_it_but_no_command(
    browser: TestClient, redis_client: redis.Redis, clock: Clock, role: Role
) -> None:
    publish_results_campaign(redis_client)
    sign_in(browser, invite(redis_client, clock, f"{role}@acme.example", role=role))
    page = browser.get(PAGE, headers=HTML).text
    assert "running" in page and "An admin stops experiments" in page
    assert "--keep" not in page and commands(page) == []
    assert "1/2 of the personal arm" in variant_row(page, "direct")  # the figures are everyone's
    data = browser.get(PAGE, headers=JSON).json()
    assert data["may_stop"] is False and data["experiments"][0]["state"] == "running"
    assert {v["command"] for v in data["experiments"][0]["variants"]} == {None}
    assert data["experiments"][0]["command"] is None


HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_hostile_text_in_an_experiment_and_its_guideline_versions_is_escaped(
    browser: TestClient, redis_client: redis.Redis, clock: Clock
) -> None:
    campaign, zones = example_inputs()
    experiment = Experiment(
        id="a-1.b_c",  # ids are ids (letters, digits, _ . -): a shell reads them as they are
        zone="hero_headline",
        variants=(
            CopyVariant(id="ctl.0"),
            CopyVariant(id="x-2_y", voice=HOSTILE, patterns={"funding": (HOSTILE,)}),
        ),
        stopped=ExperimentStop(keep="x-2_y", ran_under=f'2026-11"><b>{HOSTILE}'),
    )
    publish_config(redis_client, campaign.model_copy(update={"experiment": experiment}), zones)
    store = GuidelineStore(redis_client)
    store.save(
        GuidelineChange(
            tenant=TENANT,
            campaign=CAMPAIGN,
            version=f'old"><i>{HOSTILE}',
            hash="ab" * 32,
            reason=HOSTILE,
            approvers=(HOSTILE,),
            recommendation=stop_recommendation("old-exp", "b"),
            state=ActivationState.SUPERSEDED,
        )
    )
    sign_in(browser, invite(redis_client, clock, ANA, role=Role.ADMIN))
    page = browser.get(PAGE, headers=HTML).text
    assert "<script>" not in page and "<img src=x" not in page and '"><b>' not in page and '"><i>' not in page
    assert str(escape(HOSTILE)) in page  # the voice, the earlier stop's reason and who: as text
    assert f"voice: “{escape(HOSTILE)}”" in variant_row(page, "x-2_y")
    assert "patterns for funding" in variant_row(page, "x-2_y")
    assert f"it ran under guideline version {escape(experiment.stopped.ran_under)}" in page  # type: ignore[union-attr]
    earlier = page[page.index('data-admin="earlier"') :]
    assert "old-exp" in earlier and str(escape(f'old"><i>{HOSTILE}')) in earlier
    assert 'stopped</strong>, keeping <strong data-admin="kept">x-2_y</strong>' in page


def test_an_unknown_campaign_is_404_and_another_tenants_person_meets_this_one_as_unknown(
    browser: TestClient, redis_client: redis.Redis, clock: Clock
) -> None:
    publish_results_campaign(redis_client)
    unknown = browser.get("/admin/campaigns/no-such-campaign/experiments", headers=BEARER)
    assert unknown.status_code == 404 and "no published campaign 'no-such-campaign'" in unescape(unknown.text)
    assert browser.get("/admin/campaigns/bad%20id/experiments", headers=BEARER).status_code == 404
    assert browser.get(f"{PAGE}?x=1", headers=BEARER).status_code == 400
    assert browser.get(PAGE).status_code == 401  # no token, no session
    sign_in(browser, invite(redis_client, clock, "bob@other.example", role=Role.ADMIN, tenant="other"))
    theirs = browser.get(PAGE, headers=HTML)
    assert theirs.status_code == 404 and str(escape(f"no published campaign {CAMPAIGN!r}")) in theirs.text
    assert "headline-angle" not in theirs.text and "control" not in theirs.text


def test_a_campaign_without_an_experiment_says_so(
    browser: TestClient, redis_client: redis.Redis, clock: Clock, published: Campaign
) -> None:
    sign_in(browser, invite(redis_client, clock, ANA, role=Role.ADMIN))
    page = browser.get(PAGE, headers=HTML).text
    assert "This campaign declares no copy experiment" in page and 'data-admin="variants"' not in page
    data = browser.get(PAGE, headers=JSON).json()
    assert (data["experiments"], data["earlier"]) == ([], [])


EXPERIMENT_BLOCK = """
experiment:
  id: headline-angle
  zone: hero_headline
  variants:
    - id: control
    - id: direct
      patterns:
        funding: ["{account} closed a {round} {when}: ramp the sellers fast"]
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_url: str) -> Path:
    """The example campaign with the headline experiment, for the in-process `welcomemat` commands."""
    target = tmp_path / "campaign"
    shutil.copytree(REPO_ROOT / "examples", target, ignore=shutil.ignore_patterns("accounts.jsonl", "*.py"))
    shutil.copytree(REPO_ROOT / "zones", target / "zones")
    campaign = target / "campaign.yaml"
    campaign.write_text(campaign.read_text() + EXPERIMENT_BLOCK)
    for name in [n for n in os.environ if n.startswith("WELCOMEMAT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("WELCOMEMAT_HOME", str(tmp_path / "home"))
    return target


def publish_folder(client: redis.Redis, folder: Path) -> Campaign:
    """What precompute publishes of the folder's campaign.yaml: its config, read by the renderer."""
    zones = dict(load_zone_contracts(folder / "zones"))
    campaign = load_campaign(folder / "campaign.yaml", zones)
    publish_config(client, campaign, zones)
    return campaign


def state_of(browser: TestClient, published: str | None = None) -> dict[str, Any]:
    """The experiment as the page's JSON says; `published`: once the renderer has read the config
    precompute published under that guideline version (its watcher re-reads it on a timer)."""
    deadline = time.monotonic() + 10
    while True:
        data = browser.get(PAGE, headers=JSON).json()
        if published is None or data["published_version"] == published:
            experiments: list[dict[str, Any]] = data["experiments"]
            return experiments[0]
        assert time.monotonic() < deadline, f"the renderer never read the config of {published}"
        time.sleep(0.05)


def test_a_stop_shows_as_not_yet_published_until_precompute_and_a_rollback_restarts_it(
    browser: TestClient, redis_client: redis.Redis, clock: Clock, folder: Path
) -> None:
    publish_folder(redis_client, folder)
    sign_in(browser, invite(redis_client, clock, ANA, role=Role.ADMIN))
    running = state_of(browser)
    assert running["state"] == "running"
    page = browser.get(PAGE, headers=HTML).text
    # The command the page shows for `direct`, run in the campaign's folder.
    [argv] = [c for c in commands(page) if c[-3:] == ["direct", "--by", ANA]]
    cwd = Path.cwd()
    os.chdir(folder)
    try:
        assert main([*argv[1:], "--reason", "direct books more meetings"]) == 0
    finally:
        os.chdir(cwd)

    stopping = state_of(browser)
    assert (stopping["state"], stopping["kept"]) == ("stopped, not yet published", "direct")
    assert (stopping["stop"]["stopped_by"], stopping["stop"]["reason"]) == (ANA, "direct books more meetings")
    assert stopping["command"] == "welcomemat precompute campaign.yaml ACCOUNTS.jsonl"
    assert {v["command"] for v in stopping["variants"]} == {None}  # nothing left to stop
    page = browser.get(PAGE, headers=HTML).text
    assert "the next <code>welcomemat precompute</code>" not in page  # said in words, the command below
    assert "moves the other personal accounts to direct" in unescape(page)

    published = publish_folder(redis_client, folder)  # precompute ran: the stop is published
    assert published.experiment is not None and published.experiment.stopped is not None
    stopped = state_of(browser, published.guideline_version)
    assert (stopped["state"], stopped["kept"], stopped["ran_under"]) == ("stopped", "direct", "2026-11-01")
    assert stopped["next"] == "None: every personal account gets direct." and stopped["command"] is None
    assert "now every personal account" in variant_row(browser.get(PAGE, headers=HTML).text, "direct")

    assert main(["guidelines", "rollback", str(folder / "campaign.yaml"), "--reason", "again"]) == 0
    restarting = state_of(browser)
    assert restarting["state"] == "stopped" and "was rolled back" in restarting["next"]
    assert restarting["command"] == "welcomemat precompute campaign.yaml ACCOUNTS.jsonl"
    republished = publish_folder(redis_client, folder)  # precompute again: running, as before the stop
    again = state_of(browser, republished.guideline_version)
    assert (again["state"], again["kept"]) == ("running", None)
    assert [s["version_state"] for s in again["stops"]] == ["rolled back"]
    assert csrf_on(browser.get(PAGE, headers=HTML).text)  # a page like the others: its Sign out form
