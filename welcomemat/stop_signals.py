"""Stopping a long-running consumer cleanly on SIGTERM and Ctrl-C.

The worker, the sync and the demo's consumers finish the batch in hand before they return,
so an entry is never left half done by a deploy or an operator's Ctrl-C; a second Ctrl-C
still interrupts at once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["stop_on_signals"]


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set `stop` (consumers finish the batch in hand, then return); a second
    SIGINT interrupts. Outside the main thread, where signals cannot be handled, it does nothing."""

    def graceful(signum: int, frame: FrameType | None) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, graceful) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
