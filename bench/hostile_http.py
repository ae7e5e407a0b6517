#!/usr/bin/env python3
"""What hostile requests cost a running renderer: memory, connection time, answers.

    .venv/bin/python bench/hostile_http.py [--megabytes 200] [--stall-seconds 30]

Starts its own embedded Redis in a temp folder and `welcomemat serve` on a free loopback port
(`WELCOMEMAT_ALLOWED_HOSTS=*`, an https `WELCOMEMAT_PUBLIC_URL`, an admin token), the example
campaign precomputed into it; then, over raw sockets, as an attacker sends them:

- `--megabytes` MB posted to `POST /admin/review/{campaign}/{account}/approve` (limit 1 KB),
  with its length declared and chunked: the answer, how long until it, and the server's RSS
  before and after (the process and its children, from /proc);
- a body declared as 10 GB and never sent, and one declared as 200 bytes (under the limit)
  and never sent: the answer and how long the connection is held (at most `--stall-seconds`);
- `GET /c/q4-pipeline/` with `Host: evil.example` and `X-Forwarded-Proto: http`: the answer
  and any `Location`;
- a beacon of 1,000 nested arrays: the answer;

and, at the end, how many lines of the server's log hold a traceback.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bench_mail import free_port, wait_ready, write_accounts

from welcomemat.storage.embedded_redis import temporary_redis

ROOT = Path(__file__).resolve().parents[1]
WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
SECRET = "bench-hostile-secret-0123456789abcdefghijklm"
ADMIN_TOKEN = "bench-hostile-admin-0123456789abcdefghijkl"
CAMPAIGN = "q4-pipeline"
REVIEW = f"/admin/review/{CAMPAIGN}/acct_dymaxa/approve"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
MB = 1024 * 1024


def rss_mib(pid: int) -> float:
    """Resident memory of a process and its children, MiB."""
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        pids += [int(c) for c in (task / "children").read_text().split()]
    total_kib = 0
    for p in pids:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total_kib += int(line.split()[1])
    return total_kib / 1024


def exchange(
    port: int, head: str, send_body: Callable[[socket.socket], None] | None = None, timeout_s: float = 60
) -> tuple[str, str, float]:
    """Send `head` (and the body, from a thread), read until the server closes: (status line,
    Location or '', seconds from the head to the close)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        started = time.monotonic()
        sock.sendall(head.encode())
        sender = threading.Thread(target=send_body, args=(sock,), daemon=True) if send_body else None
        if sender:
            sender.start()
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        held = time.monotonic() - started
    lines = data.split(b"\r\n\r\n", 1)[0].decode(errors="replace").split("\r\n")
    location = next(
        (line.split(":", 1)[1].strip() for line in lines if line.lower().startswith("location:")), ""
    )
    return (lines[0] or "(no answer)"), location, held


def flood(megabytes: int, chunked: bool) -> Callable[[socket.socket], None]:
    piece = b"x" * MB

    def send(sock: socket.socket) -> None:
        try:
            for _ in range(megabytes):
                sock.sendall(b"100000\r\n" + piece + b"\r\n" if chunked else piece)
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        except OSError:  # reset or broken pipe: the server stopped reading
            pass

    return send


def post_head(*, length: int | None) -> str:
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    return (
        f"POST {REVIEW} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {ADMIN_TOKEN}\r\n"
        f"Content-Type: application/json\r\n{framing}\r\n\r\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--stall-seconds", type=float, default=30)
    args = parser.parse_args()
    port = free_port()
    with (
        tempfile.TemporaryDirectory(prefix="bench-hostile-") as temp,
        temporary_redis(Path(temp) / "redis") as redis_url,
    ):
        env = dict(
            os.environ,
            REDIS_URL=redis_url,
            WELCOMEMAT_SECRET=SECRET,
            WELCOMEMAT_ADMIN_TOKEN=ADMIN_TOKEN,
            WELCOMEMAT_PUBLIC_URL="https://wm.example.com",
            WELCOMEMAT_ALLOWED_HOSTS="*",
        )
        accounts = Path(temp) / "accounts.jsonl"
        write_accounts(accounts, 20)
        precompute = [WELCOMEMAT, "precompute", str(ROOT / "examples" / "campaign.yaml"), str(accounts)]
        subprocess.run(precompute, env=env, check=False, capture_output=True)
        log = Path(temp) / "serve.log"
        with log.open("wb") as log_file:
            server = subprocess.Popen(
                [WELCOMEMAT, "serve", "--port", str(port), "--no-access-log"],
                env=env,
                stdout=log_file,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_ready(f"http://127.0.0.1:{port}", server)
            for chunked in (False, True):
                before = rss_mib(server.pid)
                head = post_head(length=None if chunked else args.megabytes * MB)
                status, _, held = exchange(port, head, flood(args.megabytes, chunked))
                framing = "chunked" if chunked else "declared"
                print(
                    f"{args.megabytes} MB to {REVIEW} ({framing}): {status} after {held:.2f} s; "
                    f"RSS {before:.0f} -> {rss_mib(server.pid):.0f} MiB"
                )
            for length in (10 * 1024**3, 200):
                status, _, held = exchange(port, post_head(length=length), timeout_s=args.stall_seconds)
                print(f"Content-Length {length:,} and no body: {status}; connection held {held:.2f} s")
            status, location, _ = exchange(
                port,
                f"GET /c/{CAMPAIGN}/ HTTP/1.1\r\nHost: evil.example\r\nX-Forwarded-Proto: http\r\n"
                "Connection: close\r\n\r\n",
            )
            print(f"GET /c/{CAMPAIGN}/ with Host: evil.example: {status}; Location: {location or 'none'}")
            body = "[" * 1000 + "]" * 1000
            status, _, _ = exchange(
                port,
                f"POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: {BROWSER}\r\n"
                f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}",
            )
            print(f"a beacon of 1,000 nested arrays: {status}")
        finally:
            server.terminate()
            server.wait(10)
        tracebacks = sum("Traceback" in line for line in log.read_text(errors="replace").splitlines())
        print(f"tracebacks in the server's log: {tracebacks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
