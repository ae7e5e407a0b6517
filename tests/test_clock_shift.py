"""The shifted clock the suite can run under (tests/clock/sitecustomize.py) moves the date and keeps time.

The suite is meant to pass on any day; to check it on another day, run it with
`TEST_CLOCK=<instant> PYTHONPATH=tests/clock` (docs/operations.md: On any day). These
tests prove that mechanism does what the check relies on, in real child processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from tests.corpora import REPO_ROOT

CLOCK_PATH = str(REPO_ROOT / "tests" / "clock")

# What a child reports: its dates, its wall clock, a grandchild's wall clock, and how long a
# 0.2 s timed wait took on the monotonic clock (which must not move).
PROBE = """
import datetime, json, subprocess, sys, threading, time
start = time.monotonic()
threading.Event().wait(0.2)
waited = time.monotonic() - start
child = subprocess.run([sys.executable, "-c", "import time; print(time.time())"],
                       capture_output=True, text=True, check=True)
print(json.dumps({"today": datetime.date.today().isoformat(),
                  "utc": datetime.datetime.now(datetime.UTC).isoformat(),
                  "time": time.time(), "child_time": float(child.stdout), "waited": waited}))
"""


def probe(clock: str, zone: str = "UTC") -> dict[str, object]:
    env = {**os.environ, "TEST_CLOCK": clock, "PYTHONPATH": CLOCK_PATH, "TZ": zone}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_an_instant_moves_the_date_and_the_clock_runs_on() -> None:
    seen = probe("2028-02-29T23:59:59Z")
    assert str(seen["utc"]).startswith(("2028-02-29T23:59:59", "2028-03-01T00:00:0"))
    assert isinstance(seen["waited"], float) and 0.15 < seen["waited"] < 5  # timed waits still work
    # A process the first one starts continues its clock (a second or so later), not from the instant.
    assert isinstance(seen["time"], float) and isinstance(seen["child_time"], float)
    assert 0 <= seen["child_time"] - seen["time"] < 30


def test_the_local_date_follows_the_zone() -> None:
    assert probe("2026-12-31T23:30:00Z", zone="Pacific/Kiritimati")["today"] == "2027-01-01"
    assert probe("2026-12-31T23:30:00Z", zone="UTC")["today"] == "2026-12-31"


def test_a_shift_in_seconds() -> None:
    seen = probe("+86400")
    assert isinstance(seen["time"], float)
    # The real clock, also when this suite itself runs shifted (the variable then holds its shift).
    real = time.time() - float(os.environ.get("TEST_CLOCK") or 0)
    assert abs(seen["time"] - (real + 86400)) < 30
