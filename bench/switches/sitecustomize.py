"""Switches for `bench_extra_work.py` and `bench_miss_latency.py`: work the renderer does that
the same-work reference does not, turned off in a served process by `WELCOMEMAT_BENCH_WITHOUT`
(comma-separated).

Only those two put this folder on a served process's `PYTHONPATH`; nothing else
imports it. Python imports `sitecustomize` at start-up, before the app is built.

- `events`: no engagement event is queued, so none is written (`EventWriter.emit` answers
  True and keeps nothing; the writer thread never starts).
- `clicks`: a hosted page's CTA links keep the CTA's own URL (no click token signed per view).
- `thread`: no event writer thread; events are written from the event loop instead, as the
  reference writes them: a task of the loop takes a batch every `event_flush_interval_s`,
  encodes it as the thread does and awaits the same script through `redis.asyncio` (a
  faulted write's batch is dropped, counted as `write_failed` and said on stderr; what is
  queued at shutdown is lost: enough to measure, not to serve).

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

if "thread" in _WITHOUT:
    import asyncio

    import redis.asyncio as _aredis

    from server.engagement import events as _writer_events

    def _start_on_loop(self: _writer_events.EventWriter) -> None:
        if self._thread is None:
            self._thread = asyncio.get_running_loop().create_task(_write_from_loop(self))  # type: ignore[assignment]

    def _cancel(self: _writer_events.EventWriter, timeout_s: float = 2.0) -> None:
        if self._thread is not None:
            self._thread.cancel()  # type: ignore[attr-defined]

    async def _write_from_loop(writer: _writer_events.EventWriter) -> None:
        client = _aredis.Redis.from_url(os.environ["REDIS_URL"])
        script = client.register_script(_writer_events._WRITE_BATCH_LUA)
        while True:
            await asyncio.sleep(writer._flush_interval_s)
            while writer._queue:
                batch = []
                while writer._queue and len(batch) < writer._batch_max:
                    batch.append(writer._queue.popleft())
                duplicates = 0
                try:
                    for tenant, encoded in _writer_events._serialise(batch).items():
                        added = await script(
                            keys=encoded.script_keys(tenant), args=encoded.script_args(writer._maxlen)
                        )
                        duplicates += encoded.count - int(added)
                except Exception as exc:  # noqa: BLE001 - a measuring switch: count, say so, go on
                    writer.dropped += len(batch)
                    writer._metrics.events_dropped.labels("write_failed").inc(len(batch))
                    print(f"events from the loop: {len(batch)} lost ({exc!r})", file=sys.stderr)
                    continue
                writer._count_written(len(batch), duplicates)

    _writer_events.EventWriter.start = _start_on_loop  # type: ignore[method-assign]
    _writer_events.EventWriter.close = _cancel  # type: ignore[method-assign]
