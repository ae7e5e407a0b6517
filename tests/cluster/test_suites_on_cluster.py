"""The suites of the other writers that run a transaction, a script or a multi-key command, run
as they are against the cluster (`WELCOMEMAT_TEST_REDIS_URL`): zone-set publish, rollback and
status (WATCH + MULTI/EXEC, concurrent writers, the batch script) with the overview index they
write, review decisions, guideline
records, CRM conversions, the CRM webhook's delivery bookkeeping, a person's erasure and the contacts'
workflow marks. A stray
key would be refused there (CROSSSLOT, or the client's own slot check). Precompute, workers,
the renderer, sync, export and lift run in test_cluster_flows.py.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.cluster.local_cluster import LocalCluster
from tests.conftest import TEST_REDIS_URL_VARIABLE
from tests.corpora import REPO_ROOT

_STORE = "tests/welcomemat/zones/test_store.py::"
SUITES = (
    # zone sets: WATCH + MULTI/EXEC (publish, rollback, status), the batch script, concurrency
    _STORE + "test_new_input_hash_is_a_new_version_and_rollback_restores_the_old",
    _STORE + "test_status_change_is_a_new_version_with_the_same_content",
    _STORE + "test_changes_are_announced",
    _STORE + "test_concurrent_publishes_get_distinct_versions",
    _STORE + "test_publish_many_matches_publish_one_by_one",
    _STORE + "test_publish_many_falls_back_when_an_account_changed_meanwhile",
    # the campaign overview's index: written by each of those writes' transaction or script, and
    # removed by an erasure's; its rebuild and pages
    "tests/welcomemat/zones/test_overview.py",
    # review decisions and a held draft's approval (store revision + audit entry)
    "tests/welcomemat/zones/test_review.py",
    "tests/welcomemat/campaign/test_guidelines.py::test_change_records_round_trip_in_one_key_with_a_ttl",
    "tests/outbound/test_conversions.py::test_conversions_import_command",
    "tests/outbound/test_webhook.py::test_cli_once_folds_and_delivers_then_exits",
    "tests/test_data_subject_requests.py::test_erasing_a_person_keeps_their_account_and_exports_what_was_held",
    # workflow marks: one script over a batch of account records (the tenant's slot)
    "tests/outbound/test_contact_workflow.py::test_each_state_comes_from_its_source_and_a_repeat_changes_nothing",
)


def test_the_writers_suites_pass_on_the_cluster(redis_cluster: LocalCluster) -> None:
    env = {**os.environ, TEST_REDIS_URL_VARIABLE: redis_cluster.url}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUITES],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "skipped" not in done.stdout
