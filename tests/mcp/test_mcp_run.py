"""MCP tools in a real run: kernel start-up, a fake-model run through approval, the timeline.

The agent loop talks to the fake Anthropic Messages server through the real SDK; the policy
gate asks the `--approve` channel; the tool is served by a real MCP server process; the
events the run reports are fed to the desktop's timeline model.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from kernel.agent.loop import Agent
from kernel.agent.store import SessionStore
from kernel.events import Event
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.mcp.manager import McpManager, ServerStatus
from kernel.mcp.startup import mcp_logs_dir, start_mcp_servers
from kernel.model.provider import AnthropicProvider, ProviderConfig
from kernel.paths import AppPaths
from kernel.policy.approvals import gate_factory
from kernel.policy.channels import Choice, FixedChannel
from kernel.tools.builtin import builtin_tools
from kernel.tools.dispatch import Dispatcher
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import ToolCall
from tests.mcp.conftest import edge

PROJECT = Path("/srv/project")
"""A workspace whose sandbox home commands write (AppPaths.sandbox_home_for)."""

MODEL = "claude-sonnet-4-6"
WAIT = 60.0


class Sandbox:
    available = True
    kind = "bwrap"

    def describe(self) -> str:
        return "bwrap"


async def _ready(manager: McpManager, name: str) -> None:
    state = await manager.wait_for(name, lambda s: s.status is not ServerStatus.STARTING, WAIT)
    assert state.status is ServerStatus.READY, state


def test_kernel_startup_gives_servers_the_users_environment_without_secrets(
        reins_home: AppPaths, workspace: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELL", "/nonexistent/shell")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("REINS_TEST_CANARY_TOKEN", "canary-91c2")
    monkeypatch.setenv("DISPLAY", ":0")

    async def main() -> dict[str, str]:
        registry = ToolRegistry(builtin_tools())
        manager = await start_mcp_servers(registry, reins_home, {"edge": edge(
            env={"EXPLICIT": "named", "MY_API_TOKEN": "typed-by-the-user"})})
        try:
            await _ready(manager, "edge")
            dispatcher = Dispatcher(registry, session_id="s1", workspace=workspace,
                                    outputs=OutputStore(workspace / ".out"),
                                    path_policy=PathPolicy(workspace))
            result = await dispatcher.dispatch(ToolCall("c1", "mcp__edge__environment", {}))
            return json.loads(result.text)
        finally:
            await manager.aclose()

    env = asyncio.run(main())
    env.pop("LC_CTYPE", None)
    assert env["HOME"] == str(home) and env["PATH"] == "/usr/bin:/bin"
    assert env["EXPLICIT"] == "named" and env["MY_API_TOKEN"] == "typed-by-the-user"
    assert "REINS_TEST_CANARY_TOKEN" not in env and "canary-91c2" not in json.dumps(env)
    assert "DISPLAY" not in env
    assert str(reins_home.sandbox_home_for(PROJECT)) not in json.dumps(env)
    assert (mcp_logs_dir(reins_home) / "edge.stderr.log").read_text().startswith(
        "edge: starting")


def _run(fake: FakeAnthropicServer, paths: AppPaths, workspace: Path,
         choice: Choice) -> tuple[list[Event], Any]:
    seen: list[Event] = []
    store = SessionStore(paths.database)

    async def main() -> Any:
        registry = ToolRegistry(builtin_tools())
        manager = await start_mcp_servers(registry, paths, {"edge": edge()})
        provider = AnthropicProvider(
            ProviderConfig(model=MODEL, base_url=fake.base_url, read_timeout_s=10.0),
            api_key="test-key")
        try:
            await _ready(manager, "edge")
            agent = Agent(store, registry, provider, paths=paths,
                          gate_factory=gate_factory(app_paths=paths, sandbox=Sandbox(),
                                                    channel=FixedChannel(choice)))
            session = store.create_session(workspace, MODEL, "auto")
            return await agent.run(session, "greet through the edge server", seen.append)
        finally:
            await provider.close()
            await manager.aclose()

    try:
        return seen, asyncio.run(main())
    finally:
        store.close()


@pytest.fixture
def fake() -> Any:
    with FakeAnthropicServer(api_key="test-key") as server:
        yield server


def _types(seen: list[Event]) -> list[str]:
    return [e.type for e in seen if e.type != "assistant_delta"]


def test_fake_model_run_calls_an_mcp_tool_through_approval(
        fake: FakeAnthropicServer, reins_home: AppPaths, workspace: Path, qtbot: Any) -> None:
    from desktop.timeline.model import TimelineModel

    fake.add(reply("Asking the server.", ToolUse("mcp__edge__echo", {"text": "hello"}, id="c1")),
             reply("The server said hello."))
    seen, finished = _run(fake, reins_home, workspace, "allow_once")
    assert finished.stop_reason == "end_turn"
    assert _types(seen) == ["session_started", "user_message", "assistant_text", "tool_call",
                            "approval_request", "approval_decision", "tool_result",
                            "assistant_text", "run_finished"]
    call, request, decision, result = [e for e in seen if e.type != "assistant_delta"][3:7]
    assert (call.name, call.input) == ("mcp__edge__echo", {"text": "hello"})
    assert request.name == "mcp__edge__echo" and "comes from mcp:edge" in request.reason
    assert (decision.decision, decision.decided_by) == ("allow_once", "cli")
    assert not result.is_error and result.preview == "hello"
    sent = fake.requests[1].body["messages"][-1]["content"]
    assert sent[0]["type"] == "tool_result" and sent[0]["tool_use_id"] == "c1"
    assert "hello" in json.dumps(sent[0]["content"]) and not sent[0].get("is_error")
    assert "mcp__edge__echo" in [t["name"] for t in fake.requests[0].body["tools"]]

    timeline = TimelineModel()
    timeline.apply_many(seen)
    timeline.flush()
    record = timeline.record("c1")
    assert record is not None and timeline.rowCount() == 1
    assert record.name == "mcp__edge__echo" and record.status == "ok"
    assert record.approval.decision == "allow_once" and record.preview == "hello"


def test_a_denied_mcp_call_never_reaches_the_server(
        fake: FakeAnthropicServer, reins_home: AppPaths, workspace: Path) -> None:
    trace = workspace / "trace"
    fake.add(reply(ToolUse("mcp__edge__touch", {"path": str(trace)}, id="c1")),
             reply("Understood."))
    seen, finished = _run(fake, reins_home, workspace, "deny")
    assert finished.stop_reason == "end_turn"
    assert not trace.exists()
    (result,) = [e for e in seen if e.type == "tool_result"]
    assert result.is_error and result.error_code == "approval_denied"
    sent = fake.requests[1].body["messages"][-1]["content"][0]
    assert sent["is_error"] and "denied" in json.dumps(sent["content"])


def test_server_hints_change_the_risk_a_person_sees_not_the_decision(
        fake: FakeAnthropicServer, reins_home: AppPaths, workspace: Path) -> None:
    """`peek` is hinted read-only and `wipe` destructive: the timeline's tool_call and the
    approval request show those risks, and both still ask (trust comes from the user)."""
    fake.add(reply(ToolUse("mcp__edge__peek", {}, id="c1"), ToolUse("mcp__edge__wipe", {},
                                                                    id="c2")),
             reply("Done."))
    seen, finished = _run(fake, reins_home, workspace, "deny")
    assert finished.stop_reason == "end_turn"
    calls = {e.call_id: e.risk for e in seen if e.type == "tool_call"}
    requests = {e.call_id: e.risk for e in seen if e.type == "approval_request"}
    assert calls == {"c1": "read", "c2": "destructive"}
    assert requests == {"c1": "read", "c2": "destructive"}
