"""One background thread per loaded campaign keeps the process's copy of it current.

It subscribes to the campaign's change channel (`ZoneSetStore.subscribe_changes`) and
drops each announced account from the zone-set cache. Whenever it (re)subscribes it
clears the whole campaign from the cache: messages published while it was not listening
are lost (pub/sub has no memory), and the TTL would otherwise be the only safety net.

Between messages it re-reads the campaign config (rebuilding the view only when the
stored bytes changed) and the IP ranges and the tenant's revocations (`welcomemat.records.erasure`):
on a timer, and soon after change messages (precompute writes ranges in the runs that
publish zone sets). An erasure's change message (version 0) reloads the ranges and the
revocations at once, before the account is dropped from the cache, so the very next request
with an erased subject's token is anonymous; revocations that change also clear the
campaign from the cache (and so every remembered visitor answer). If the config is gone
from Redis the campaign is forgotten and the thread ends.

A thread, not an asyncio task: the store's pub/sub is the synchronous redis-py client,
and a blocking read here must never stall the event loop.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable

import redis
from pydantic import ValidationError
from redis.client import PubSub
from redis.exceptions import RedisError

from server.campaigns import CampaignState, load_ip_index
from server.metrics import RendererMetrics
from server.tuning import RendererTuning
from server.zone_cache import ZoneSetCache
from welcomemat import keys
from welcomemat.campaign.view import build_campaign_view
from welcomemat.errors import StoredValueError, StoreError
from welcomemat.records.erasure import load_revocations
from welcomemat.zones.store import ZoneSetChange, ZoneSetStore

__all__ = ["CampaignWatcher"]

log = logging.getLogger(__name__)


class CampaignWatcher:
    """Invalidation and refresh for one campaign; `start()`, then `stop()`."""

    def __init__(
        self,
        state: CampaignState,
        client: redis.Redis,
        cache: ZoneSetCache,
        tuning: RendererTuning,
        metrics: RendererMetrics,
        *,
        on_gone: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = state
        self._client = client
        self._store = ZoneSetStore(client)
        self._cache = cache
        self._tuning = tuning
        self._metrics = metrics
        self._on_gone = on_gone
        self._clock = clock
        self._stop = threading.Event()
        self.subscribed = threading.Event()  # set while listening; tests wait on it
        self.subscriptions = 0
        self._thread = threading.Thread(
            target=self._run, name=f"wm-watch-{state.tenant}/{state.campaign_id}", daemon=True
        )
        now = clock()
        self._config_due = now + tuning.config_refresh_s
        self._ip_due = now + tuning.ip_refresh_s
        self._ip_dirty_since: float | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # -- the thread ------------------------------------------------------------------------

    def _run(self) -> None:
        backoff = self._tuning.watcher_backoff_s
        while not self._stop.is_set():
            pubsub: PubSub | None = None
            try:
                pubsub = self._store.subscribe_changes(self.state.tenant, self.state.campaign_id)
                self.subscriptions += 1
                # Whatever was announced while we were not listening is lost: start clean.
                self._cache.clear_campaign(self.state.tenant, self.state.campaign_id)
                if self.subscriptions > 1:
                    self._metrics.invalidations.labels("resubscribe").inc()
                    self._refresh_config()
                    self._refresh_ip_ranges()
                self.subscribed.set()
                backoff = self._tuning.watcher_backoff_s
                self._listen(pubsub)
            except (RedisError, StoreError, OSError) as exc:
                log.info(
                    "watcher %s/%s: Redis unavailable (%s)", self.state.tenant, self.state.campaign_id, exc
                )
            finally:
                self.subscribed.clear()
                if pubsub is not None:
                    try:
                        pubsub.close()
                    except (RedisError, OSError):
                        pass
            if self._stop.wait(backoff):
                break
            backoff = min(backoff * 2, self._tuning.watcher_backoff_max_s)

    def _listen(self, pubsub: PubSub) -> None:
        while not self._stop.is_set():
            message = pubsub.get_message(timeout=self._tuning.watcher_poll_s)
            if message is not None and message.get("type") in ("message", b"message"):
                self._on_change(message.get("data"))
            now = self._clock()
            if now >= self._config_due and not self._refresh_config():
                return  # the campaign is gone
            dirty = self._ip_dirty_since
            if now >= self._ip_due or (
                dirty is not None and now - dirty >= self._tuning.ip_reload_min_interval_s
            ):
                self._refresh_ip_ranges()

    def _on_change(self, data: object) -> None:
        try:
            change = ZoneSetChange.model_validate_json(data if isinstance(data, bytes | str) else b"")
        except ValidationError:
            log.warning("watcher %s/%s: unreadable change message", self.state.tenant, self.state.campaign_id)
            return
        if (change.tenant, change.campaign) != (self.state.tenant, self.state.campaign_id):
            return
        if change.version == 0:  # an erasure: its tokens and IP ranges stop identifying anyone now
            self._refresh_ip_ranges()
        if self._cache.invalidate((change.tenant, change.campaign, change.account_id), change.version):
            self._metrics.invalidations.labels("change").inc()
        if self._ip_dirty_since is None:
            self._ip_dirty_since = self._clock()

    def _refresh_config(self) -> bool:
        """Re-read the config; False when it is gone (the campaign was forgotten)."""
        self._config_due = self._clock() + self._tuning.config_refresh_s
        tenant, campaign_id = self.state.tenant, self.state.campaign_id
        raw = self._client.get(keys.campaign_config_key(tenant, campaign_id))
        if raw is None:
            log.warning("campaign %s/%s: config no longer in Redis; not served any more", tenant, campaign_id)
            self._on_gone(campaign_id)
            self._stop.set()
            return False
        data = raw if isinstance(raw, bytes) else str(raw).encode()
        if hashlib.sha256(data).hexdigest()[:16] != self.state.view.fingerprint:
            try:
                self.state.view = build_campaign_view(tenant, campaign_id, data)
            except StoredValueError as exc:  # keep serving the last good config
                self._metrics.stored_value_errors.inc()
                log.error("campaign %s/%s: %s; keeping the previous config", tenant, campaign_id, exc)
        return True

    def _refresh_ip_ranges(self) -> None:
        """The IP ranges and the tenant's revocations (they change together: an erasure drops both)."""
        self._ip_due = self._clock() + self._tuning.ip_refresh_s
        self._ip_dirty_since = None
        tenant, campaign_id = self.state.tenant, self.state.campaign_id
        ip_index = load_ip_index(self._client, tenant, campaign_id)
        if not ip_index.same_ranges(self.state.ip_index):
            # A new object only when an address may be placed otherwise: answers remembered
            # by address (`server.known_visitors`) are keyed by the index that placed them.
            self.state.ip_index = ip_index
        revocations = load_revocations(self._client, tenant)
        if revocations != self.state.revocations:
            self.state.revocations = revocations
            self._cache.clear_campaign(tenant, campaign_id)  # answers remembered for revoked tokens go
