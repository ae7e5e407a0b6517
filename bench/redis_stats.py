"""Redis server figures the benchmarks read around a measured run: commands and CPU."""

from __future__ import annotations

from collections import Counter

import redis

from welcomemat import keys

__all__ = ["account_bytes", "command_calls", "format_calls", "server_cpu_seconds"]


def command_calls(client: redis.Redis) -> Counter[str]:
    """Calls per command since the server started or its last `CONFIG RESETSTAT` (INFO commandstats)."""
    stats = client.info("commandstats")
    return Counter({name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()})


def server_cpu_seconds(client: redis.Redis) -> float:
    """User + system CPU seconds of the Redis server process so far (INFO cpu, all its threads)."""
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def format_calls(calls: Counter[str], per: float, top: int = 6) -> str:
    """`total (name n, ...)` per unit of work, the most called first."""
    total = sum(calls.values()) / per
    parts = ", ".join(f"{name} {n / per:.2f}" for name, n in calls.most_common(top) if n)
    return f"{total:.2f} ({parts})"


def account_bytes(client: redis.Redis, tenant: str, campaign: str, accounts: list[str]) -> dict[str, float]:
    """Mean `MEMORY USAGE` of each kind of key a published account has, over `accounts`
    (its tokens are signed, not stored: no key). Keys an account does not have count 0."""
    kinds = {
        "zone set": lambda a: keys.zone_set_key(tenant, campaign, a),
        "previous zone set": lambda a: keys.previous_zone_set_key(tenant, campaign, a),
        "version counter": lambda a: keys.zone_set_version_key(tenant, campaign, a),
        "explain record": lambda a: keys.explain_key(tenant, campaign, a),
        "account record": lambda a: keys.account_record_key(tenant, a),
    }
    return {
        kind: sum(int(client.memory_usage(key(a), samples=0) or 0) for a in accounts) / max(len(accounts), 1)
        for kind, key in kinds.items()
    }
