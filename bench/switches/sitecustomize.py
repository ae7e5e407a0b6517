"""Switches for `bench_extra_work.py` and `bench_miss_latency.py`: work the renderer does that
the same-work reference does not, turned off in a served process by `WELCOMEMAT_BENCH_WITHOUT`
(comma-separated).

Only those two put this folder on a served process's `PYTHONPATH`; nothing else
imports it. Python imports `sitecustomize` at start-up, before the app is built.

- `events`: no engagement event is queued, so none is written (`EventWriter.emit` answers
  True and keeps nothing; the writer thread never starts).
- `clicks`: a hosted page's CTA links keep the CTA's own URL (no click token signed per view).

`bench_miss_latency.py` puts it there too, for `WELCOMEMAT_BENCH_SWITCH_INTERVAL_MS`: the
interpreter's switch interval (how long a thread holds the interpreter lock while another
waits for it; CPython's default is 5 ms).
"""

import os
import sys

if _SWITCH_MS := os.environ.get("WELCOMEMAT_BENCH_SWITCH_INTERVAL_MS"):
    sys.setswitchinterval(float(_SWITCH_MS) / 1000)

_WITHOUT = {name for name in os.environ.get("WELCOMEMAT_BENCH_WITHOUT", "").split(",") if name}

if "events" in _WITHOUT:
    from server.engagement import events as _events

    _events.EventWriter.emit = lambda self, event: True  # type: ignore[method-assign]

if "clicks" in _WITHOUT:
    from server import pages as _pages

    _pages._click_templates = lambda signer, visit: (None,) * len(visit.result.clicks)  # type: ignore[assignment]
