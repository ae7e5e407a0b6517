"""Everything one renderer app owns, built once in `create_app` and shared by its routes.

Settings, the Redis client, the token signer, caches, the campaign registry and its
watcher threads, the event writer and the metrics live here, on `app.state.renderer`,
instead of in module globals: two apps in one process (tests, the benchmark) never
share a cache or a registry.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import redis

from server.campaigns import CampaignRegistry, CampaignState
from server.engagement.events import EventWriter
from server.identify import Identifier, TrustedProxies
from server.known_visitors import KnownAddresses, KnownVisitors
from server.metrics import RendererMetrics
from server.redis_guard import FaultKind, RedisGuard
from server.render import TEMPLATES_DIR, PageRenderer, RenderedPage, template_environment
from server.tuning import RendererTuning
from server.visit import VisitResolver
from server.visitor import Visitor
from server.watcher import CampaignWatcher
from server.zone_cache import ZoneSetCache
from server.zone_set_reader import ZoneSetReader
from welcomemat.campaign.view import CampaignView
from welcomemat.errors import AuditError
from welcomemat.records.audit import ACTOR_MAX_CHARS, Auditor, Via
from welcomemat.security.credential_changes import fingerprints, record_credentials
from welcomemat.security.tokens import TokenSigner
from welcomemat.settings import Settings
from welcomemat.storage.breaker import CircuitBreaker

__all__ = ["RendererState"]

log = logging.getLogger(__name__)


class RendererState:
    """The renderer app's state: its components, built once; `close()` stops its threads."""

    def __init__(
        self,
        settings: Settings,
        client: redis.Redis,
        *,
        clock: Callable[[], float] = time.time,
        tuning: RendererTuning | None = None,
        templates_dir: Path = TEMPLATES_DIR,
    ) -> None:
        self.settings = settings
        self.client = client
        self.clock = clock
        self.tuning = tuning = tuning or RendererTuning()
        self.metrics = metrics = RendererMetrics()
        self.signer = TokenSigner.from_setting(settings.secret, clock=clock) if settings.secret else None
        if self.signer is None:
            log.warning("WELCOMEMAT_SECRET is not set: links, QR codes and cookies identify no one")
        self.identifier = Identifier(
            self.signer,
            clock=clock,
            on_reject=lambda kind, reason: metrics.token_rejections.labels(kind.value, reason).inc(),
            memo_entries=tuning.token_memo_entries,
        )
        self.proxies = TrustedProxies(settings.trusted_proxies)
        self.breaker = CircuitBreaker(tuning.breaker_failures, tuning.breaker_reset_s)
        self.guard = RedisGuard(
            timeout_s=tuning.redis_timeout_s,
            breaker=self.breaker,
            threads=tuning.redis_threads,
            on_fault=self._count_fault,
        )
        self.zone_cache = ZoneSetCache(tuning.zone_cache_entries, tuning.zone_cache_ttl_s)
        self.zone_set_reader = ZoneSetReader(client, self.zone_cache, self.guard, metrics)
        self.pages = PageRenderer(
            template_environment(templates_dir), tuning.render_cache_entries, metrics, templates_dir
        )
        self.known_pages: KnownVisitors[RenderedPage] = KnownVisitors(
            self.identifier, self.zone_cache, max_entries=tuning.known_visitor_entries, clock=clock
        )
        self.known_page_addresses: KnownAddresses[RenderedPage] = KnownAddresses(
            self.zone_cache, max_entries=tuning.known_visitor_entries, clock=clock
        )
        self.campaigns = CampaignRegistry(
            client, self.guard, index_ttl_s=tuning.campaign_index_ttl_s, on_loaded=self._watch
        )
        self.events = EventWriter(
            client,
            metrics,
            queue_max=tuning.event_queue_max,
            batch_max=tuning.event_batch_max,
            flush_interval_s=tuning.event_flush_interval_s,
            stream_maxlen=tuning.events_stream_maxlen,
        )
        # The pages' request steps (`server.visit`), their answer a rendered page.
        self.page_visits: VisitResolver[RenderedPage] = VisitResolver(
            self, self.known_pages, self.known_page_addresses, self._render
        )
        self.watchers: dict[tuple[str, str], CampaignWatcher] = {}
        self._watch_lock = threading.Lock()
        self._closed = False

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _render(self, view: CampaignView, page_id: str, visitor: Visitor) -> RenderedPage:
        return self.pages.render(view, page_id, visitor.arm, visitor.zone_set, self.now())

    def start(self) -> None:
        self.events.start()
        self._record_credentials()

    def _record_credentials(self) -> None:
        """Audit-log new signing keys or bearer tokens, once per change across renderers
        (`welcomemat.security.credential_changes`). Redis down: logged, and the renderer starts anyway."""
        tokens = {f"admin {c.actor}": c.token for c in self.settings.admin_credentials()}
        tokens.update({f"CRM {c.actor}": c.token for c in self.settings.crm_credentials()})
        current = fingerprints(self.settings.secret, tokens)
        auditor = Auditor(
            f"renderer@{socket.gethostname()}"[:ACTOR_MAX_CHARS],
            Via.STARTUP,
            lambda: datetime.fromtimestamp(self.clock(), UTC),
        )
        try:
            entry = record_credentials(self.client, current, auditor)
        except (redis.RedisError, AuditError) as exc:
            log.warning("credentials not checked against the last recorded (%s)", exc)
            return
        if entry is not None:
            log.info("credentials changed: %s (audit-logged)", entry.detail)

    def close(self) -> None:
        """Stop watchers and the event writer (after a last flush)."""
        self._closed = True
        with self._watch_lock:
            watchers = list(self.watchers.values())
            self.watchers.clear()
        for watcher in watchers:
            watcher.stop()
        self.events.close()

    def _watch(self, state: CampaignState) -> None:
        if self._closed:
            return
        key = (state.tenant, state.campaign_id)
        with self._watch_lock:
            old = self.watchers.get(key)
            if old is not None and old.alive:
                old.state = state
                return
            watcher = CampaignWatcher(
                state,
                self.client,
                self.zone_cache,
                self.tuning,
                self.metrics,
                on_gone=self.campaigns.forget,
            )
            self.watchers[key] = watcher
        watcher.start()

    def _count_fault(self, op: str, kind: FaultKind) -> None:
        self.metrics.redis_errors.labels(op, kind).inc()
