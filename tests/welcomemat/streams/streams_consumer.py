"""A consumer process for tests/test_streams.py: the core loop with a handler that records its effects.

    python -m tests.welcomemat.streams.streams_consumer REDIS_URL NAME [--once] [--hang-after N] [--slow-s S]
        [--claim-idle-ms MS] [--batch N]

Each entry's effect (`apply_effect`) counts once however often the entry is handled, the
way the real handlers make a redelivery harmless; how often it was handled is counted too.
`--hang-after N` applies N entries of its first batch, says so (`HOLDING_KEY`), then hangs
without acknowledging: the test kills it there. `--slow-s` makes each batch take that long,
after saying it started (`STARTED_KEY`). Prints its counters as JSON on exit.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

import redis

from welcomemat.stop_signals import stop_on_signals
from welcomemat.storage.redis_client import redis_from_url
from welcomemat.streams.consumer import StreamConsumer
from welcomemat.streams.handler import ACK, ConsumerOptions, Delivery, Outcome, Stream, StreamHandler

STREAM = Stream(
    key="streams-test:{t}:jobs",
    group="testers",
    ttl_s=3600,
    label="the test stream",
    dead_letter_key="streams-test:{t}:dead",
    scope=("t",),
)
EFFECTS_KEY = "streams-test:{t}:effects"  # item -> times its effect was applied (must stay 1)
HANDLED_KEY = "streams-test:{t}:handled"  # item -> times it was handed to a handler
HOLDING_KEY = "streams-test:{t}:holding"
STARTED_KEY = "streams-test:{t}:started"

# The effect, once per item: a marker decides, as the sync's seen markers and the worker's
# first-XACK count do.
_EFFECT_LUA = """
redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
if redis.call('SET', KEYS[1], '1', 'NX') then redis.call('HINCRBY', KEYS[2], ARGV[1], 1) return 1 end
return 0
"""


def item_of(delivery: Delivery) -> str:
    return delivery.fields[b"item"].decode()


class RecordingHandler(StreamHandler):
    def __init__(self, client: redis.Redis, *, hang_after: int | None = None, slow_s: float = 0.0) -> None:
        self.client = client
        self.hang_after = hang_after
        self.slow_s = slow_s
        self._effect = client.register_script(_EFFECT_LUA)
        self.batches: list[list[Delivery]] = []

    def streams(self) -> Sequence[Stream]:
        return [STREAM]

    def handle(self, batch: Sequence[Delivery]) -> Sequence[Outcome]:
        self.batches.append(list(batch))
        if self.slow_s:
            self.client.rpush(STARTED_KEY, len(batch))
            time.sleep(self.slow_s)
        for n, delivery in enumerate(batch):
            if self.hang_after is not None and n == self.hang_after:
                self.client.rpush(HOLDING_KEY, len(batch))
                time.sleep(3600)  # killed here: read, partly applied, never acknowledged
            apply_effect(self.client, self._effect, item_of(delivery))
        return [ACK] * len(batch)


def apply_effect(client: redis.Redis, script: object, item: str) -> None:
    marker = f"streams-test:{{t}}:seen:{item}"
    script(keys=[marker, EFFECTS_KEY, HANDLED_KEY], args=[item])  # type: ignore[operator]


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("name")
    parser.add_argument("--once", action="store_true")
    parser.add_argument("--hang-after", type=int, default=None)
    parser.add_argument("--slow-s", type=float, default=0.0)
    parser.add_argument("--claim-idle-ms", type=int, default=60_000)
    parser.add_argument("--batch", type=int, default=10)
    args = parser.parse_args(argv)
    client = redis_from_url(args.url, connect_timeout_s=5.0, socket_timeout_s=10.0)
    handler = RecordingHandler(client, hang_after=args.hang_after, slow_s=args.slow_s)
    consumer = StreamConsumer(
        client,
        handler,
        ConsumerOptions(
            name=args.name, once=args.once, batch=args.batch, block_ms=100, claim_idle_ms=args.claim_idle_ms
        ),
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    with stop_on_signals(consumer.stop_event):
        stats = consumer.run()
    print(json.dumps(vars(stats)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
