#!/usr/bin/env python3
"""Cost of the shared core's choke points, as ratios to a baseline measured in the same run.

    .venv/bin/python bench/bench_core.py [--repeat 7]

Baseline: `markupsafe.escape` of a 100-character zone text (what Jinja2 autoescape does
for every `{{ value }}`). Each row prints microseconds per call (best of --repeat runs)
and its ratio to the baseline, so figures from noisy machines stay comparable.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable

import markupsafe

from welcomemat.arms import Arm
from welcomemat.security.markup import clean_inline, escape, render_text
from welcomemat.security.tokens import TokenKind, TokenSigner
from welcomemat.security.urlgate import LinkAllowlist, gate_link

TEXT = "Congrats on the <em>Series A</em>, Dymaxa: four new SDRs in Amsterdam is a lot of onboarding & ramp."
ALLOWED = frozenset({"em", "strong"})


def best_us(fn: Callable[[], object], repeat: int) -> float:
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    allowlist = LinkAllowlist.from_hosts(["www.acmerevenue.example", "meet.acmerevenue.example"])
    cleaned = clean_inline(TEXT, ALLOWED)
    signer = TokenSigner(["k" * 40, "old" * 12])
    ids = {"tenant": "acme", "campaign": "q4-pipeline", "account": "acct_dymaxa", "contact": "c_joram"}
    token = signer.sign(TokenKind.LINK, **ids, ttl_s=3600)
    qr_token = signer.sign(TokenKind.QR, **ids, ttl_s=3600)
    old_key_token = TokenSigner(["old" * 12]).sign(TokenKind.LINK, **ids, ttl_s=3600)
    scope = {"tenant": "acme", "campaign": "q4-pipeline"}
    view = signer.view_template(**scope, arm=Arm.PERSONAL, rung="personal", account="acct_dymaxa")
    view_token = view.sign("v_3f9a2c")
    rows: list[tuple[str, Callable[[], object]]] = [
        ("baseline: markupsafe.escape", lambda: markupsafe.escape(TEXT)),
        ("markup.escape", lambda: escape(TEXT)),
        ("markup.render_text (stamped, request path)", lambda: render_text(TEXT, cleaned, ALLOWED)),
        ("markup.clean_inline (bleach, publish path)", lambda: clean_inline(TEXT, ALLOWED)),
        (
            "urlgate.gate_link (allowed)",
            lambda: gate_link("https://meet.acmerevenue.example/ramp", allowlist),
        ),
        (
            "urlgate.gate_link (refused)",
            lambda: gate_link("https://evil.example\\@meet.acmerevenue.example/", allowlist),
        ),
        ("tokens.sign (link)", lambda: signer.sign(TokenKind.LINK, **ids, ttl_s=3600)),
        ("tokens.sign (qr, compressed)", lambda: signer.sign(TokenKind.QR, **ids, ttl_s=3600)),
        ("tokens.verify (link)", lambda: signer.verify(TokenKind.LINK, token, **scope)),
        ("tokens.verify (link, second key)", lambda: signer.verify(TokenKind.LINK, old_key_token, **scope)),
        ("tokens.verify (qr, compressed)", lambda: signer.verify(TokenKind.QR, qr_token, **scope)),
        ("tokens.view_template(...).sign", lambda: view.sign("v_3f9a2c")),
        ("tokens.verify_view", lambda: signer.verify_view(view_token, **scope)),
        ("tokens.TokenSigner (two keys)", lambda: TokenSigner(["k" * 40, "old" * 12])),
    ]
    timings = [(name, best_us(fn, args.repeat)) for name, fn in rows]
    base = timings[0][1]
    print(f"{'operation':48} {'us/call':>9} {'x baseline':>11}")
    for name, us in timings:
        print(f"{name:48} {us:9.2f} {us / base:11.1f}")


if __name__ == "__main__":
    main()
