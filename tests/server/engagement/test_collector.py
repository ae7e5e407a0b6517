"""A serving process's garbage collector: start-up's objects frozen, young passes less often,
older generations only in a periodic full collection."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from server.engagement.collector import tune_collector
from server.tuning import RendererTuning
from tests.server.conftest import PUBLIC_URL, SECRET

ROOT = Path(__file__).resolve().parents[3]
PROBE = (
    "import gc, json, threading\n"
    "from server.app import app_from_env\n"
    "before = gc.get_threshold()\n"
    "app_from_env()\n"
    "print(json.dumps({'before': before, 'after': gc.get_threshold(), 'frozen': gc.get_freeze_count(),\n"
    "                  'threads': [t.name for t in threading.enumerate()]}))\n"
)
# A cycle that outlives a young pass (as a request's caught exception can), then is dropped.
CYCLE = """
import gc, json, sys, time, weakref
from server.engagement.collector import tune_collector

class Node:
    pass

interval = float(sys.argv[1])
full = tune_collector(10_000, interval) if interval else None
if full is None:
    gc.set_threshold(10_000, 2**31 - 1, 2**31 - 1)  # the same thresholds, no full collections
node = Node()
node.self = node
freed = []
ref = weakref.ref(node, lambda _: freed.append(time.monotonic()))
gc.collect(0)  # survives a young pass: now in an older generation
del node
dropped = time.monotonic()
young = gc.get_stats()[0]["collections"]
kept = [[] for _ in range(200_000)]  # kept: ~20 young passes run, the older generations are never due
assert gc.get_stats()[0]["collections"] > young
deadline = time.monotonic() + (10 if interval else 1)  # a loaded machine may be slow to run the thread
while not freed and time.monotonic() < deadline:
    time.sleep(0.05)
print(json.dumps({"freed_after_s": freed[0] - dropped if freed else None,
                  "passes": full.passes if full else 0}))
"""


def _run(code: str, *args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    seen: dict[str, object] = json.loads(out.splitlines()[-1])
    return seen


def test_the_served_app_tunes_its_process_collector(redis_url: str) -> None:
    """What `welcomemat serve` runs in each worker: the factory freezes what start-up made, sets
    the young generation's threshold, turns the older generations' automatic passes off and
    starts the thread of full collections."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WELCOMEMAT_")}
    env.update({"WELCOMEMAT_SECRET": SECRET, "WELCOMEMAT_PUBLIC_URL": PUBLIC_URL, "REDIS_URL": redis_url})
    seen = _run(PROBE, env=env)
    assert seen["after"] == [RendererTuning().gc_gen0_threshold, 2**31 - 1, 2**31 - 1]
    assert seen["frozen"] > 10_000  # type: ignore[operator]  # the imports' objects, no longer walked
    assert "wm-gc" in seen["threads"]  # type: ignore[operator]


def test_a_cycle_that_outlived_a_young_pass_is_freed_by_the_next_full_collection() -> None:
    seen = _run(CYCLE, "0.3")
    assert seen["freed_after_s"] is not None, "the periodic full collection never freed the cycle"
    assert seen["passes"] >= 1  # type: ignore[operator]


def test_without_the_full_collections_such_a_cycle_would_stay() -> None:
    """What the thread is for: young passes alone never reach a cycle in an older generation."""
    assert _run(CYCLE, "0")["freed_after_s"] is None


def test_zero_leaves_the_collector_alone() -> None:
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    assert tune_collector(0, 300.0) is None
    assert (gc.get_threshold(), gc.get_freeze_count()) == (threshold, frozen)


def test_a_full_interval_that_is_not_positive_is_refused_before_anything_changes() -> None:
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    with pytest.raises(ValueError, match="full_interval_s must be > 0"):
        tune_collector(10_000, 0)
    assert (gc.get_threshold(), gc.get_freeze_count()) == (threshold, frozen)
