#!/usr/bin/env python3
"""Redis's CPU per engagement event, by how the events are written.

    .venv/bin/python bench/redis_event_cost.py [--events 60000] [--batch 100] [--maxlen 100000]

At one worker the bench pins Redis to the CPU wrk runs on, so what Redis spends on each
request's event is time the load generator does not run; in production it is the event
stream's share of the Redis server. Each way writes the same view events (the renderer's 15
fields) to a fresh stream on an embedded Redis, in batches, and reads Redis's own CPU
(`INFO cpu`) before and after:

- `renderer`: the renderer's batch script (`server.engagement.events`, one call and one stream
  entry per batch, `welcomemat.records.event_entries.BATCH_FIELD`);
- `lua, entry per event`: the script the renderer ran before (one XADD per event, its fields
  named; kept here for the comparison);
- `pipeline`: one XADD per event with all fields, in a redis-py pipeline;
- `pipeline, 4 fields`: the same with the same-work reference's four fields.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from server.engagement import events  # noqa: E402
from server.engagement.events import EngagementEvent, EventType  # noqa: E402
from welcomemat import keys  # noqa: E402
from welcomemat.storage.embedded_redis import temporary_redis  # noqa: E402

# Every way writes the same tenant's stream (emptied between ways): the renderer's script takes
# its count beside it, in its slot.
STREAM = keys.events_stream_key("acme")

WAYS = ("renderer", "lua, entry per event", "pipeline", "pipeline, 4 fields")

# The renderer's script until 2026-12-04: one entry per event (KEYS[1] the stream; ARGV maxlen,
# TTL, the batch as a JSON array of [dedup key or null, *values], the dedup TTL).
_ENTRY_PER_EVENT_LUA = (
    "local names = {"
    + ",".join(f"'{name}'" for name in events._FIELDS)
    + """}
local entries = cjson.decode(ARGV[3])
local written = 0
for _, entry in ipairs(entries) do
  local dedup = entry[1]
  if dedup == cjson.null or redis.call('SET', dedup, '1', 'NX', 'EX', ARGV[4]) then
    local fields = {}
    for i, name in ipairs(names) do
      local value = entry[i + 1]
      if value ~= cjson.null then
        fields[#fields + 1] = name
        fields[#fields + 1] = value
      end
    end
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', unpack(fields))
    written = written + 1
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return written
"""
)


def redis_cpu_s(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def view_events(count: int) -> list[EngagementEvent]:
    return [
        EngagementEvent(
            type=EventType.VIEW,
            tenant="acme",
            campaign="q4-pipeline",
            view_id=f"v{i:015d}",
            ts_ms=1_764_800_000_000 + i,
            arm="personal",
            account=f"acct_{i % 32:06d}",
            contact=f"contact_{i}",
            rung="personal",
            zone_set_version=3,
            identified_by="link",
            variant="a",
            page="landing",
        )
        for i in range(count)
    ]


def write(
    client: redis.Redis, scripts: dict[str, Any], way: str, batch: list[EngagementEvent], maxlen: int
) -> None:
    if way == "renderer":
        for encoded in events._serialise(batch).values():
            scripts[way](keys=encoded.script_keys("acme"), args=encoded.script_args(maxlen))
        return
    if way == "lua, entry per event":
        rows = [(e.dedup_key, *e._values()) for e in batch]
        payload = json.dumps(rows, separators=(",", ":"))
        scripts[way](keys=[STREAM], args=[maxlen, 86_400, payload, 3_600])
        return
    pipe = client.pipeline(transaction=False)
    for event in batch:
        fields = {n: v for n, v in zip(events._FIELDS, event._values(), strict=True) if v is not None}
        if way == "pipeline, 4 fields":
            fields = dict(list(fields.items())[:4])
        pipe.xadd(STREAM, fields, maxlen=maxlen, approximate=True)  # type: ignore[arg-type]
    pipe.execute()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument(
        "--maxlen",
        type=int,
        default=100_000,
        help="the stream's length in events (below --events, the writes trim it as they go)",
    )
    args = parser.parse_args()
    if args.events < 1 or args.batch < 1 or args.maxlen < 1:
        parser.error("--events, --batch and --maxlen at least 1")
    all_events = view_events(args.events)
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
        client = redis.Redis.from_url(url)
        scripts = {
            "renderer": client.register_script(events._WRITE_BATCH_LUA),
            "lua, entry per event": client.register_script(_ENTRY_PER_EVENT_LUA),
        }
        print(
            f"{args.events:,} view events in batches of {args.batch}, {len(events._FIELDS)} fields each, "
            f"the stream trimmed at {args.maxlen:,} events"
        )
        print(f"{'written as':<22} {'redis cpu us/event':>18} {'wall us/event':>14} {'bytes/event':>12}")
        for way in WAYS:
            client.delete(*events._TenantBatch.script_keys("acme"))
            cpu0, wall0 = redis_cpu_s(client), time.perf_counter()
            for start in range(0, args.events, args.batch):
                write(client, scripts, way, all_events[start : start + args.batch], args.maxlen)
            cpu = (redis_cpu_s(client) - cpu0) / args.events * 1e6
            wall = (time.perf_counter() - wall0) / args.events * 1e6
            size = (client.memory_usage(STREAM, samples=0) or 0) / args.events
            print(f"{way:<22} {cpu:>18.2f} {wall:>14.2f} {size:>12.0f}")


if __name__ == "__main__":
    main()
