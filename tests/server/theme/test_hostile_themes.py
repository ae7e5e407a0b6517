"""Hostile themes (`hostile_themes.jsonl`, issue 25): each is refused by `welcomemat validate`
with the file and line, or, when only a personal page shows it, caught when precompute renders
that account's page; good themes still pass.

Each corpus line is a snippet put on its own line of the example theme's base.html, with why it
is hostile. `stage` says who catches it: `validate` (the template read as a browser reads it)
or `precompute` (the template's text shows nothing; the render of a personal page, whose
headline says "Congrats", does). `personal`: only a personal page renders it, so the
rendered-page check must catch it there too, even with the template check out of the way.
`line: false`: only a render shows it, so the refusal names base.html but no line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from cli.init import write_scaffold
from precompute.inputs import load_campaign_inputs
from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.queue import enqueue_run
from precompute.report import RunReport
from precompute.run import PrecomputeRun
from precompute.worker import Worker, WorkerOptions
from server.render import THEMED_PAGE_CHECK_EVERY, account_page_check, check_campaign_theme
from server.theme.output import MAX_THEMED_PAGE_BYTES, ThemeOutputTooLarge, render_bounded
from server.theme.templates import theme_environment
from tests.corpora import REPO_ROOT
from tests.precompute.test_openai_provider import example_rows
from tests.precompute.test_pipeline import NOW as PIPELINE_NOW
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    PERSONAL_ACCOUNT,
    example_inputs,
    link_token,
    make_zone_set,
    publish_config,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from tests.server.pagetools import zones
from tests.test_theme import ZONES, inject, themed_campaign
from welcomemat.errors import ContractError
from welcomemat.records.accounts import read_accounts
from welcomemat.theme.folder import Theme, load_theme
from welcomemat.zones.store import ZoneSetStore

CORPUS = Path(__file__).with_name("hostile_themes.jsonl")
CASES: list[dict[str, Any]] = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
BY_STAGE = {stage: [c for c in CASES if c["stage"] == stage] for stage in ("validate", "precompute")}
PERSONAL = [c for c in CASES if c["personal"]]
NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)
FOOTER = "onboarding that gets new sellers to quota sooner"  # examples/theme/base.html
CONGRATS = {"hero_headline": "Congrats on the Series A, Dymaxa"}  # a personal headline
PLAIN = {"hero_headline": "Hello there, Dymaxa"}


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [c["name"] for c in cases]


def hostile(tmp_path: Path, snippet: str) -> tuple[Path, Path, int]:
    """(campaign.yaml, theme folder, line of the snippet) for the example theme with `snippet`."""
    campaign, theme = themed_campaign(tmp_path)
    return campaign, theme, inject(theme, snippet)


def test_the_corpus_is_large_and_explained() -> None:
    assert len(CASES) >= 60 and len({c["name"] for c in CASES}) == len(CASES)
    assert all(c["why"] and c["snippet"] for c in CASES)
    issue = [
        '<!--><meta http-equiv="refresh" content="0;url=http://other.example/">-->',
        '<meta name="referrer" content="unsafe-url">',
    ]
    assert all(any(c["snippet"] == text for c in CASES) for text in issue)


@pytest.mark.parametrize("case", BY_STAGE["validate"], ids=_ids(BY_STAGE["validate"]))
def test_validate_refuses_the_hostile_theme_naming_base_html_and_line(
    tmp_path: Path, case: dict[str, Any]
) -> None:
    campaign, theme, line = hostile(tmp_path, case["snippet"])
    with pytest.raises(ContractError) as caught:
        load_campaign_inputs(campaign, ZONES, None, check_campaign_theme)
    (problem,) = getattr(caught.value, "problems", (caught.value,))
    assert problem.file == str(theme / "base.html"), str(problem)
    if case.get("line", True):  # else only a render shows it: no line of the template to name
        assert problem.line in range(line, line + case["snippet"].count("\n") + 1), str(problem)


@pytest.mark.parametrize("case", BY_STAGE["precompute"], ids=_ids(BY_STAGE["precompute"]))
def test_a_trick_only_a_personal_page_shows_is_caught_on_that_page(
    tmp_path: Path, case: dict[str, Any]
) -> None:
    """Validate renders the default copy, which the trick leaves alone; precompute's check of the
    account's own page (headline "Congrats …") catches it, and leaves other accounts alone."""
    campaign_path, theme_dir, _ = hostile(tmp_path, case["snippet"])
    load_campaign_inputs(campaign_path, ZONES, None, check_campaign_theme)  # validate passes it
    campaign, zone_contracts = example_inputs()
    digest, check = account_page_check(load_theme(theme_dir), campaign, zone_contracts)
    assert check(make_zone_set(texts=CONGRATS), NOW) is not None
    assert check(make_zone_set(texts=PLAIN), NOW) is None


