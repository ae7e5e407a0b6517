"""`welcomemat redis start|stop|status`: the embedded Redis used when REDIS_URL is unset."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    redis_cmd = sub.add_parser(
        "redis",
        help="the embedded Redis used when REDIS_URL is unset",
        description="The embedded Redis every command uses when REDIS_URL is unset, kept under "
        "WELCOMEMAT_HOME (its socket, append-only file and log). `status` exits 1 when it is not running. "
        "With REDIS_URL set the embedded Redis is not used: `status` says so, `start` and `stop` exit 2.",
    )
    redis_cmd.add_argument(
        "action", choices=["start", "stop", "status"], help="start it, stop it, or say whether it runs"
    )
    redis_cmd.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.redis_admin import run_redis

    return run_redis(args.action)
