"""Dispatcher.cancel_call: one call stops, its batch and its caller go on."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

from kernel.tools.dispatch import Dispatcher, GateOutcome
from kernel.tools.schema import tool
from kernel.tools.spec import ErrorCode, ToolCall, ToolSpec


@tool(concurrent_safe=True)
def echo(text: str) -> str:
    """Repeat text."""
    return text


def slow_tool(state: dict[str, Any]) -> ToolSpec:
    @tool(concurrent_safe=True)
    async def slow(label: str) -> str:
        """Runs until it is cancelled."""
        state["started"].set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            state["cancelled"] = True
            raise
        return label

    return slow


async def _when_running(d: Dispatcher, call_id: str, event: asyncio.Event) -> bool:
    await event.wait()
    return d.cancel_call(call_id)


def test_cancelling_one_call_of_three_keeps_the_others_in_order(env: Any, observer: Any) -> None:
    state: dict[str, Any] = {"cancelled": False}
    d = env.dispatcher([echo, slow_tool(state)], observer=observer)
    calls = [ToolCall("c1", "echo", {"text": "first"}),
             ToolCall("c2", "slow", {"label": "never"}),
             ToolCall("c3", "echo", {"text": "third"})]

    async def go() -> tuple[list[Any], bool, bool]:
        state["started"] = asyncio.Event()
        stopper = asyncio.ensure_future(_when_running(d, "c2", state["started"]))
        results = await d.dispatch_many(calls)
        return results, await stopper, d.cancel_call("c2")

    results, stopped, again = asyncio.run(go())
    assert stopped and not again  # a finished call cannot be stopped twice
    assert state["cancelled"]
    assert [r.call_id for r in results] == ["c1", "c2", "c3"]
    assert [r.text for r in (results[0], results[2])] == ["first", "third"]
    assert not results[0].is_error and not results[2].is_error
    stopped_result = results[1]
    assert stopped_result.is_error and stopped_result.error_code is ErrorCode.CANCELLED
    assert "stopped the call to 'slow' while it was running" in stopped_result.text
    assert "The rest of the run goes on" in stopped_result.text
    assert d.stored("c2") == stopped_result
    assert {r.call_id for r in observer.finished} == {"c1", "c2", "c3"}


def test_a_sequential_call_after_the_stopped_one_still_runs(env: Any) -> None:
    state: dict[str, Any] = {"cancelled": False}

    @tool
    def write_note(text: str) -> str:
        """Not concurrency-safe: runs alone, after the batch before it."""
        return f"noted {text}"

    d = env.dispatcher([slow_tool(state), write_note])

    async def go() -> list[Any]:
        state["started"] = asyncio.Event()
        stopper = asyncio.ensure_future(_when_running(d, "s1", state["started"]))
        results = await d.dispatch_many([ToolCall("s1", "slow", {"label": "x"}),
                                         ToolCall("w1", "write_note", {"text": "hi"})])
        assert await stopper
        return results

    results = asyncio.run(go())
    assert [(r.call_id, r.error_code) for r in results] == [
        ("s1", ErrorCode.CANCELLED), ("w1", None)]
    assert results[1].text == "noted hi"


def test_unknown_or_finished_calls_cannot_be_stopped(env: Any) -> None:
    d = env.dispatcher([echo])

    async def go() -> tuple[bool, bool]:
        before = d.cancel_call("nope")
        await d.dispatch(ToolCall("e1", "echo", {"text": "x"}))
        return before, d.cancel_call("e1")

    assert asyncio.run(go()) == (False, False)


class WaitingGate:
    """Holds every call at the approval step until told otherwise."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.answer: asyncio.Future[GateOutcome] | None = None
        self.withdrawn = False

    async def authorize(self, spec: ToolSpec, call: ToolCall,
                        args: Mapping[str, Any]) -> GateOutcome:
        self.answer = asyncio.get_running_loop().create_future()
        self.asked.set()
        try:
            return await self.answer
        except asyncio.CancelledError:
            self.withdrawn = True
            raise


def test_a_call_waiting_for_approval_ends_cancelled_and_never_runs(env: Any) -> None:
    ran: list[str] = []

    @tool
    def touch(name: str) -> str:
        """Records that it ran."""
        ran.append(name)
        return "ran"

    gate = WaitingGate()
    d = env.dispatcher([touch], gate=gate)

    async def go() -> Any:
        stopper = asyncio.ensure_future(_when_running(d, "t1", gate.asked))
        result = await d.dispatch(ToolCall("t1", "touch", {"name": "a"}))
        assert await stopper
        return result

    result = asyncio.run(go())
    assert gate.withdrawn and ran == []
    assert result.error_code is ErrorCode.CANCELLED
    assert "before it was approved, so it was not run" in result.text


def test_cancelling_the_caller_still_cancels_everything(env: Any) -> None:
    """The run's own cancel is unchanged: the batch ends and CancelledError propagates."""
    state: dict[str, Any] = {"cancelled": False}
    d = env.dispatcher([echo, slow_tool(state)])

    async def go() -> bool:
        state["started"] = asyncio.Event()
        task = asyncio.ensure_future(d.dispatch_many([ToolCall("a", "slow", {"label": "x"}),
                                                      ToolCall("b", "slow", {"label": "y"})]))
        await state["started"].wait()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(go())
    assert state["cancelled"]
    assert d.stored("a").error_code is ErrorCode.CANCELLED
    assert "cancelled by the user before it finished" in d.stored("a").text


def test_a_stopped_sync_handler_is_reported_as_possibly_still_running(env: Any) -> None:
    release = threading.Event()
    entered = threading.Event()

    @tool
    def blocking() -> str:
        """Blocks its thread until released."""
        entered.set()
        release.wait(30)
        return "late"

    d = env.dispatcher([blocking])

    async def go() -> Any:
        async def stop() -> bool:
            await asyncio.to_thread(entered.wait, 30)
            return d.cancel_call("b1")

        stopper = asyncio.ensure_future(stop())
        result = await d.dispatch(ToolCall("b1", "blocking", {}))
        release.set()  # the thread was left running; let it end before the loop closes
        assert await stopper
        return result

    try:
        result = asyncio.run(go())
    finally:
        release.set()
    assert result.error_code is ErrorCode.CANCELLED
    assert "may still finish in the background" in result.text
