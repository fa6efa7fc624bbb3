"""Composite and fallback calls through the real Dispatcher and PolicyGate: one approval
listing every step, each step decided and run as a call of its own (validated, the gate,
a real process), deny rules and the mode on any step, fallbacks on declared codes."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from kernel.events import ApprovalDecision, ApprovalRequest
from kernel.paths import AppPaths
from kernel.policy.channels import Answer
from kernel.policy.decide import Mode
from kernel.policy.settings import parse_settings
from kernel.tools.compose import parse_declarations
from kernel.tools.dispatch import PlanGate
from kernel.tools.spec import ErrorCode, Risk, ToolCall, ToolError, ToolResult, ToolSpec
from tests.policy.gatekit import Kit
from tests.tools.conftest import RecordingObserver

WRITE_AND_RUN = {"composites": {"write_and_run": {
    "description": "Write a file, then run a command.",
    "input_schema": {"type": "object", "required": ["path", "content", "command"],
                     "properties": {"path": {"type": "string"}, "content": {"type": "string"},
                                    "command": {"type": "string"}}},
    "steps": [{"tool": "write_file", "args": {"path": "/input/path", "content": "/input/content"}},
              {"tool": "run_command", "args": {"command": "/input/command"}}]},
    "copy": {
    "description": "Copy a file's numbered lines to another.",
    "input_schema": {"type": "object", "required": ["path", "to"],
                     "properties": {"path": {"type": "string"}, "to": {"type": "string"}}},
    "steps": [{"tool": "read_file", "args": {"path": "/input/path"}},
              {"tool": "write_file", "args": {"path": "/input/to",
                                              "content": "/steps/0/text"}}]}}}
CALL = ToolCall("toolu_1", "write_and_run",
                {"path": "out.txt", "content": "hello\n", "command": "cat out.txt; touch ran"})


class Recorder:
    """A channel that answers every request with `choice` and keeps what it was asked."""

    name = "test"

    def __init__(self, choice: Any = "allow_once", confirmed: bool = False) -> None:
        self.choice = choice
        self.confirmed = confirmed
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest, *, destructive: bool) -> Answer:
        self.asked.append(request)
        return Answer(self.choice, confirmed=self.confirmed)


def _kit(workspace: Path, paths: AppPaths, *, mode: Mode = Mode.ASK, settings: str = "{}",
         channel: Any = None, tools: dict[str, Any] | None = None) -> tuple[Kit, RecordingObserver]:
    kit = Kit(workspace, paths, mode=mode, channel=channel,
              settings=parse_settings(settings))
    kit.registry.declare(parse_declarations(tools or WRITE_AND_RUN))
    observer = RecordingObserver()
    kit.dispatcher.observer = observer
    return kit, observer


def _dispatch(kit: Kit, call: ToolCall = CALL) -> ToolResult:
    return asyncio.run(kit.dispatcher.dispatch(call))


def test_one_approval_lists_every_step_and_covers_them(workspace: Path,
                                                      reins_home: AppPaths) -> None:
    channel = Recorder()
    kit, observer = _kit(workspace, reins_home, channel=channel)
    assert isinstance(kit.gate, PlanGate)
    result = _dispatch(kit)
    assert not result.is_error, result.text
    [request] = channel.asked
    assert request.call_id == "toolu_1" and request.name == "write_and_run"
    assert [(s["tool"], s["risk"], s["verdict"]) for s in request.steps] == [
        ("write_file", "write", "ask"), ("run_command", "execute", "ask")]
    assert request.risk is Risk.EXECUTE and not request.can_always
    assert "1. write_file" in request.preview and "2. run_command" in request.preview
    assert "command ← /input/command" in request.preview and "+hello" in request.preview
    assert (workspace / "out.txt").read_text() == "hello\n" and (workspace / "ran").exists()
    assert [c for c, _ in observer.started] == ["toolu_1", "toolu_1-step1", "toolu_1-step2"]
    steps = {e.call_id: e for e in kit.of_type("approval_decision")}
    assert steps["toolu_1-step1"].decided_by == "composite"
    assert steps["toolu_1-step2"].decision == "allow_once"
    assert "--- step 1 write_file (ok)" in result.text
    assert "--- step 2 run_command (ok)" in result.text and "hello" in result.text


@pytest.mark.parametrize(("mode", "settings", "words"), [
    (Mode.AUTO, '{"permissions": {"deny": ["run_command(cat *)"]}}',
     "step 2 (run_command) is denied: Your rule run_command(cat *) blocks this"),
    (Mode.AUTO, '{"permissions": {"deny": ["write_file"]}}',
     "step 1 (write_file) is denied"),
    (Mode.READ_ONLY, "{}", "step 1 (write_file) is denied: The session is in Read-only mode"),
])
def test_a_step_denied_denies_the_composite_before_anything_runs(
        workspace: Path, reins_home: AppPaths, mode: Mode, settings: str, words: str) -> None:
    channel = Recorder()
    kit, observer = _kit(workspace, reins_home, mode=mode, settings=settings, channel=channel)
    result = _dispatch(kit)
    assert result.error_code is ErrorCode.PERMISSION_DENIED and words in result.text
    assert channel.asked == [] and observer.started == [("toolu_1", "write_and_run")]
    assert not (workspace / "out.txt").exists() and not (workspace / "ran").exists()


def test_denied_by_the_user_nothing_runs(workspace: Path, reins_home: AppPaths) -> None:
    kit, observer = _kit(workspace, reins_home, channel=Recorder("deny"))
    result = _dispatch(kit)
    assert result.error_code is ErrorCode.APPROVAL_DENIED and "none of its steps ran" in result.text
    assert len(observer.started) == 1 and not (workspace / "out.txt").exists()


def test_every_step_allowed_runs_without_asking(workspace: Path, reins_home: AppPaths) -> None:
    channel = Recorder()
    kit, _ = _kit(workspace, reins_home, mode=Mode.AUTO, channel=channel)
    result = _dispatch(kit)
    assert not result.is_error and channel.asked == [] and (workspace / "ran").exists()
    parent = [e for e in kit.of_type("approval_decision") if e.call_id == "toolu_1"]
    assert [(e.decision, e.decided_by) for e in parent] == [("allow", "policy")]


def test_a_step_whose_arguments_come_from_a_result_is_asked_on_its_own(
        workspace: Path, reins_home: AppPaths) -> None:
    (workspace / "todo.txt").write_text("buy milk\n")
    channel = Recorder()
    kit, _ = _kit(workspace, reins_home, channel=channel)
    result = _dispatch(kit, ToolCall("toolu_2", "copy", {"path": "todo.txt", "to": "b.txt"}))
    assert not result.is_error, result.text
    assert [r.call_id for r in channel.asked] == ["toolu_2-step2"]
    assert channel.asked[0].name == "write_file" and channel.asked[0].steps == []
    assert "buy milk" in channel.asked[0].input["content"]
    assert "buy milk" in (workspace / "b.txt").read_text()
    [parent] = [e for e in kit.of_type("approval_decision") if e.call_id == "toolu_2"]
    assert "step 2 is decided when it runs" in parent.message


def test_a_destructive_step_needs_the_confirmation(workspace: Path,
                                                  reins_home: AppPaths) -> None:
    call = ToolCall("toolu_3", "write_and_run",
                    {"path": "a.txt", "content": "x",
                     "command": "git push --force origin main; touch pushed"})
    kit, _ = _kit(workspace, reins_home, mode=Mode.AUTO, channel=Recorder())
    result = _dispatch(kit, call)
    assert result.error_code is ErrorCode.APPROVAL_DENIED
    assert "second confirmation" in result.text and not (workspace / "a.txt").exists()
    [request] = kit.of_type("approval_request")
    assert request.risk_level == "destructive" and request.risk is Risk.DESTRUCTIVE
    assert not (workspace / "pushed").exists()
    kit, _ = _kit(workspace, reins_home, mode=Mode.AUTO, channel=Recorder(confirmed=True))
    assert not _dispatch(kit, call).is_error and (workspace / "pushed").exists()


def test_a_failing_step_ends_the_pipeline(workspace: Path, reins_home: AppPaths) -> None:
    kit, observer = _kit(workspace, reins_home, mode=Mode.AUTO, channel=Recorder())
    result = _dispatch(kit, ToolCall("toolu_4", "copy", {"path": "missing.txt", "to": "b"}))
    assert result.is_error and result.error_code is ErrorCode.EXECUTION_ERROR
    assert "--- step 1 read_file (error: execution_error)" in result.text
    assert "--- step 2 not run: step 1 failed" in result.text
    assert [c for c, _ in observer.started] == ["toolu_4", "toolu_4-step1"]


async def _slow(query: str) -> str:
    await asyncio.sleep(5)
    return "never"


def _broken(query: str) -> str:
    raise ToolError("the index is gone", code=ErrorCode.EXECUTION_ERROR)


def _mirror(query: str) -> str:
    return json.dumps({"found": query.upper()})


SCHEMA = {"type": "object", "required": ["query"], "properties": {"query": {"type": "string"}}}


@pytest.mark.parametrize(("primary", "on", "falls_back", "code"), [
    (_slow, ["timeout"], True, "timeout"),
    (_broken, ["timeout", "execution_error"], True, "execution_error"),
    (_broken, ["timeout"], False, "execution_error"),
])
def test_a_fallback_is_taken_on_its_declared_codes_only(
        workspace: Path, reins_home: AppPaths, primary: Any, on: list[str], falls_back: bool,
        code: str) -> None:
    kit, observer = _kit(workspace, reins_home, mode=Mode.AUTO, tools={"composites": {}})
    kit.registry.register(ToolSpec("mcp__a__find", "Find.", SCHEMA, primary, timeout_s=0.2))
    kit.registry.register(ToolSpec("mcp__b__find", "Find.", SCHEMA, _mirror))
    kit.registry.declare(parse_declarations(
        {"fallbacks": {"mcp__a__find": {"to": "mcp__b__find", "on": on}}}))
    started = time.monotonic()
    result = _dispatch(kit, ToolCall("toolu_5", "mcp__a__find", {"query": "x"}))
    assert time.monotonic() - started < 2
    ids = [c for c, _ in observer.started]
    if not falls_back:
        assert result.error_code is ErrorCode(code) and ids == ["toolu_5"]
        return
    assert not result.is_error and ids == ["toolu_5", "toolu_5-fallback"]
    assert result.text.startswith(f"mcp__a__find failed ({code}), so Reins fell back to "
                                  f"mcp__b__find.")
    assert '{"found": "X"}' in result.text
    decisions = [e for e in kit.of_type("approval_decision") if isinstance(e, ApprovalDecision)]
    assert {e.call_id for e in decisions} == {"toolu_5", "toolu_5-fallback"}


def test_a_composite_step_of_a_composite_is_asked_about_when_it_runs(
        workspace: Path, reins_home: AppPaths) -> None:
    tools = {"composites": {**WRITE_AND_RUN["composites"], "twice": {
        "description": "Write and run, then read the file back.",
        "input_schema": WRITE_AND_RUN["composites"]["write_and_run"]["input_schema"],
        "steps": [{"tool": "write_and_run", "args": {"path": "/input/path",
                                                     "content": "/input/content",
                                                     "command": "/input/command"}},
                  {"tool": "read_file", "args": {"path": "/input/path"}}]}}}
    channel = Recorder()
    kit, observer = _kit(workspace, reins_home, channel=channel, tools=tools)
    entry = kit.registry.entry("twice")
    assert entry is not None and entry.spec.risk is Risk.EXECUTE
    result = _dispatch(kit, ToolCall("toolu_6", "twice", dict(CALL.input)))
    assert not result.is_error, result.text
    assert [r.call_id for r in channel.asked] == ["toolu_6-step1"]
    assert [s["tool"] for s in channel.asked[0].steps] == ["write_file", "run_command"]
    reason = channel.asked[0].reason  # sentences a person reads: each step's reason its own
    assert reason.startswith("write_and_run runs 2 steps in one call, and steps 1, 2 need "
                             "your OK. Step 1 (write_file): "), reason
    assert " Step 2 (run_command): " in reason and reason.endswith(".")
    assert ".;" not in reason and ".)" not in reason and ".." not in reason, reason
    assert [c for c, _ in observer.started] == [
        "toolu_6", "toolu_6-step1", "toolu_6-step1-step1", "toolu_6-step1-step2",
        "toolu_6-step2"]
    assert (workspace / "ran").exists() and "--- step 2 read_file (ok)" in result.text
