"""`welcomemat redis start|stop|status`: the embedded Redis of `WELCOMEMAT_HOME`."""

from __future__ import annotations

from welcomemat.settings import Settings
from welcomemat.storage.embedded_redis import EmbeddedRedis

__all__ = ["run_redis"]


def run_redis(action: str) -> int:
    settings = Settings.from_env()
    if settings.redis_url:
        print(f"REDIS_URL is set ({settings.redis_url}): the embedded Redis is not used")
        return 0 if action == "status" else 2
    embedded = EmbeddedRedis()
    if action == "start":
        print(f"embedded Redis running at {embedded.ensure_running(settings.home)}")
    elif action == "stop":
        stopped = embedded.stop(settings.home)
        print("embedded Redis stopped" if stopped else "embedded Redis was not running")
    else:
        status = embedded.status(settings.home)
        state = f"running (pid {status.pid})" if status.running else "not running"
        print(f"embedded Redis under {status.home}: {state}; socket {status.socket_path}")
        return 0 if status.running else 1
    return 0
