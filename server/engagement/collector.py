"""The garbage collector of a serving renderer process, set once at start-up.

A first click allocates a few hundred container objects (verified claims, memo entries, a
remembered answer, the view event) and keeps many of them for a minute (the caches'
TTLs). CPython's default collector runs a young-generation pass every 700 net allocations,
and older-generation passes as the survivors pile up. While the caches fill (a worker's
first tens of seconds at a send's peak, or after a restart), those older passes walk the
tens of thousands of objects the caches hold, each a stall of 30-100 ms for every request in
flight (measured in `bench/README.md`, `bench_renderer.py`), and find next to nothing: the
caches hold no cycles, and reference counting frees what they drop the moment it is
dropped. (Once they are full, as many objects are freed as allocated, and no pass is due.)

So a serving process (`welcomemat serve`'s workers):

- freezes what start-up made (imports, the app: never garbage, and no longer walked);
- runs young-generation passes every `gen0_threshold` allocations instead of 700 (each walks
  only what was allocated since the last one);
- never runs an older-generation pass on its own: what survives a young pass is walked
  again only by one full collection every `full_interval_s`, from a background thread. The
  few cycles that outlive a young pass (a request's exception caught mid-flight) wait at
  most that long, and the full pass's stall comes once per interval, not while the caches
  fill.
"""

from __future__ import annotations

import gc
import logging
import threading
import time

__all__ = ["FullCollections", "tune_collector"]

log = logging.getLogger(__name__)

# An older generation's threshold no count reaches (the C int's maximum): only an explicit
# `gc.collect()` walks generations 1 and 2.
_NEVER = 2**31 - 1


class FullCollections:
    """A daemon thread running `gc.collect()` every `interval_s` for the life of the process."""

    def __init__(self, interval_s: float) -> None:
        if interval_s <= 0:
            raise ValueError(f"full_interval_s must be > 0, got {interval_s}")
        self._interval_s = interval_s
        self.passes = 0
        threading.Thread(target=self._run, name="wm-gc", daemon=True).start()

    def _run(self) -> None:
        while True:
            time.sleep(self._interval_s)
            started = time.perf_counter()
            found = gc.collect()
            self.passes += 1
            took_ms = (time.perf_counter() - started) * 1e3
            log.debug("full collection: %d unreachable, %.1f ms", found, took_ms)


def tune_collector(gen0_threshold: int, full_interval_s: float) -> FullCollections | None:
    """Collect, freeze the survivors, run young-generation passes every `gen0_threshold`
    allocations and a full collection every `full_interval_s` (nothing older otherwise).
    `gen0_threshold` 0 leaves the collector alone (and starts nothing)."""
    if gen0_threshold <= 0:
        return None
    full = FullCollections(full_interval_s)  # a bad interval fails before anything changed
    gc.collect()
    gc.freeze()
    gc.set_threshold(gen0_threshold, _NEVER, _NEVER)
    return full
