"""Starting a run on a long session reads and decodes its stored history in a thread: the
event loop keeps ticking meanwhile (its longest pause, after a first run has paid the SDK's
one-time costs, is measured against the time the same read takes), and the run is the
same."""

from __future__ import annotations

import asyncio
import gc
import time

from kernel.events import AssistantText, RunFinished, UserMessage
from kernel.fakemodel import reply
from tests.agent.conftest import Harness

EVENTS = 8_000


def test_a_run_on_a_long_session_does_not_stall_the_loop(harness: Harness) -> None:
    sid = harness.session()
    harness.store.append_events(
        [UserMessage(sid, f"question {n}") if n % 2 == 0 else AssistantText(sid, f"answer {n}")
         for n in range(EVENTS)])
    reads = []
    for _ in range(3):
        started = time.perf_counter()
        assert len(harness.store.events(sid)) == EVENTS
        reads.append(time.perf_counter() - started)
    read_s = min(reads)
    harness.server.add(reply("warmed up"), reply("done"))
    agent = harness.agent()
    warm_up = harness.session()  # the SDK builds its types on the first stream

    async def go() -> tuple[RunFinished, float]:
        longest = 0.0
        stop = asyncio.Event()

        async def tick() -> None:
            nonlocal longest
            last = time.perf_counter()
            while not stop.is_set():
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                longest = max(longest, now - last)
                last = now

        await agent.run(warm_up, "first", harness.seen.append)
        # What the test suite has left alive would make each full collection (which pauses
        # every thread) long; that is not what is measured here.
        gc.collect()
        gc.freeze()
        ticker = asyncio.ensure_future(tick())
        await asyncio.sleep(0.01)
        try:
            finished = await agent.run(sid, "one more", harness.seen.append)
        finally:
            stop.set()
            await ticker
            gc.unfreeze()
            await agent.provider.close()
        return finished, longest

    finished, longest = asyncio.run(go())
    assert finished.stop_reason == "end_turn"
    assert longest < read_s / 2, (f"the loop stalled {longest * 1000:.0f} ms; reading the "
                                  f"history takes {read_s * 1000:.0f} ms")
    assert harness.store.get_session(sid).title == "one more"
