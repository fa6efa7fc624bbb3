"""Dispatcher.suspend: the caller is cancelled to be resumed later (the app quits while a call
waits for its approval). Calls that had not started executing get no stored result, so a
resume dispatches them again; a call that was executing still gets its `cancelled` result.
Without suspend, a cancel stores a result for every call (the usual rule)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from kernel.tools.dispatch import ALLOWED, GateOutcome, MemoryResultLog
from kernel.tools.schema import tool
from kernel.tools.spec import ErrorCode, ToolCall, ToolSpec


@tool
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "slept"


class AskingGate:
    """Allows `slow` at once; keeps every other call waiting, as an unanswered approval."""

    def __init__(self) -> None:
        self.waiting = asyncio.Event()

    async def authorize(self, spec: ToolSpec, call: ToolCall,
                        args: Mapping[str, Any]) -> GateOutcome:
        if call.call_id.startswith("run"):
            return ALLOWED
        self.waiting.set()
        await asyncio.Event().wait()
        raise AssertionError("never answered")


@tool
def note(text: str) -> str:
    """Write a note (asks first)."""
    return text


CALLS = [ToolCall("run1", "slow", {"seconds": 30}), ToolCall("ask1", "note", {"text": "a"}),
         ToolCall("later1", "note", {"text": "b"})]


async def _cancel_while(dispatcher: Any, gate: AskingGate, calls: list[ToolCall],
                        suspend: bool, when: str) -> None:
    task = asyncio.ensure_future(dispatcher.dispatch_many(calls))
    if when == "asking":
        await gate.waiting.wait()
    else:
        await asyncio.sleep(0.2)  # the slow call is executing
    if suspend:
        dispatcher.suspend()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_suspended_while_asking_leaves_no_result_for_unstarted_calls(env: Any) -> None:
    results = MemoryResultLog()
    gate = AskingGate()
    d = env.dispatcher([note], gate=gate, results=results)
    calls = CALLS[1:]
    asyncio.run(_cancel_while(d, gate, calls, suspend=True, when="asking"))
    assert results.get("ask1") is None and results.get("later1") is None


def test_suspended_while_executing_keeps_the_cancelled_result(env: Any) -> None:
    results = MemoryResultLog()
    gate = AskingGate()
    d = env.dispatcher([slow, note], gate=gate, results=results)
    asyncio.run(_cancel_while(d, gate, CALLS, suspend=True, when="executing"))
    stopped = results.get("run1")
    assert stopped is not None and stopped.error_code is ErrorCode.CANCELLED
    assert "partial" in stopped.text
    assert results.get("ask1") is None and results.get("later1") is None


@pytest.mark.parametrize("when", ["asking", "executing"])
def test_without_suspend_every_call_gets_a_result(env: Any, when: str) -> None:
    results = MemoryResultLog()
    gate = AskingGate()
    d = env.dispatcher([slow, note], gate=gate, results=results)
    calls = CALLS if when == "executing" else CALLS[1:]
    asyncio.run(_cancel_while(d, gate, calls, suspend=False, when=when))
    for call in calls:
        stored = results.get(call.call_id)
        assert stored is not None and stored.error_code is ErrorCode.CANCELLED, call.call_id
