#!/usr/bin/env python3
"""What `welcomemat erase` removes on a demo-sized population, and what it leaves.

    .venv/bin/python bench/erase_figures.py [--accounts 1200] [--visited 50] [--json]

On a temporary embedded Redis: the example campaign precomputed for `--accounts` example
accounts (the demo's 1,200 by default; offline composer), Dymaxa approved, a renderer visited
by Dymaxa's contact (link, return visit by cookie, QR scan, the account's own link) and by
`--visited` other accounts' links, the events folded by `welcomemat sync`. Then, through the
real command line, `welcomemat erase` of the account Dymaxa, and of one person of another
account (by e-mail address). For each, printed:

- the keys in Redis and their total size (`MEMORY USAGE`) before and after;
- what names the subject, by kind of key (a scan of the whole database that knows nothing of
  the key schema, `tests/test_data_subject_requests.py`'s): keys, hash fields, members and
  stream entries holding its id or address, before -> after;
- what `erase --json` says it removed, and how long it took;
- which keys whose name does not hold the subject changed: only shared ones that held an entry
  of it (the event stream, the campaign's journal and IP ranges, the CRM outbox, the person's
  account record) and the two that record the erasure (the audit log, the erasure list).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
from starlette.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.example_accounts import write_example_accounts  # noqa: E402
from tests.server.conftest import BASE_URL, SECRET, renderer_app, renderer_settings  # noqa: E402
from tests.test_data_subject_requests import (  # noqa: E402
    ACCOUNT,
    CAMPAIGN,
    CONTACT,
    EMAIL,
    TENANT,
    holding,
    link,
    precompute,
    sync,
)
from welcomemat import keys  # noqa: E402
from welcomemat.records.audit import Auditor, Via  # noqa: E402
from welcomemat.records.event_entries import entry_events  # noqa: E402
from welcomemat.security.tokens import TokenKind, TokenSigner  # noqa: E402
from welcomemat.storage.embedded_redis import temporary_redis  # noqa: E402
from welcomemat.storage.redis_client import redis_from_url  # noqa: E402
from welcomemat.zones.review import decide  # noqa: E402

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
REPO_ROOT = Path(__file__).resolve().parent.parent


def snapshot(client: redis.Redis) -> dict[bytes, bytes]:
    return {key: client.dump(key) or b"" for key in client.scan_iter(count=1000)}


def memory(client: redis.Redis) -> int:
    return sum(int(client.memory_usage(key) or 0) for key in client.scan_iter(count=1000))


def erase(subject: str, redis_url: str, home: Path) -> tuple[dict[str, Any], float]:
    env = {**os.environ, "REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(home), "WELCOMEMAT_SECRET": SECRET}
    started = time.perf_counter()
    ran = subprocess.run(
        [WELCOMEMAT, "erase", subject, "--tenant", TENANT, "--reason", "bench", "--by", "bench", "--json"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    took = time.perf_counter() - started
    return json.loads(ran.stdout.splitlines()[0]), took


def figures(
    client: redis.Redis, subject: str, needles: tuple[str, ...], redis_url: str, home: Path
) -> dict[str, Any]:
    keys_before, bytes_before = client.dbsize(), memory(client)
    before_snapshot = snapshot(client)
    before = {needle: holding(client, needle) for needle in needles}
    report, took = erase(subject, redis_url, home)
    after = {needle: holding(client, needle) for needle in needles}
    after_snapshot = snapshot(client)
    naming = {k for k in before_snapshot if any(n.encode() in k for n in needles)}
    changed_others = sorted(
        k.decode()
        for k in set(before_snapshot) | set(after_snapshot)
        if k not in naming and before_snapshot.get(k) != after_snapshot.get(k)
    )
    return {
        "subject": subject,
        "keys": [keys_before, client.dbsize()],
        "bytes": [bytes_before, memory(client)],
        "seconds": round(took, 2),
        "removed": {k: n for k, n in report["removed"].items() if n},
        "naming_the_subject": {
            needle: {
                "total": [sum(before[needle].values()), sum(after[needle].values())],
                "by_kind": {
                    kind: [before[needle][kind], after[needle][kind]]
                    for kind in sorted(set(before[needle]) | set(after[needle]))
                },
            }
            for needle in needles
        },
        "other_keys_changed": changed_others,
    }


def populate(client: redis.Redis, folder: Path, accounts: int, visited: int) -> list[dict[str, Any]]:
    path = write_example_accounts(folder / "accounts.jsonl", accounts)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    started = time.perf_counter()
    precompute(client, path)
    print(f"precomputed {accounts} accounts in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    reviewer = Auditor("bench", Via.CLI, lambda: datetime.now(UTC))
    decide(client, TENANT, CAMPAIGN, ACCOUNT, approve=True, auditor=reviewer)
    signer = TokenSigner([SECRET])
    with TestClient(renderer_app(renderer_settings(), redis_client=client), base_url=BASE_URL) as http:
        http.get(f"/c/{CAMPAIGN}", params={"wm": link()})
        http.get(f"/c/{CAMPAIGN}")  # a return visit, by cookie
        http.get(f"/q/{link(kind=TokenKind.QR)}", follow_redirects=False)
        http.get(f"/c/{CAMPAIGN}", params={"wm": link(None)})
        for row in rows[1 : 1 + visited]:
            http.cookies.clear()
            contact = row["contacts"][0]["contact_id"] if row.get("contacts") else None
            token = signer.sign(
                TokenKind.LINK,
                tenant=TENANT,
                campaign=CAMPAIGN,
                account=row["account_id"],
                contact=contact,
                ttl_s=3600,
            )
            http.get(f"/c/{CAMPAIGN}", params={"wm": token})
        while http.app.state.renderer.events.flush_once():  # type: ignore[attr-defined]
            pass
    sync(client)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--accounts", type=int, default=1200)
    parser.add_argument("--visited", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, temporary_redis(Path(folder) / "redis") as url:
        client = redis_from_url(url, connect_timeout_s=5.0, socket_timeout_s=30.0)
        rows = populate(client, Path(folder), args.accounts, args.visited)
        person = next(r for r in rows[1 : 1 + args.visited] if r.get("contacts"))
        person_contact = person["contacts"][0]
        results = [
            figures(client, ACCOUNT, (ACCOUNT, EMAIL, CONTACT), url, Path(folder) / "home"),
            figures(
                client,
                person_contact["email"],
                (person_contact["email"], person_contact["contact_id"]),
                url,
                Path(folder) / "home",
            ),
        ]
        events = sum(
            len(entry_events(raw_id.decode(), fields))
            for raw_id, fields in client.xrange(keys.events_stream_key(TENANT))
        )
    if args.json:
        print(json.dumps({"accounts": args.accounts, "visited": args.visited + 1, "results": results}))
        return 0
    print(f"{args.accounts} accounts, {args.visited + 1} visited; {events} events left in the stream")
    for result in results:
        kb = [round(b / 1024) for b in result["bytes"]]
        print(f"\nerase {result['subject']}: {result['seconds']} s")
        print(f"  Redis keys {result['keys'][0]} -> {result['keys'][1]}, {kb[0]} -> {kb[1]} KiB")
        print("  removed: " + ", ".join(f"{k} {n}" for k, n in result["removed"].items()))
        for needle, found in result["naming_the_subject"].items():
            cells = ", ".join(f"{k} {a}->{b}" for k, (a, b) in found["by_kind"].items())
            print(f"  naming {needle}: {found['total'][0]} -> {found['total'][1]} ({cells})")
        print(f"  other keys changed: {', '.join(result['other_keys_changed']) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