@pytest.mark.parametrize("case", PERSONAL, ids=_ids(PERSONAL))
def test_the_rendered_page_check_alone_catches_every_personal_trick(
    tmp_path: Path, case: dict[str, Any]
) -> None:
    """Even without the template check (a config written by hand): the personal page's render is read."""
    _, theme_dir, _ = hostile(tmp_path, case["snippet"])
    campaign, zone_contracts = example_inputs()
    _, check = account_page_check(load_theme(theme_dir), campaign, zone_contracts)
    why = check(make_zone_set(texts=CONGRATS), NOW)
    assert why is not None and "personal" in why


def test_validate_exits_2_on_the_issues_refresh_and_referrer_themes(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "WELCOMEMAT_HOME": str(tmp_path / "home"),
        "REDIS_URL": "redis://127.0.0.1:9/0",
    }
    for name in ("issue-empty-comment-refresh", "issue-referrer-unsafe-url"):
        (case,) = [c for c in CASES if c["name"] == name]
        campaign, theme, line = hostile(tmp_path / name, case["snippet"])
        result = subprocess.run(
            [sys.executable, "-m", "cli.main", "validate", str(campaign), "--zones", ZONES],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            env=env,
            check=False,
        )
        assert result.returncode == 2, result.stderr
        assert f"{theme}/base.html:{line}: " in result.stderr


# -- good themes still pass --------------------------------------------------------------------

GOOD_SNIPPETS = [
    '<nav class="x" aria-label="Main"><ul><li><a href="#top">Top</a></li></ul></nav>',
    '<a href="https://www.acmerevenue.example/" target="_blank" rel="noopener">Acme</a>',
    '<table><caption>Plans</caption><tr><th scope="col">A</th></tr><tr><td colspan="1">1</td></tr></table>',
    "<p>{% if arm == 'personal' %}Welcome back{% else %}Welcome{% endif %}: {{ title|upper|truncate(30) }}"
    "</p>",
    "<p title=\"{{ title|replace('a', 'b') }}\" data-role=\"intro\"><small>&copy; 2026 Acme</small></p>",
]


@pytest.mark.parametrize("snippet", GOOD_SNIPPETS)
def test_good_themes_pass_validate_and_every_page(tmp_path: Path, snippet: str) -> None:
    campaign_path, theme_dir, _ = hostile(tmp_path, snippet)
    load_campaign_inputs(campaign_path, ZONES, None, check_campaign_theme)
    campaign, zone_contracts = example_inputs()
    _, check = account_page_check(load_theme(theme_dir), campaign, zone_contracts)
    assert check(make_zone_set(texts=CONGRATS), NOW) is None


def test_the_example_and_scaffold_themes_pass(tmp_path: Path) -> None:
    """The example campaign's theme, and the one `welcomemat init` writes, with their campaigns."""
    write_scaffold(tmp_path / "init", NOW.date())
    for campaign_path in (REPO_ROOT / "examples" / "campaign.yaml", tmp_path / "init" / "campaign.yaml"):
        inputs = load_campaign_inputs(campaign_path, None, None, check_campaign_theme)
        assert inputs.theme is not None
        _, check = account_page_check(inputs.theme, inputs.campaign, inputs.zones)
        assert check(make_zone_set(texts=CONGRATS, campaign=inputs.campaign.campaign), NOW) is None


# -- the renderer: size bound, the theme_refused mark, the serve-time sample ------------------------


def _themed_client(redis_client: redis.Redis, theme: Theme) -> TestClient:
    campaign, zone_contracts = example_inputs()
    publish_config(redis_client, campaign, zone_contracts, theme)
    tuning = tuning_for_tests(watcher_poll_s=0.02, config_refresh_s=0.05)
    return TestClient(
        renderer_app(renderer_settings(), redis_client=redis_client, tuning=tuning), base_url=BASE_URL
    )


def _theme_of(snippet: str) -> Theme:
    good = load_theme(REPO_ROOT / "examples" / "theme")
    return Theme.of(
        good.base_html.replace('<main class="wm-main">', snippet + '\n<main class="wm-main">'), good.files
    )


