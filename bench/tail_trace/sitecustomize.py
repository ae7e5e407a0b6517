"""Where a served process's slow requests spend their time: loaded only by the bench, when
`bench/tail_trace` is on the served process's `PYTHONPATH` and `BENCH_TRACE` names a folder.

    BENCH_TRACE=/tmp/trace PYTHONPATH=bench/tail_trace .venv/bin/python bench/bench_renderer.py ...
    .venv/bin/python bench/tail_report.py /tmp/trace

(`BENCH_TRACE`, not a `WELCOMEMAT_` name: the bench passes its environment on to the servers it
starts, the renderer's without `WELCOMEMAT_` settings.) Python imports `sitecustomize` at start-up;
this one records, in every uvicorn server the bench starts (the renderer, the reference, the
bare page), and writes to `<folder>/<pid>.json` when the server shuts down:

- each HTTP request: when uvicorn began parsing it, when the app was called, when it returned
  (the app's time, and the time it waited for the event loop), and whether it carried `wm=`;
- each garbage-collector pass: when, how long, which generation, on which thread;
- the event loop's lateness (a 1 ms sleep that woke more than 2 ms late) and the interpreter
  lock's (a thread's 1 ms sleep that woke more than 2 ms late: another thread held it);
- the renderer's zone-set reads that awaited Redis (`ZoneSetReader.get` past the cache), and
  the background refreshes it started.

The probes cost the served process some CPU (a thread waking every millisecond): compare
traced runs with traced runs.
"""

import os

_FOLDER = os.environ.get("BENCH_TRACE")

if _FOLDER:
    import array
    import asyncio
    import gc
    import json
    import sys
    import threading
    import time

    import uvicorn.config
    import uvicorn.server
    from uvicorn.protocols.http import httptools_impl

    _T0 = time.perf_counter()
    _requests = array.array("d")  # flat: parsed, called, returned, carried wm= (1.0 / 0.0)
    _collections: list[tuple[float, float, int, str]] = []
    _loop_late: list[tuple[float, float]] = []
    _lock_late: list[tuple[float, float]] = []
    _zone_reads: list[tuple[float, float]] = []
    _refreshes: list[float] = []
    _gc_started: dict[str, float] = {}

    def _since() -> float:
        return time.perf_counter() - _T0

    def _on_gc(phase: str, info: dict) -> None:
        name = threading.current_thread().name
        if phase == "start":
            _gc_started[name] = _since()
        else:
            started = _gc_started.get(name, _since())
            _collections.append((started, (_since() - started) * 1e3, info["generation"], name))

    gc.callbacks.append(_on_gc)

    async def _loop_probe() -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            late = (time.perf_counter() - before - 0.001) * 1e3
            if late > 2:
                _loop_late.append((before - _T0, late))

    def _lock_probe() -> None:
        while True:
            before = time.perf_counter()
            time.sleep(0.001)
            late = (time.perf_counter() - before - 0.001) * 1e3
            if late > 2:
                _lock_late.append((before - _T0, late))

    _begin = httptools_impl.HttpToolsProtocol.on_message_begin
    _headers = httptools_impl.HttpToolsProtocol.on_headers_complete

    def _on_message_begin(self: object) -> None:
        self._bench_parsed = time.perf_counter()  # type: ignore[attr-defined]
        _begin(self)

    def _on_headers_complete(self: object) -> None:
        _headers(self)
        scope = getattr(self, "scope", None)
        if scope is not None:  # the task is created, not yet run: it will see this key
            scope["bench.parsed"] = self._bench_parsed  # type: ignore[attr-defined]

    httptools_impl.HttpToolsProtocol.on_message_begin = _on_message_begin
    httptools_impl.HttpToolsProtocol.on_headers_complete = _on_headers_complete

    _load = uvicorn.config.Config.load

    def _timed_load(self: uvicorn.config.Config) -> None:
        _load(self)
        app = self.loaded_app

        async def timed(scope: dict, receive: object, send: object) -> None:
            called = time.perf_counter()
            await app(scope, receive, send)
            if scope["type"] == "http":
                parsed = scope.get("bench.parsed", called)
                wm = 1.0 if b"wm=" in scope["query_string"] else 0.0
                _requests.extend((parsed - _T0, called - _T0, time.perf_counter() - _T0, wm))

        self.loaded_app = timed

    uvicorn.config.Config.load = _timed_load

    _startup = uvicorn.server.Server.startup
    _shutdown = uvicorn.server.Server.shutdown

    async def _traced_startup(self: uvicorn.server.Server, sockets: object = None) -> None:
        await _startup(self, sockets)
        self._bench_probe = asyncio.get_running_loop().create_task(_loop_probe())  # type: ignore[attr-defined]
        threading.Thread(target=_lock_probe, name="bench-lock-probe", daemon=True).start()

    async def _traced_shutdown(self: uvicorn.server.Server, sockets: object = None) -> None:
        # Written here, not at exit: uvicorn re-raises the signal that stopped it.
        with open(os.path.join(_FOLDER, f"{os.getpid()}.json"), "w") as out:
            json.dump(
                {
                    "argv": sys.argv,
                    "requests": _requests.tolist(),
                    "collections": _collections,
                    "loop_late": _loop_late,
                    "lock_late": _lock_late,
                    "zone_reads": _zone_reads,
                    "refreshes": _refreshes,
                },
                out,
            )
        await _shutdown(self, sockets)

    uvicorn.server.Server.startup = _traced_startup
    uvicorn.server.Server.shutdown = _traced_shutdown

    try:
        from server import zone_set_reader
    except ImportError:  # a server that is not the renderer's checkout
        zone_set_reader = None
    if zone_set_reader is not None:
        _get = zone_set_reader.ZoneSetReader.get
        _refresh = getattr(zone_set_reader.ZoneSetReader, "_refresh", None)

        async def _traced_get(self: object, *key: str) -> object:
            started = time.perf_counter()
            found = await _get(self, *key)
            _zone_reads.append((started - _T0, (time.perf_counter() - started) * 1e3))
            return found

        zone_set_reader.ZoneSetReader.get = _traced_get
        if _refresh is not None:

            def _traced_refresh(self: object, key: object) -> None:
                _refreshes.append(_since())
                _refresh(self, key)

            zone_set_reader.ZoneSetReader._refresh = _traced_refresh
