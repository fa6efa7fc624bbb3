"""A composite call in the dispatcher: stopping one step or the whole call, resuming after
a restart (finished steps are not run again), a step's arguments from a result as JSON."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kernel.tools.compose import parse_declarations
from kernel.tools.dispatch import Dispatcher, MemoryResultLog
from kernel.tools.spec import ErrorCode, ToolCall, ToolResult, ToolSpec

SCHEMA = {"type": "object", "required": ["word"], "properties": {"word": {"type": "string"}}}


def _tools(ran: list[str], started: asyncio.Event | None = None) -> list[ToolSpec]:
    def first(word: str) -> str:
        ran.append(f"first {word}")
        return f'{{"next": "{word}!", "n": [1, 2]}}'

    async def second(word: str) -> str:
        ran.append(f"second {word}")
        if started is not None:
            started.set()
            await asyncio.sleep(3600)
        return f"second got {word}"

    def third(word: str) -> str:
        ran.append(f"third {word}")
        return "third"

    return [ToolSpec(n, n, SCHEMA, h) for n, h in
            (("first", first), ("second", second), ("third", third))]


PIPE = {"composites": {"pipe": {
    "description": "Three steps", "input_schema": SCHEMA,
    "steps": [{"tool": "first", "args": {"word": "/input/word"}},
              {"tool": "second", "args": {"word": "/steps/0/json/next"}},
              {"tool": "third", "const": {"word": "done"}}]}}}


def _dispatcher(env: Any, tools: list[ToolSpec], **kw: Any) -> Dispatcher:
    d: Dispatcher = env.dispatcher(tools, **kw)
    d.registry.declare(parse_declarations(PIPE))
    return d


def test_each_step_gets_its_arguments_and_one_result_tells_them_all(env: Any,
                                                                    observer: Any) -> None:
    ran: list[str] = []
    d = _dispatcher(env, _tools(ran), observer=observer)
    result = env.call(d, "pipe", {"word": "hi"}, "p1")
    assert ran == ["first hi", "second hi!", "third done"]
    assert not result.is_error and "second got hi!" in result.text
    assert result.text.startswith("pipe: 3 of 3 steps ran")
    assert [c for c, _ in observer.started] == ["p1", "p1-step1", "p1-step2", "p1-step3"]
    assert [r.call_id for r in observer.finished] == ["p1-step1", "p1-step2", "p1-step3", "p1"]


@pytest.mark.parametrize("stopped", ["p1-step2", "p1"])
def test_stopping_a_step_or_the_whole_call(env: Any, stopped: str) -> None:
    ran: list[str] = []

    async def go() -> tuple[ToolResult, bool]:
        started = asyncio.Event()
        d = _dispatcher(env, _tools(ran, started))
        work = asyncio.ensure_future(d.dispatch(ToolCall("p1", "pipe", {"word": "x"})))
        await started.wait()
        cancelled = d.cancel_call(stopped)
        return await work, cancelled

    result, cancelled = asyncio.run(go())
    assert cancelled and result.is_error and result.error_code is ErrorCode.CANCELLED
    assert "third done" not in ran
    if stopped == "p1":
        assert "The user stopped the call to 'pipe' while it was running" in result.text
    else:
        assert "--- step 2 second (error: cancelled)" in result.text
        assert "--- step 3 not run: step 2 failed" in result.text


def test_a_resumed_composite_does_not_run_finished_steps_again(env: Any) -> None:
    ran: list[str] = []
    log = MemoryResultLog()
    log.put(ToolResult("p1-step1", '{"next": "kept", "n": []}'))
    d = _dispatcher(env, _tools(ran), results=log)
    result = env.call(d, "pipe", {"word": "hi"}, "p1")
    assert ran == ["second kept", "third done"] and not result.is_error


def test_a_pointer_to_nothing_fails_the_step_with_the_reason(env: Any) -> None:
    ran: list[str] = []
    tools = _tools(ran)
    d = env.dispatcher(tools)
    d.registry.declare(parse_declarations({"composites": {"bad": {
        "description": "x", "input_schema": SCHEMA,
        "steps": [{"tool": "first", "args": {"word": "/input/word"}},
                  {"tool": "second", "args": {"word": "/steps/0/json/missing"}}]}}}))
    result = env.call(d, "bad", {"word": "a"}, "b1")
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS and ran == ["first a"]
    assert "/steps/0/json/missing: there is no 'missing' there" in result.text
