#!/usr/bin/env python3
"""What one piece of a request costs where it runs: the request path in process, with and
without the piece, in interleaved blocks.

    .venv/bin/python bench/ablate.py [--path link_first] [--ablations click_tokens ...]
        [--block 500] [--blocks 24] [--erasures 0]

A piece timed alone (`timeit`) runs hot: its code and data in the CPU's caches. In a request
it runs cold, between a hundred other functions, and costs more (a pydantic model built per
first click: ~3 µs alone, ~7 µs in a request; bench/README.md). This measures the piece where
it runs: `bench_calls.py`'s setup (embedded Redis, the example campaign, published zone sets,
tokens; the app driven in process through ASGI, collector tuned as `welcomemat serve` tunes
it, its event writer's thread stopped and the events written between blocks: see
`bench_calls.writer_held`), then blocks of `--block` requests of one path, alternating
between the code as it is and the code with the piece replaced by a stand-in (a constant, a
no-op, a memo), for `--blocks` pairs (the order flips every pair). The event loop thread's
CPU per request, median and fastest block of each side, and the difference: what the piece
costs that request, in context. Machine noise moves both sides alike. `none` (an ablation
that changes nothing) is the control: its difference is the method's own error.

`--erasures N` puts N erased subjects, none a visitor, on the tenant's erasure list first
(`bench_renderer.erase_others`), so that the `revocation_check` ablation has a list to look
tokens up in (with none, the check is skipped and costs nothing).

A stand-in is not the behaviour (a page without click tokens is not a page we serve): these
are measurements, never code paths.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_calls as bc  # noqa: E402
import bench_renderer as br  # noqa: E402
import redis  # noqa: E402

from welcomemat.storage.embedded_redis import temporary_redis  # noqa: E402

Patch = tuple[Callable[[], None], Callable[[], None]]


def _swap(owner: Any, name: str, stand_in: Any) -> Patch:
    original = owner.__dict__[name]
    return lambda: setattr(owner, name, stand_in), lambda: setattr(owner, name, original)


def _both(*patches: Patch) -> Patch:
    def apply() -> None:
        for patch in patches:
            patch[0]()

    def undo() -> None:
        for patch in patches:
            patch[1]()

    return apply, undo


# A QR token's payload inflated ahead of the run, by its compressed bytes (`_measure` fills it
# for the `inflate` ablation): the stand-in looks the result up instead of running zlib.
_INFLATED: dict[bytes, bytes] = {}


class _Inflated:
    """`zlib` as the token module uses it, with inflating replaced by a look-up in `_INFLATED`."""

    error = zlib.error

    def decompressobj(self) -> _Inflated:
        return self

    def decompress(self, data: bytes, max_length: int) -> bytes:
        return _INFLATED[data]


def _ablations() -> dict[str, tuple[str, Patch]]:
    import server.identify as identify
    import server.metrics as metrics
    import server.pages as pages
    import server.qr as qr
    import server.renderer_state as renderer_state
    from server.engagement import events
    from welcomemat.records import erasure
    from welcomemat.security import tokens

    render = renderer_state.RendererState._render
    rendered: dict[tuple[str, str | None], Any] = {}

    def remembered_render(self: Any, view: Any, page_id: str, visitor: Any) -> Any:
        key = (page_id, visitor.identity.account)
        page = rendered.get(key)
        if page is None:
            page = rendered[key] = render(self, view, page_id, visitor)
        return page

    def unchecked(label: str, macs: Any, token: str, max_chars: int) -> Any:
        return tokens._load_payload(token.rpartition(".")[0].encode("ascii"))

    async def copy_served(renderer: Any, state: Any, claims: Any) -> tuple[str, int | None, str | None]:
        return "personal", 1, None

    signed = "e30.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    return {
        "none": ("nothing replaced (the control)", (lambda: None, lambda: None)),
        "click_tokens": (
            "the CTAs' click tokens (templates and signing): CTAs keep their own URL",
            _swap(pages, "_click_templates", lambda signer, visit: ()),
        ),
        "click_signing": (
            "signing a click token from its template: a constant token",
            _swap(tokens.ViewTokenTemplate, "sign", lambda self, view_id: signed),
        ),
        "arrival_cookie": (
            "the cookie a link or QR arrival earns (signed, its header built): a constant header",
            _swap(identify.Identifier, "arrival_cookie", lambda self, *a, **k: (b"set-cookie", b"wm=x")),
        ),
        "view_event": (
            "the view event (built and queued): nothing",
            _both(
                _swap(events.EventWriter, "emit", lambda self, event: True),
                _swap(pages, "EngagementEvent", lambda **fields: None),
            ),
        ),
        "page_counters": (
            "the page counters: nothing",
            _swap(metrics.PageStats, "count_page", lambda self, *a: None),
        ),
        "render": (
            "the rendered-page look-up (variant, cache key, LRU): a dict by page and account",
            _swap(renderer_state.RendererState, "_render", remembered_render),
        ),
        "inflate": (
            "inflating a compressed (QR) token's payload: its inflated bytes looked up",
            _swap(tokens, "zlib", _Inflated()),
        ),
        "claimed_scope": (
            "reading a QR token's claimed tenant and campaign before its verification: a constant",
            _swap(qr, "claimed_scope", lambda token: (br.TENANT, br.CAMPAIGN)),
        ),
        "scan_copy": (
            "a QR scan's arm, zone-set version and copy variant for its event: constants",
            _swap(qr, "_copy_served", copy_served),
        ),
        "revocation_check": (
            "an accepted token looked up on the tenant's erasure list (--erasures): never revoked",
            _swap(erasure.Revocations, "revoked", lambda self, account, contact, issued_at: False),
        ),
        "token_checks": (
            "a token's form and signature checks (HMAC): only its payload read",
            _swap(tokens.TokenSigner, "_unsign_keyed", staticmethod(unchecked)),
        ),
    }


Measured = list[tuple[str, list[float], list[float]]]  # (ablation, as is, replaced): CPU µs per block


async def _measure(path: str, names: list[str], block: int, blocks: int, erasures: int = 0) -> Measured:
    ablations = _ablations()
    requests = block * blocks * 2 * len(names) + 2_000
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
        app = bc.bench_app(url)
        visitors = br.publish(redis.Redis.from_url(url), 2_000, 64, requests)
        if erasures:
            br.erase_others(redis.Redis.from_url(url), visitors, erasures)
        if "inflate" in names:
            from welcomemat.security import tokens

            for token in visitors.first_qr:
                body = token.rpartition(".")[0].encode("ascii")
                if body.startswith(b"."):
                    compressed = tokens._b64url_decode(body[1:])
                    _INFLATED[compressed] = zlib.decompress(compressed)
        queue, lifespan = await bc.start(app)
        drain = bc.writer_held(app)  # its hand-overs of the lock are not a piece's (`bc.writer_held`)
        cookie = f"wm_{br.CAMPAIGN}="
        for account_cookie in visitors.cookies[: br.FIRST_CLICK_ACCOUNTS]:
            await bc.request(app, br.PATH, {"Cookie": cookie + account_cookie})
        if erasures:
            held = app.state.renderer.campaigns.cached(br.CAMPAIGN).revocations  # type: ignore[attr-defined]
            count = len(held.accounts) + len(held.contacts)
            print(f"the renderer checks tokens against {count:,} revocations")
        from server.engagement.collector import tune_collector
        from server.tuning import RendererTuning

        tuning = RendererTuning()
        tune_collector(tuning.gc_gen0_threshold, tuning.gc_full_interval_s)
        load = br.loads(visitors)[path]
        sent = 0

        async def run(count: int) -> float:
            nonlocal sent
            started = time.thread_time()
            for _ in range(count):
                target, headers = load.target(load.pool[sent % len(load.pool)])
                sent += 1
                status = await bc.request(app, target, headers)
                if status != (303 if path == "qr" else 200):
                    raise SystemExit(f"{path}: {target} answered {status}")
            spent = (time.thread_time() - started) / count * 1e6
            drain()
            return spent

        await run(1_000)  # warm-up
        results = []
        for name in names:
            _, (apply, undo) = ablations[name]
            apply()
            await run(200)  # the stand-in's own first calls
            undo()
            kept: list[float] = []
            ablated: list[float] = []
            for pair in range(blocks):
                for replaced in (False, True) if pair % 2 == 0 else (True, False):
                    if replaced:
                        apply()
                    try:
                        (ablated if replaced else kept).append(await run(block))
                    finally:
                        if replaced:
                            undo()
            results.append((name, kept, ablated))
        await queue.put({"type": "lifespan.shutdown"})
        await lifespan
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    names = list(_ablations())
    parser.add_argument("--path", default="link_first", choices=bc.PATHS[4:] + ("cookie",))
    parser.add_argument("--ablations", nargs="+", choices=names, default=names)
    parser.add_argument("--block", type=int, default=500, help="requests per block")
    parser.add_argument("--blocks", type=int, default=24, help="blocks per side and ablation")
    parser.add_argument(
        "--erasures", type=int, default=0, help="erased subjects on the tenant's list (none a visitor)"
    )
    args = parser.parse_args()
    if args.block < 1 or args.blocks < 2 or args.erasures < 0:
        parser.error("--block must be at least 1, --blocks at least 2, --erasures 0 or more")
    print(f"{args.path}: event loop thread CPU per request, {args.blocks} blocks of {args.block} a side")
    print(f"{'ablation':16} {'as is':>14} {'replaced':>14} {'difference':>18}  what is replaced")
    ablations = _ablations()
    for name, kept, ablated in asyncio.run(
        _measure(args.path, args.ablations, args.block, args.blocks, args.erasures)
    ):
        as_is, replaced = statistics.median(kept), statistics.median(ablated)
        print(
            f"{name:16} {as_is:8.1f} ({min(kept):5.1f}) {replaced:7.1f} ({min(ablated):5.1f}) "
            f"{replaced - as_is:+8.1f} µs {100 * (replaced - as_is) / as_is:+5.1f}%  {ablations[name][0]}",
            flush=True,
        )
    print("medians of the blocks (fastest block in brackets)")


if __name__ == "__main__":
    main()
