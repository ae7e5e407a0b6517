"""The renderer's internal limits: cache sizes, time budgets, refresh intervals.

Not environment settings: these are engineering constants with units, gathered in one
frozen object so that tests and benchmarks can shrink a TTL or a budget by passing their
own `RendererTuning` to `create_app`, instead of patching module globals.
"""

from __future__ import annotations

from dataclasses import dataclass

from welcomemat.limits import BODY_READ_MAX_SECONDS

__all__ = ["RendererTuning"]


@dataclass(frozen=True, slots=True)
class RendererTuning:
    """Limits of one renderer process. Every time is in seconds."""

    # The per-visitor caches below share a memory budget of about 150 MB per worker, so that a
    # renderer stays under 300 MB of RSS however many distinct visitors come (bench/README.md,
    # `bench_renderer.py --skip-throughput`). Entry sizes measured with tracemalloc: a parsed
    # zone set ~8.5 KB, a verified token ~1 KB with its key, a rendered page ~1-2 KB. Every
    # entry lives at most ~30-60 s (the TTLs), so a cache only has to hold the visitors of the
    # last minute: the sizes hold ~150-250 new visitors a second, far above one worker's share
    # of a campaign's first clicks. A hot entry is served the same way at any size.
    #
    # Zone sets kept in memory: 8,000 x ~8.5 KB, ~70 MB at most.
    zone_cache_entries: int = 8_000
    # Safety net behind pub/sub invalidation: a cached zone set is re-read after this long
    # even if no change message arrived (a message lost while the subscriber reconnected).
    zone_cache_ttl_s: float = 30.0
    # Rendered pages (a few KB each), keyed by campaign config, page, arm and zone-set version.
    render_cache_entries: int = 4_000
    # Returning visitors' answers remembered by their tokens (`server.known_visitors`), for
    # pages and for /v1/zones each, and as many again by address for visitors without tokens
    # (with as many addresses seen once). An entry lives at most ~30-60 s (its TTLs) and may
    # keep a page or payload alive after its own cache dropped it. 0: off.
    known_visitor_entries: int = 5_000
    # Verified tokens remembered (`server.identify`, at most a minute each), with the cookie a
    # link or QR arrival earned: a second click costs neither a verification nor a signing.
    # 20,000 x ~1 KB (a cookie and a link token per visitor: 10,000 visitors a minute).
    # 0: off (every request verifies, every arrival signs; nothing is remembered per visitor).
    token_memo_entries: int = 20_000
    # A serving process's garbage collector (`server.engagement.collector`, applied by `app_from_env`):
    # a young-generation pass every this many net allocations (CPython's default: 700), after
    # start-up's objects are frozen; older generations only in a full collection every
    # `gc_full_interval_s` (a stall of tens of ms, once per interval). 0: CPython's defaults.
    gc_gen0_threshold: int = 10_000
    gc_full_interval_s: float = 300.0
    # The most a page request waits on Redis before it serves the fallback.
    redis_timeout_s: float = 0.25
    # The longest a request body may take to arrive, from its first read to its last byte: a
    # client that announces a body and then stalls (slowloris) gets 408 and a closed connection
    # instead of holding it (`server.bodies`; the input limits in docs/campaigns.md).
    body_read_timeout_s: float = BODY_READ_MAX_SECONDS
    # Readiness probe budget: Redis must answer PING within this.
    readiness_timeout_s: float = 0.2
    # Consecutive Redis faults that open the circuit breaker, and how long it stays open
    # before one probe request is let through.
    breaker_failures: int = 3
    breaker_reset_s: float = 2.0
    # Threads that may wait on Redis at once for request-path reads; a hung Redis can tie
    # up at most these, never the whole thread pool.
    redis_threads: int = 16
    # How long the campaign index (which tenant owns a campaign id) is trusted, including
    # "no such campaign": bounds Redis reads caused by requests for unknown ids.
    campaign_index_ttl_s: float = 5.0
    # Background re-reads of a loaded campaign's config and IP ranges.
    config_refresh_s: float = 30.0
    ip_refresh_s: float = 60.0
    # Change messages trigger an IP-range reload at most this often (publishes come in bursts).
    ip_reload_min_interval_s: float = 5.0
    # The watcher's pub/sub poll: the longest it takes to notice a stop request.
    watcher_poll_s: float = 0.5
    # Back-off of a watcher whose Redis connection failed, doubled up to the maximum.
    watcher_backoff_s: float = 0.2
    watcher_backoff_max_s: float = 5.0
    # Engagement events waiting to be written; past this, new events are dropped and counted.
    event_queue_max: int = 10_000
    # Events written per Redis call (one Lua call runs them all), and the longest an event
    # waits for its batch. The writer thread shares the GIL
    # with the event loop: fewer, larger batches cost pages less.
    event_batch_max: int = 500
    event_flush_interval_s: float = 0.1
    # Events each tenant's stream holds at most: past it, each write drops the oldest whole
    # entries (batches) until the stream is back under it (`server.engagement.events`).
    events_stream_maxlen: int = 1_000_000
    # Landing, continuation, /v1/zones and /q/{token} dispatched ahead of Starlette's stack
    # (`server.hot_routes`); False sends them through Starlette's routing like every other
    # route (same endpoints, same answers: tests compare the two, the benchmark times both).
    hot_routes: bool = True
