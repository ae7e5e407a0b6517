"""Runs the whole test suite (or any Python command) on another day: the clock, shifted.

    TEST_CLOCK=2028-02-29T11:00:00Z PYTHONPATH=tests/clock .venv/bin/python -m pytest -q

With `tests/clock` on PYTHONPATH, Python imports this module as it starts, before any test
or command code. When TEST_CLOCK names an instant (ISO 8601 with an offset) or a
shift in seconds (`+86400`), the wall clock of this process moves there and keeps running:
`time.time()`, `datetime.now()`, `date.today()` and friends all agree (time-machine patches
them at the C level). The monotonic clock, sleeps and lock timeouts are left alone, which is
why this is used for the suite rather than libfaketime (whose shifted monotonic clock makes
Python's timed waits hang). Non-Python programs (the Redis server, Chromium) keep the real
clock; nothing in Welcomemat compares their clocks with its own.

The instant is turned into a shift once and written back to the variable, so every Python
process the suite starts (the CLI, workers) continues the same clock instead of starting over.
The name is outside the `WELCOMEMAT_` namespace on purpose: tests that give a child a clean
environment drop every `WELCOMEMAT_` setting, and the clock must survive that.
`tests/test_clock_shift.py` checks the mechanism.
"""

from __future__ import annotations

import os

_VARIABLE = "TEST_CLOCK"


def _shift_s(value: str, now: float) -> float:
    from datetime import datetime

    if value[:1] in "+-" and value[1:].replace(".", "", 1).isdigit():
        return float(value)
    instant = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if instant.tzinfo is None:
        raise SystemExit(f"{_VARIABLE}={value!r}: give the instant with its UTC offset (e.g. ...T11:00:00Z)")
    return instant.timestamp() - now


def _travel() -> None:
    value = os.environ.get(_VARIABLE, "").strip()
    if not value:
        return
    import time

    import time_machine

    now = time.time()
    shift = _shift_s(value, now)
    os.environ[_VARIABLE] = f"{shift:+.6f}"  # children continue this clock
    time_machine.travel(now + shift, tick=True).start()


_travel()
