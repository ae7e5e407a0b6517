"""Nonces and view ids from the pooled CSPRNG: the format, never the same value twice
(across pool refills, threads and forked workers)."""

from __future__ import annotations

import os
import re
import threading

import pytest

from server.random_ids import BATCH, url_token


@pytest.mark.parametrize(("nbytes", "chars"), [(12, 16), (18, 24)])
def test_tokens_are_base64url_of_the_requested_size(nbytes: int, chars: int) -> None:
    for _ in range(3 * BATCH):  # across refills
        assert re.fullmatch(rf"[A-Za-z0-9_-]{{{chars}}}", url_token(nbytes))


def test_sizes_that_would_need_padding_are_refused() -> None:
    with pytest.raises(ValueError, match="multiple of 3"):
        url_token(16)


def test_no_value_is_handed_out_twice_across_threads_and_refills() -> None:
    drawn: list[list[str]] = [[] for _ in range(4)]

    def draw(out: list[str]) -> None:
        for _ in range(5 * BATCH):
            out.append(url_token(12))

    threads = [threading.Thread(target=draw, args=(out,)) for out in drawn]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    values = [v for out in drawn for v in out]
    assert len(set(values)) == len(values) == 4 * 5 * BATCH


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_worker_does_not_repeat_its_parents_values() -> None:
    url_token(12)  # the parent's pool is now full: a child must not inherit it
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(read_end)
        os.write(write_end, " ".join(url_token(12) for _ in range(50)).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        child = set(pipe.read().split())
    os.waitpid(pid, 0)
    parent = {url_token(12) for _ in range(50)}
    assert len(child) == 50 and not child & parent
