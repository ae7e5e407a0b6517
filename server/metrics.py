"""Prometheus metrics of one renderer app, in a registry of its own.

A registry per app (not the process-global default) so that several apps in one process
(tests, the benchmark) never share or double-register series. Children with fixed label
values are bound once here: `labels()` costs a dict lookup and a lock per call, which
the hot path should not pay.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["METRICS_CONTENT_TYPE", "RendererMetrics"]

METRICS_CONTENT_TYPE = CONTENT_TYPE_LATEST

# Render latency buckets, in seconds: a cached page takes well under a millisecond, a
# cache miss a Redis round trip, a fault at most the Redis budget (0.25 s by default).
_LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


class RendererMetrics:
    """Every series the renderer exposes on `/metrics`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "welcomemat_page_requests",
            "Pages served, by route, arm and the best rung among the page's zones (plain: fail closed).",
            ["route", "arm", "rung"],
            registry=r,
        )
        self.zones = Counter(
            "welcomemat_zones_served", "Zones served, by rung.", ["rung"], registry=r
        )
        self.identifications = Counter(
            "welcomemat_identifications",
            "How page visitors were identified (link, cookie, ip, anonymous).",
            ["method"],
            registry=r,
        )
        self.token_rejections = Counter(
            "welcomemat_token_rejections",
            "Tokens refused (treated as anonymous), by token kind and reason.",
            ["kind", "reason"],
            registry=r,
        )
        self.zone_cache = Counter(
            "welcomemat_zone_cache", "Zone-set cache lookups, by result (hit, miss).", ["result"], registry=r
        )
        self.render_cache = Counter(
            "welcomemat_render_cache", "Rendered-page cache lookups, by result (hit, miss).", ["result"], registry=r
        )
        self.invalidations = Counter(
            "welcomemat_zone_cache_invalidations",
            "Zone sets dropped from the cache by change messages or subscriber reconnects.",
            ["cause"],
            registry=r,
        )
        self.redis_errors = Counter(
            "welcomemat_redis_errors",
            "Redis faults seen by the renderer, by operation and kind (error, timeout, short_circuit).",
            ["op", "kind"],
            registry=r,
        )
        self.stored_value_errors = Counter(
            "welcomemat_stored_value_errors", "Stored values that did not decode (fallback served).", registry=r
        )
        self.render_latency = Histogram(
            "welcomemat_render_seconds",
            "Time to build a page response, by route.",
            ["route"],
            buckets=_LATENCY_BUCKETS_S,
            registry=r,
        )
        self.events_written = Counter(
            "welcomemat_events_written", "Engagement events written to Redis.", registry=r
        )
        self.events_dropped = Counter(
            "welcomemat_events_dropped",
            "Engagement events dropped, by reason (queue_full, write_failed).",
            ["reason"],
            registry=r,
        )
        self.events_queued = Gauge(
            "welcomemat_events_queued", "Engagement events waiting to be written.", registry=r
        )
        self.breaker_open = Gauge(
            "welcomemat_redis_breaker_open", "1 while the Redis circuit breaker is open.", registry=r
        )
        self.faults = Counter(
            "welcomemat_page_faults",
            "Unexpected errors while building a page (the plain page was served).",
            ["route"],
            registry=r,
        )
        self.zone_cache_hit = self.zone_cache.labels("hit")
        self.zone_cache_miss = self.zone_cache.labels("miss")
        self.render_cache_hit = self.render_cache.labels("hit")
        self.render_cache_miss = self.render_cache.labels("miss")

    def exposition(self) -> bytes:
        """The text exposition format of every series."""
        return generate_latest(self.registry)
