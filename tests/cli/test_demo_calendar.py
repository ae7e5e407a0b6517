"""`welcomemat demo` on any day: the real command, run with the system clock shifted.

CI runs on whatever day and at whatever hour it happens to. Each case starts the real
console script under Debian's `faketime` (libfaketime, installed by
`scripts/install-test-deps.sh`), which shifts what `time.time()` and `date.today()` return
in the child process and everything it starts (the embedded Redis, the servers); the demo
then generates its accounts, precomputes, serves and fetches every link it prints. What a
user sees must hold on each day: exit 0, and Dymaxa's page opening with its Series A, dated
by the phrase a reader on that day would use.

The seven cases after the first are the seven days from tomorrow (every weekday, whatever
today is); the fixed ones are the edges: a leap day, the last half hour of a year in UTC,
the same instant where the local date is already next year, and a DST change.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.corpora import REPO_ROOT
from tests.precompute.test_date_phrases import expected_phrase

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
FAKETIME = "/usr/bin/faketime"

TOMORROW = datetime.now(UTC).date() + timedelta(days=1)
NEXT_SEVEN_DAYS = [
    pytest.param(datetime.combine(TOMORROW + timedelta(days=n), time(11), tzinfo=UTC), "UTC", id=f"+{n + 1}d")
    for n in range(7)
]
EDGES = [
    pytest.param(datetime(2028, 2, 29, 11, 0, tzinfo=UTC), "UTC", id="leap-day"),
    pytest.param(datetime(2026, 12, 31, 23, 30, tzinfo=UTC), "UTC", id="year-end-utc"),
    # The same instant seen from UTC+14, where it is already 1 January 2027 at 13:30.
    pytest.param(datetime(2026, 12, 31, 23, 30, tzinfo=UTC), "Pacific/Kiritimati", id="year-end-utc+14"),
    # New York springs forward at 07:00 UTC on 14 March 2027; 06:59 local is an hour later.
    pytest.param(datetime(2027, 3, 14, 6, 59, tzinfo=UTC), "America/New_York", id="dst-start-new-york"),
]


FUNDING_WINDOW_DAYS = 30  # examples/campaign.yaml's signal_windows_days.funding


def expected_headline(today: date) -> str:
    """Dymaxa's headline on `today` (UTC): its Series A was announced the Thursday before, dated
    by a phrase true for as long as the page may be served (docs/campaigns.md: Date phrases)."""
    announced = today - timedelta(days=(today.weekday() - 3) % 7 or 7)
    return f"Congrats on the Series A {expected_phrase(announced, today, FUNDING_WINDOW_DAYS)}, Dymaxa"


def faketime(instant: datetime, zone: str = "UTC") -> list[str]:
    """The command prefix that runs a program (with `TZ=zone`) from `instant` on, the clock running.

    A start time, not an offset from the real clock, so it also holds when the tests
    themselves run under a shifted clock; FAKETIME_DONT_RESET=1 (set by `clock_env`) lets the
    processes the program starts (the embedded Redis) continue its clock instead of starting over.
    """
    if not os.access(FAKETIME, os.X_OK):
        pytest.fail(f"{FAKETIME} is missing: install it with `sh scripts/install-test-deps.sh` (apt-get)")
    # faketime reads the start time in the child's local zone.
    local = instant.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M:%S")
    return [FAKETIME, "-f", f"@{local}"]


def clock_env(zone: str, **extra: str) -> dict[str, str]:
    # faketime sets the child's clock: a shift the suite itself may run under (tests/clock) must
    # not be added on top of it.
    dropped = ("REDIS_URL", "WELCOMEMAT_SECRET", "TEST_CLOCK")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return {**env, "TZ": zone, "FAKETIME_DONT_RESET": "1", **extra}


def run_demo_at(instant: datetime, zone: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*faketime(instant, zone), WELCOMEMAT, "demo", "--port", "0", "--site-port", "0", "--no-serve"],
        cwd=REPO_ROOT,
        env=clock_env(zone, WELCOMEMAT_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.mark.parametrize(("instant", "zone"), [*NEXT_SEVEN_DAYS, *EDGES])
def test_the_demo_promises_the_same_page_on_every_day(instant: datetime, zone: str, tmp_path: Path) -> None:
    result = run_demo_at(instant, zone, tmp_path / "home")
    out = result.stdout
    assert result.returncode == 0, out[-3000:] + result.stderr[-2000:]
    # The clock really was shifted: the accounts were dated from that (UTC) day.
    today = instant.date()
    announced = today - timedelta(days=(today.weekday() - 3) % 7 or 7)
    assert f"{announced.isoformat()}  Dymaxa raised a Series A" in out
    checks = [line for line in out.splitlines() if line.startswith(("  ok ", "  FAIL"))]
    assert checks and all(line.startswith("  ok ") for line in checks), "\n".join(checks)
    personal = next(line for line in checks if "personal link" in line)
    assert f"hero_headline (personal): “{expected_headline(today)}”" in personal
    assert "QA acme/q4-pipeline: GO" in out  # GO or GO WITH FIXES, never NO GO


def test_the_clock_shift_reaches_the_child() -> None:
    """Without this, every case above could pass on the real day alone."""
    leap_day = datetime(2028, 2, 29, 11, 0, tzinfo=UTC)
    shown = subprocess.run(
        [*faketime(leap_day), sys.executable, "-c", "import datetime; print(datetime.date.today())"],
        env=clock_env("UTC"),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert shown.stdout.strip() == "2028-02-29"
