"""The renderer's zone-set cache TTL for a bench run, loaded only by the bench, when
`bench/zone_ttl` is on the served processes' `PYTHONPATH` and `BENCH_ZONE_CACHE_TTL_S` is set:

    BENCH_ZONE_CACHE_TTL_S=3600 PYTHONPATH=bench/zone_ttl .venv/bin/python bench/bench_renderer.py ...

The TTL is an engineering constant (`server.tuning.RendererTuning.zone_cache_ttl_s`), not a
setting, and `bench_renderer.py` runs the renderer as `welcomemat serve` in its own processes:
Python imports `sitecustomize` at start-up, and this one makes every `RendererTuning` built in
them take the given TTL. It tells whether a round's tail is the cache's entries expiring while
the renderer idles between its runs (the bare page's and the reference's run meanwhile) and
being read again together when its next run starts.
"""

import os
import sys

_TTL = os.environ.get("BENCH_ZONE_CACHE_TTL_S")

if _TTL:
    try:
        from server import tuning as _tuning
    except ImportError:  # the bare page's and the reference's processes may not see the project
        _tuning = None  # type: ignore[assignment]
    if _tuning is not None:
        _init = _tuning.RendererTuning.__init__

        def _with_ttl(self: object, *args: object, **kwargs: object) -> None:
            kwargs.setdefault("zone_cache_ttl_s", float(_TTL))
            _init(self, *args, **kwargs)  # type: ignore[arg-type]

        _tuning.RendererTuning.__init__ = _with_ttl  # type: ignore[method-assign]
        print(f"bench/zone_ttl: zone-set cache TTL {float(_TTL):g} s (pid {os.getpid()})", file=sys.stderr)
