"""The garbage collector of a serving renderer process, set once at start-up.

A first click allocates a few hundred container objects (verified claims, memo entries, a
remembered answer, the view event) and keeps many of them for a minute (the caches'
TTLs). CPython's default collector runs a young-generation pass every 700 net allocations,
and a full pass whenever the long-lived objects grew by a quarter, walking every object the
process holds, the tens of thousands its imports made included: at a send's peak, a share of
every first click, and each full pass a stall for every request in flight (measured in
`bench/README.md`, `bench_renderer.py`).

So a serving process (`welcomemat serve`'s workers) freezes what start-up made (imports,
the app: never garbage, and no longer walked) and collects its young generation every
`gen0_threshold` allocations instead of 700. Reference counting still frees everything
that is not in a cycle the moment it is dropped; only cycles wait for a pass.
"""

from __future__ import annotations

import gc

__all__ = ["tune_collector"]


def tune_collector(gen0_threshold: int) -> None:
    """Collect, freeze the survivors, and run young-generation passes every `gen0_threshold`
    allocations (the older generations' thresholds unchanged). 0 leaves the collector alone."""
    if gen0_threshold <= 0:
        return
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(gen0_threshold, gen1, gen2)
