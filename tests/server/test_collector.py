"""A serving process's garbage collector: start-up's objects frozen, young passes less often."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

from server.collector import tune_collector
from server.tuning import RendererTuning
from tests.server.conftest import PUBLIC_URL, SECRET

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import gc, json\n"
    "from server.app import app_from_env\n"
    "before = gc.get_threshold()\n"
    "app_from_env()\n"
    "print(json.dumps({'before': before, 'after': gc.get_threshold(), 'frozen': gc.get_freeze_count()}))\n"
)


def test_the_served_app_tunes_its_process_collector(redis_url: str) -> None:
    """What `welcomemat serve` runs in each worker: the factory freezes what start-up made and
    sets the young generation's threshold; the older ones keep CPython's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WELCOMEMAT_")}
    env.update({"WELCOMEMAT_SECRET": SECRET, "WELCOMEMAT_PUBLIC_URL": PUBLIC_URL, "REDIS_URL": redis_url})
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    seen = json.loads(out.splitlines()[-1])
    assert seen["after"] == [RendererTuning().gc_gen0_threshold, *seen["before"][1:]]
    assert seen["frozen"] > 10_000  # the imports' objects, no longer walked by full passes


def test_zero_leaves_the_collector_alone() -> None:
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    tune_collector(0)
    assert (gc.get_threshold(), gc.get_freeze_count()) == (threshold, frozen)