def _fallbacks(client: TestClient) -> dict[str, float]:
    out = {}
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("welcomemat_theme_page_fallbacks_total{"):
            reason = line.split('reason="', 1)[1].split('"', 1)[0]
            out[reason] = float(line.rsplit(" ", 1)[1])
    return out


def test_the_replace_chain_from_the_issue_serves_a_bounded_page_in_the_built_in_frame(
    redis_client: redis.Redis,
) -> None:
    """A stored theme (no precompute check) whose chain grows a personal title: the filter stops at
    the limit before building the string, the page is served in the built-in frame, counted."""
    (case,) = [c for c in CASES if c["name"] == "personal-replace-chain"]
    ZoneSetStore(redis_client).publish(
        make_zone_set(texts={"hero_headline": "Congrats, a big day at Dymaxa"})
    )
    with _themed_client(redis_client, _theme_of(case["snippet"])) as client:
        page = client.get(f"/c/{CAMPAIGN}?wm={link_token()}")
        assert page.status_code == 200
        assert len(page.content) <= MAX_THEMED_PAGE_BYTES
        assert FOOTER not in page.text and zones(page.text)["hero_headline"].rung == "personal"
        assert _fallbacks(client) == {"size": 1.0}
        client.cookies.clear()
        anonymous = client.get(f"/c/{CAMPAIGN}")  # the default copy keeps the theme
        assert FOOTER in anonymous.text, _fallbacks(client)


def test_an_account_precompute_refused_gets_the_built_in_frame(redis_client: redis.Redis) -> None:
    (case,) = [c for c in CASES if c["name"] == "personal-handler-by-prefix"]
    theme = _theme_of(case["snippet"])
    campaign, zone_contracts = example_inputs()
    digest, check = account_page_check(theme, campaign, zone_contracts)
    zone_set = make_zone_set()
    assert check(zone_set, NOW) is not None
    ZoneSetStore(redis_client).publish(zone_set.model_copy(update={"theme_refused": digest}))
    with _themed_client(redis_client, theme) as client:
        page = client.get(f"/c/{CAMPAIGN}?wm={link_token()}")
        assert page.status_code == 200 and FOOTER not in page.text and "onclick" not in page.text
        assert zones(page.text)["hero_headline"].text == "Congrats on the Series A, Dymaxa"
        assert _fallbacks(client) == {"precompute": 1.0}


def test_serve_time_sample_catches_a_page_precompute_never_saw(redis_client: redis.Redis) -> None:
    """The first themed render (and one in THEMED_PAGE_CHECK_EVERY after it) is read by the check."""
    assert THEMED_PAGE_CHECK_EVERY > 1
    (case,) = [c for c in CASES if c["name"] == "personal-handler-by-prefix"]
    ZoneSetStore(redis_client).publish(make_zone_set())  # no theme_refused: published before the theme
    with _themed_client(redis_client, _theme_of(case["snippet"])) as client:
        page = client.get(f"/c/{CAMPAIGN}?wm={link_token(PERSONAL_ACCOUNT)}")
        assert page.status_code == 200 and FOOTER not in page.text and " onclick=" not in page.text
        assert _fallbacks(client) == {"check": 1.0}


# -- precompute: every account's own page ----------------------------------------------------------


