"""One read per key however many requests miss together; a caller that leaves costs the others
nothing; and a caller resumes on the loop's next turn after the read."""

from __future__ import annotations

import asyncio

import pytest

from server.singleflight import SingleFlight


def test_concurrent_callers_share_one_call_and_a_later_caller_starts_another() -> None:
    flights: SingleFlight[str, int] = SingleFlight()
    calls = 0

    async def read() -> int:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        return calls

    async def main() -> tuple[list[int], int]:
        together = await asyncio.gather(*(flights.run("acct", read) for _ in range(20)))
        later = await flights.run("acct", read)
        return together, later

    together, later = asyncio.run(main())
    assert together == [1] * 20
    assert later == 2 and calls == 2


def test_keys_fly_apart() -> None:
    flights: SingleFlight[str, str] = SingleFlight()

    async def main() -> list[str]:
        async def read(key: str) -> str:
            await asyncio.sleep(0)
            return key.upper()

        return await asyncio.gather(*(flights.run(k, lambda k=k: read(k)) for k in ("a", "b", "a")))

    assert asyncio.run(main()) == ["A", "B", "A"]


def test_a_caller_that_leaves_does_not_cancel_the_read_the_others_wait_for() -> None:
    flights: SingleFlight[str, str] = SingleFlight()
    finished = []

    async def read() -> str:
        await asyncio.sleep(0.02)
        finished.append(True)
        return "copy"

    async def main() -> str:
        first = asyncio.ensure_future(flights.run("acct", read))  # the one that starts the read
        second = asyncio.ensure_future(flights.run("acct", read))
        await asyncio.sleep(0.005)
        first.cancel()  # its client disconnected
        with pytest.raises(asyncio.CancelledError):
            await first
        return await second

    assert asyncio.run(main()) == "copy"
    assert finished == [True]


def test_an_error_reaches_every_caller_and_the_next_call_reads_again() -> None:
    flights: SingleFlight[str, str] = SingleFlight()
    attempts = 0

    async def read() -> str:
        nonlocal attempts
        attempts += 1
        await asyncio.sleep(0)
        if attempts == 1:
            raise ConnectionError("Redis went away")
        return "copy"

    async def main() -> tuple[list[object], str]:
        failed = await asyncio.gather(*(flights.run("acct", read) for _ in range(3)), return_exceptions=True)
        return failed, await flights.run("acct", read)

    failed, again = asyncio.run(main())
    assert all(isinstance(e, ConnectionError) for e in failed) and len(failed) == 3
    assert again == "copy" and attempts == 2


def test_a_caller_resumes_on_the_turn_after_the_read_ends() -> None:
    """Every turn of a busy event loop serves each other connection once: a caller that took
    three turns to learn the read's answer waited for three rounds of everyone else's work."""
    flights: SingleFlight[str, str] = SingleFlight()

    async def main() -> int:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str] = loop.create_future()

        async def read() -> str:
            return await answer

        caller = asyncio.ensure_future(flights.run("acct", read))
        for _ in range(3):
            await asyncio.sleep(0)  # the read is in flight, awaiting its answer
        assert not caller.done()
        answer.set_result("copy")  # as a worker thread's answer lands
        turns = 0
        while not caller.done():
            await asyncio.sleep(0)
            turns += 1
        assert caller.result() == "copy"
        return turns

    # the read resumes (turn 1) and settles each caller's own future, the caller resumes (turn 2)
    assert asyncio.run(main()) <= 2


def test_a_closing_loop_cancels_the_flight_and_its_callers() -> None:
    flights: SingleFlight[str, str] = SingleFlight()

    async def read() -> str:
        await asyncio.sleep(60)
        return "never"

    async def main() -> asyncio.Future[str]:
        caller = asyncio.ensure_future(flights.run("acct", read))
        await asyncio.sleep(0.01)
        return caller

    caller = asyncio.run(main())  # asyncio.run cancels what is left, the flight included
    assert caller.cancelled()

    async def quick() -> str:
        return "read again"

    # nothing of the closed loop's flight is left to wait on: the next loop reads afresh
    assert asyncio.run(asyncio.wait_for(flights.run("acct", quick), 5)) == "read again"
