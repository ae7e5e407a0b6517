"""`welcomemat redis start|stop|status`: the embedded Redis used when REDIS_URL is unset."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    redis_cmd = sub.add_parser("redis", help="the embedded Redis used when REDIS_URL is unset")
    redis_cmd.add_argument("action", choices=["start", "stop", "status"])
    redis_cmd.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.redis_admin import run_redis

    return run_redis(args.action)