def test_precompute_shows_only_the_accounts_whose_page_fails_in_the_built_in_frame(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    """One bad page degrades only itself: the Congrats accounts are published with theme_refused and
    reported; the others keep the theme. A rerun writes nothing new; a fixed theme lifts the mark."""
    (case,) = [c for c in CASES if c["name"] == "personal-handler-by-prefix"]
    hostile_theme = _theme_of(case["snippet"])
    campaign, zone_contracts = example_inputs()
    accounts = tmp_path / "accounts.jsonl"
    rows = example_rows(PIPELINE_NOW.date())
    accounts.write_text("".join(json.dumps(row) + "\n" for row in rows))

    def run(theme: Theme) -> RunReport:
        return PrecomputeRun(
            client=redis_client,
            campaign=campaign,
            zones=zone_contracts,
            policy=build_policy(campaign, None),
            provider=OfflineComposer(),
            now=PIPELINE_NOW,
            theme=theme,
            page_check=account_page_check(theme, campaign, zone_contracts),
        ).run(accounts)

    report = run(hostile_theme)
    store = ZoneSetStore(redis_client)
    published = {
        r["account_id"]: store.get(campaign.tenant, campaign.campaign, r["account_id"]) for r in rows
    }
    congrats = set()
    for account_id, zone_set in published.items():
        assert zone_set is not None
        headline = zone_set.zone("hero_headline")
        if headline is not None and "Congrats" in headline.text:
            congrats.add(account_id)
    assert congrats and congrats != set(published)
    assert {f.account_id for f in report.theme_refused} == congrats
    assert all("onclick" in f.reason for f in report.theme_refused)
    for account_id, zone_set in published.items():
        assert zone_set is not None
        assert zone_set.theme_refused == (hostile_theme.digest() if account_id in congrats else None)

    again = run(hostile_theme)
    assert again.published == 0 and {f.account_id for f in again.theme_refused} == congrats

    fixed = run(load_theme(REPO_ROOT / "examples" / "theme"))
    assert fixed.published == len(congrats) and not fixed.theme_refused
    for account_id in published:
        zone_set = store.get(campaign.tenant, campaign.campaign, account_id)
        assert zone_set is not None and zone_set.theme_refused is None


def test_a_worker_checks_each_accounts_page_as_a_local_run_does(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    """A distributed run (`--enqueue`, then `welcomemat worker`) marks the same accounts."""
    (case,) = [c for c in CASES if c["name"] == "personal-handler-by-prefix"]
    hostile_theme = _theme_of(case["snippet"])
    campaign, zone_contracts = example_inputs()
    path = tmp_path / "accounts.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in example_rows(PIPELINE_NOW.date())))
    read = read_accounts(path)
    run = PrecomputeRun(
        client=redis_client,
        campaign=campaign,
        zones=zone_contracts,
        policy=build_policy(campaign, None),
        provider=OfflineComposer(),
        now=PIPELINE_NOW,
        theme=hostile_theme,
    )
    enqueue_run(
        run,
        read.accounts,
        accounts_file=str(path),
        rows_read=read.lines_read,
        malformed=[],
        provider_options={},
    )
    worker = Worker(
        redis_client,
        lambda name, options: OfflineComposer(),
        WorkerOptions(name="w", campaign=(campaign.tenant, campaign.campaign), block_ms=20, once=True),
        log=lambda line: None,
        page_check=account_page_check,
    )
    assert worker.run().runs_completed == 1
    store = ZoneSetStore(redis_client)
    marked = set()
    for account in read.accounts:
        zone_set = store.get(campaign.tenant, campaign.campaign, account.account_id)
        assert zone_set is not None
        headline = zone_set.zone("hero_headline")
        congrats = headline is not None and "Congrats" in headline.text
        assert zone_set.theme_refused == (hostile_theme.digest() if congrats else None)
        marked |= {account.account_id} if congrats else set()
    assert marked


@pytest.mark.parametrize(
    "expression",
    [
        "title" + "|replace('a', 'aaaaaaaaaa')" * 10,
        "title|replace('', 'xxxxxxxxxxxxxxxx')" + "|replace('x', 'xxxxxxxxxx')" * 6,
        "title" + "|e|capitalize" * 8 + "|replace('&', '&&&&&&&&&&&&')" * 6,
        "title|truncate(30, end='……')" + "|replace('…', '……………………')" * 6,
    ],
)
def test_the_theme_filters_stop_before_building_a_huge_string(expression: str) -> None:
    """Each chain would make tens of megabytes to gigabytes; the bounded filters refuse once past the
    page limit, having held no more than about that (measured: peak memory, not time)."""
    env = theme_environment(load_theme(REPO_ROOT / "examples" / "theme"), REPO_ROOT / "templates")
    template = env.from_string("<p>{{ " + expression + " }}</p>")
    tracemalloc.start()
    try:
        with pytest.raises(ThemeOutputTooLarge):
            render_bounded(template, {"title": "Congrats & a great day at Dymaxa, " * 3})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * MAX_THEMED_PAGE_BYTES * 4, peak  # a few copies of a page at 4 bytes a character


@pytest.mark.parametrize(
    "snippet", ["<p>{{ title|truncate(3, end='.....') }}</p>", "{% if title > 3 %}<p>x</p>{% endif %}"]
)
def test_a_theme_whose_render_fails_is_refused_not_a_traceback(tmp_path: Path, snippet: str) -> None:
    campaign, theme, _ = hostile(tmp_path, snippet)
    with pytest.raises(ContractError, match="does not render"):
        load_campaign_inputs(campaign, ZONES, None, check_campaign_theme)
