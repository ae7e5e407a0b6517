"""Prometheus metrics of one renderer app, in a registry of its own.

A registry per app (not the process-global default) so that several apps in one process
(tests, the benchmark) never share or double-register series.

Two kinds of series. Rare events (Redis faults, token refusals, dropped events) are
ordinary `prometheus_client` counters: thread-safe, a few microseconds each. What every
page request counts (requests by route/arm/rung, zones by rung, identifications, cache
hits, render latency) lives in `PageStats`: plain dict and list increments on the event
loop (a fraction of a microsecond; `labels().inc()` costs a lock and a lookup, and a page
counts seven things), turned into metric families only when `/metrics` is scraped. A page
is one increment of its (route, arm, rung, zones by rung, identification) combination,
split into the series at scrape time: a campaign has a handful of such combinations.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["LATENCY_BUCKETS_S", "METRICS_CONTENT_TYPE", "PageStats", "RendererMetrics"]

METRICS_CONTENT_TYPE = CONTENT_TYPE_LATEST

# Render latency buckets, in seconds: a cached page takes well under a millisecond, a
# cache miss a Redis round trip, a fault at most the Redis budget (0.25 s by default).
LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


class PageStats(Collector):
    """Per-request counters, updated on the event loop only, exported at scrape time."""

    def __init__(self) -> None:
        # (route, arm, best rung, zone rungs, identified by) -> pages: one increment per
        # request, split into the request, zone and identification series at scrape time.
        self._pages: dict[tuple[str, str, str, tuple[tuple[str, int], ...], str | None], int] = {}
        self._identifications: dict[str, int] = {}  # those counted apart from a page (QR scans)
        # Look-ups (hit, miss), and the hits that started a background re-read (refresh).
        self.zone_cache = {"hit": 0, "miss": 0, "refresh": 0}
        self.render_cache = {"hit": 0, "miss": 0}
        # Token-bearing requests answered from `server.known_visitors` (hit) or not (miss).
        self.known_visitors = {"hit": 0, "miss": 0}
        # Requests without a token answered from it by the account their address places them in
        # (hit), or not (miss).
        self.known_addresses = {"hit": 0, "miss": 0}
        # route -> per-bucket (not cumulative) counts, the last one for +Inf; and sums
        self._latency: dict[str, list[int]] = {}
        self._latency_sum: dict[str, float] = {}

    def count_identification(self, method: str) -> None:
        self._identifications[method] = self._identifications.get(method, 0) + 1

    def count_page(
        self,
        route: str,
        arm: str,
        best_rung: str,
        zone_rungs: tuple[tuple[str, int], ...],
        identified_by: str | None,
        seconds: float,
    ) -> None:
        key = (route, arm, best_rung, zone_rungs, identified_by)
        pages = self._pages
        pages[key] = pages.get(key, 0) + 1
        buckets = self._latency.get(route)
        if buckets is None:
            buckets = self._latency[route] = [0] * (len(LATENCY_BUCKETS_S) + 1)
            self._latency_sum[route] = 0.0
        buckets[bisect_left(LATENCY_BUCKETS_S, seconds)] += 1
        self._latency_sum[route] += seconds

    def counts(self) -> tuple[dict[tuple[str, str, str], int], dict[str, int], dict[str, int]]:
        """(requests by route, arm and rung; zones by rung; identifications by method)."""
        requests: dict[tuple[str, str, str], int] = {}
        zones: dict[str, int] = {}
        identifications = dict(self._identifications)
        for (route, arm, best_rung, zone_rungs, identified_by), pages in list(self._pages.items()):
            key = (route, arm, best_rung)
            requests[key] = requests.get(key, 0) + pages
            for rung, count in zone_rungs:
                zones[rung] = zones.get(rung, 0) + count * pages
            if identified_by is not None:
                identifications[identified_by] = identifications.get(identified_by, 0) + pages
        return requests, zones, identifications

    def collect(self) -> Iterator[Metric]:
        counted, zones, identifications = self.counts()
        requests = CounterMetricFamily(
            "welcomemat_page_requests",
            "Pages served, by route, arm and the best rung among the page's zones (plain: fail closed).",
            labels=["route", "arm", "rung"],
        )
        for (route, arm, rung), value in sorted(counted.items()):
            requests.add_metric([route, arm, rung], value)
        yield requests
        yield self._family("welcomemat_zones_served", "Zones served, by rung.", "rung", zones)
        yield self._family(
            "welcomemat_identifications",
            "How visitors were identified (link, qr, cookie, ip, anonymous).",
            "method",
            identifications,
        )
        yield self._family(
            "welcomemat_zone_cache",
            "Zone-set cache lookups, by result (hit, miss); refresh: hits that started a background re-read.",
            "result",
            self.zone_cache,
        )
        yield self._family(
            "welcomemat_render_cache",
            "Rendered-page cache lookups, by result (hit, miss).",
            "result",
            self.render_cache,
        )
        yield self._family(
            "welcomemat_known_visitor_cache",
            "Requests with a token answered from the returning-visitor cache, by result (hit, miss).",
            "result",
            self.known_visitors,
        )
        yield self._family(
            "welcomemat_known_address_cache",
            "Requests without a token answered from the returning-visitor cache by their address, "
            "by result (hit, miss).",
            "result",
            self.known_addresses,
        )
        latency = HistogramMetricFamily(
            "welcomemat_render_seconds", "Time to build a page response, by route.", labels=["route"]
        )
        for route, counts in sorted(self._latency.items()):
            cumulative, total = [], 0
            for bound, count in zip((*LATENCY_BUCKETS_S, float("inf")), counts, strict=True):
                total += count
                cumulative.append(("+Inf" if bound == float("inf") else repr(bound), total))
            latency.add_metric([route], cumulative, self._latency_sum[route])
        yield latency

    @staticmethod
    def _family(name: str, documentation: str, label: str, values: dict[str, int]) -> CounterMetricFamily:
        family = CounterMetricFamily(name, documentation, labels=[label])
        for value_label, value in sorted(values.items()):
            family.add_metric([value_label], value)
        return family


class RendererMetrics:
    """Every series the renderer exposes on `/metrics`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.pages = PageStats()
        r.register(self.pages)
        self.token_rejections = Counter(
            "welcomemat_token_rejections",
            "Tokens refused (treated as anonymous), by token kind and reason.",
            ["kind", "reason"],
            registry=r,
        )
        self.invalidations = Counter(
            "welcomemat_zone_cache_invalidations",
            "Zone sets dropped from the cache by change messages, or campaigns cleared on resubscribe.",
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
            "welcomemat_stored_value_errors",
            "Stored values that did not decode (fallback served).",
            registry=r,
        )
        self.events_written = Counter(
            "welcomemat_events_written", "Engagement events written to Redis.", registry=r
        )
        self.events_dropped = Counter(
            "welcomemat_events_dropped",
            "Engagement events dropped, by reason (queue_full, write_failed, duplicate).",
            ["reason"],
            registry=r,
        )
        self.events_queued = Gauge(
            "welcomemat_events_queued", "Engagement events waiting to be written.", registry=r
        )
        self.breaker_open = Gauge(
            "welcomemat_redis_breaker_open", "1 while the Redis circuit breaker is open.", registry=r
        )
        self.theme_fallbacks = Counter(
            "welcomemat_theme_page_fallbacks",
            "Themed pages served in the built-in frame instead, by reason (precompute: the account's "
            "page failed its check there; check: a sampled page failed at serve time; size: over the "
            "page limit; error: the theme's render failed).",
            ["reason"],
            registry=r,
        )
        self.admin_refusals = Counter(
            "welcomemat_admin_refusals",
            "Admin requests of a signed-in person refused with 403, by route and reason (no_origin, "
            "cross_origin, no_token, wrong_token: the CSRF check; role: not allowed to).",
            ["route", "reason"],
            registry=r,
        )
        self.faults = Counter(
            "welcomemat_page_faults",
            "Unexpected errors while building a page (the plain page was served).",
            ["route"],
            registry=r,
        )

    def exposition(self) -> bytes:
        """The text exposition format of every series."""
        return generate_latest(self.registry)
