"""A changed MCP tool is never run on an old grant, however the call races the change.

A real MCP server (tests/mcp/servers/shifting.py) changes its tool `target` and sends
`notifications/tools/list_changed` before it answers the call that changed it, and holds
its answer to the re-listing until the test lets it go. The call to `target` made in that
window, which the registry still describes as the granted old definition, must ask (the
grant is suspended), and, when the user says yes, run only if the definition the server
lists once the window closes is still the one that was approved. Variants: description,
schema, annotations, title, output schema changed; the tool removed, re-added as it was,
re-added as something else; a notification with no change; the change made while the user
is being asked; over stdio and over streamable HTTP. On the code before this fix the
window's call ran on the old grant, with the new definition, without asking.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kernel.events import ApprovalRequest
from kernel.paths import AppPaths
from kernel.policy.approvals import PolicyGate
from kernel.policy.channels import Answer, Choice
from kernel.policy.decide import Mode
from kernel.policy.settings import load_settings
from kernel.tools.spec import ErrorCode, ToolResult
from tests.mcp.conftest import Harness, free_port, harness, http_server
from tests.mcp.test_mcp_servers import WAIT, ready

SHIFTING = Path(__file__).parents[1] / "mcp" / "servers" / "shifting.py"
TARGET = "mcp__shift__target"
CHANGED = ["description", "schema", "annotations", "title", "output", "readd-other"]
"""Changes of `target` made in one step (`readd-other`: removed and added back as another
tool of the same name)."""


@dataclass
class Channel:
    """The user: answers in order; before answering, runs what the test wants done while
    the question is open (release the held re-listing, change the tool)."""

    answers: list[Choice]
    name: str = "ui"
    while_asked: list[Callable[[ApprovalRequest], Any]] = field(default_factory=list)
    requests: list[ApprovalRequest] = field(default_factory=list)

    async def ask(self, request: ApprovalRequest, *, destructive: bool) -> Answer:
        self.requests.append(request)
        if self.while_asked:
            done = self.while_asked.pop(0)(request)
            if asyncio.iscoroutine(done):
                await done
        return Answer(self.answers.pop(0), confirmed=True)


class Bwrap:
    available = True

    def describe(self) -> str:
        return "bwrap"


@dataclass
class Setup:
    h: Harness
    channel: Channel
    hold: Path
    log: Path

    def ran(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    async def change(self, kind: str) -> None:
        """Ask the server to change `target` with the re-listing held (the change tool
        itself is granted for the session at its first call)."""
        self.hold.touch()
        result = await self.h.call("mcp__shift__change", {"kind": kind})
        assert result.text == f"changed: {kind}", result.content

    async def listed(self) -> None:
        """Let the held re-listing answer, and wait until it is in."""
        self.hold.unlink(missing_ok=True)
        definitions = self.h.registry.get("mcp__shift__change").annotations["mcp_definitions"]
        deadline = time.monotonic() + WAIT
        while definitions.suspended:
            assert time.monotonic() < deadline, "the re-listing never came in"
            await asyncio.sleep(0.02)

    def release(self, _request: ApprovalRequest) -> None:
        self.hold.unlink(missing_ok=True)

    async def call_in_window(self, text: str) -> ToolResult:
        """Call `target` while the re-listing is held; the listing comes in while the user
        looks at the question, which must say the grant is suspended."""
        self.channel.while_asked.append(self.release)
        asked = len(self.channel.requests)
        result = await self.h.call(TARGET, {"text": text})
        assert len(self.channel.requests) == asked + 1
        _asked_because_suspended(self.channel.requests[-1])
        return result


def _server(tmp_path: Path, port: int = 0) -> dict[str, Any]:
    args = [str(SHIFTING), "--hold", str(tmp_path / "hold"), "--log", str(tmp_path / "log")]
    if port:
        return {"url": f"http://127.0.0.1:{port}/mcp"}
    return {"command": sys.executable, "args": args}


async def _granted(tmp_path: Path, reins_home: AppPaths, h: Harness,
                   channel: Channel) -> Setup:
    """`target` and `change` granted for the session, `target` run once on its grant."""
    await h.manager.wait_for("shift", ready, WAIT)
    h.dispatcher.gate = PolicyGate(
        session_id="mcp-test", mode=Mode.AUTO, path_policy=h.dispatcher.path_policy,
        settings=load_settings(reins_home), sandbox=Bwrap(), channel=channel,
        emit=lambda _e: None, app_paths=reins_home)
    setup = Setup(h, channel, tmp_path / "hold", tmp_path / "log")
    assert (await h.call(TARGET, {"text": "granted"})).text == "v1: granted"
    assert (await h.call(TARGET, {"text": "on the grant"})).text == "v1: on the grant"
    assert len(channel.requests) == 1
    return setup


def _asked_because_suspended(request: ApprovalRequest) -> None:
    assert request.name == TARGET
    assert request.rule.startswith("grant suspended ")
    assert "announced that its tools changed" in request.reason


def _not_run(result: ToolResult) -> None:
    assert result.is_error and result.error_code is ErrorCode.EXECUTION_ERROR, result.content
    assert "was not run" in result.text


@pytest.mark.parametrize("kind", CHANGED)
def test_a_call_in_the_window_asks_and_does_not_run_the_changed_tool(
        tmp_path: Path, reins_home: AppPaths, kind: str) -> None:
    # answers: target (session), change (session), the window's call (once), the call
    # after the new list (denied)
    channel = Channel(["allow_session", "allow_session", "allow_once",
                       "deny"])

    async def main() -> None:
        async with harness(tmp_path, {"shift": _server(tmp_path)}) as h:
            s = await _granted(tmp_path, reins_home, h, channel)
            await s.change(kind)
            assert len(channel.requests) == 2
            raced = await s.call_in_window("raced")
            _not_run(raced)
            assert "changed 'target' after this call was approved" in raced.text
            await s.listed()
            after = await h.call(TARGET, {"text": "after"})
            assert len(channel.requests) == 4
            assert "changed since it was granted" in channel.requests[3].reason
            assert after.error_code is ErrorCode.APPROVAL_DENIED
            assert s.ran() == ["v1 granted", "v1 on the grant"]

    asyncio.run(main())


@pytest.mark.parametrize("kind", ["description", "schema", "same"])
def test_a_denied_call_in_the_window_never_reaches_the_server(
        tmp_path: Path, reins_home: AppPaths, kind: str) -> None:
    channel = Channel(["allow_session", "allow_session", "deny", "deny"])

    async def main() -> None:
        async with harness(tmp_path, {"shift": _server(tmp_path)}) as h:
            s = await _granted(tmp_path, reins_home, h, channel)
            await s.change(kind)
            for text in ("raced", "raced again"):  # the window stays open: every call asks
                result = await h.call(TARGET, {"text": text})
                assert result.error_code is ErrorCode.APPROVAL_DENIED
                _asked_because_suspended(channel.requests[-1])
            assert len(channel.requests) == 4
            await s.listed()
            assert s.ran() == ["v1 granted", "v1 on the grant"]

    asyncio.run(main())


def test_a_notification_without_a_change_suspends_only_until_the_new_list(
        tmp_path: Path, reins_home: AppPaths) -> None:
    channel = Channel(["allow_session", "allow_session", "allow_once"])

    async def main() -> None:
        async with harness(tmp_path, {"shift": _server(tmp_path)}) as h:
            s = await _granted(tmp_path, reins_home, h, channel)
            await s.change("same")
            raced = await s.call_in_window("raced")
            assert raced.text == "v1: raced"  # approved, and still the definition approved
            await s.listed()
            assert (await h.call(TARGET, {"text": "after"})).text == "v1: after"
            assert len(channel.requests) == 3  # the grant holds again
            assert s.ran() == ["v1 granted", "v1 on the grant", "v1 raced", "v1 after"]

    asyncio.run(main())


def test_a_tool_removed_then_readded_is_asked_about_in_each_window(
        tmp_path: Path, reins_home: AppPaths) -> None:
    channel = Channel(["allow_session", "allow_session", "allow_once",
                       "deny"])

    async def main() -> None:
        async with harness(tmp_path, {"shift": _server(tmp_path)}) as h:
            s = await _granted(tmp_path, reins_home, h, channel)
            await s.change("remove")
            gone = await s.call_in_window("while removed")
            _not_run(gone)
            assert "no longer offers 'target'" in gone.text
            await s.listed()
            assert (await h.call(TARGET, {"text": "x"})).error_code is ErrorCode.UNKNOWN_TOOL

            await s.change("readd")  # back exactly as it was granted: the grant holds
            await s.listed()
            assert (await h.call(TARGET, {"text": "back"})).text == "v1: back"
            assert len(channel.requests) == 3

            await s.change("remove")
            await s.listed()
            await s.change("readd-other")  # back as something else under the same name
            await s.listed()
            denied = await h.call(TARGET, {"text": "other"})
            assert "changed since it was granted" in channel.requests[-1].reason
            assert denied.error_code is ErrorCode.APPROVAL_DENIED
            assert len(channel.requests) == 4
            assert s.ran() == ["v1 granted", "v1 on the grant", "v1 back"]

    asyncio.run(main())


def test_a_change_while_the_user_is_asked_stops_the_approved_call(
        tmp_path: Path, reins_home: AppPaths) -> None:
    """Not yet granted: asked about v1; the server changes the tool while the question is
    open; the yes was for v1, so the call does not run on the new definition."""
    channel = Channel(["allow_once"])

    async def main() -> None:
        async with harness(tmp_path, {"shift": _server(tmp_path)}) as h:
            await h.manager.wait_for("shift", ready, WAIT)
            h.dispatcher.gate = PolicyGate(
                session_id="mcp-test", mode=Mode.AUTO, path_policy=h.dispatcher.path_policy,
                settings=load_settings(reins_home), sandbox=Bwrap(), channel=channel,
                emit=lambda _e: None, app_paths=reins_home)
            connection = h.manager.connection("shift")
            assert connection is not None

            async def change_now(_request: ApprovalRequest) -> None:
                await connection.call("change", {"kind": "description"}, timeout_s=WAIT)

            channel.while_asked.append(change_now)
            result = await h.call(TARGET, {"text": "approved for v1"})
            _not_run(result)
            assert "changed 'target' after this call was approved" in result.text
            assert not (tmp_path / "log").exists()

    asyncio.run(main())


@pytest.mark.parametrize("kind", ["schema", "annotations"])
def test_over_streamable_http_too(tmp_path: Path, reins_home: AppPaths, kind: str) -> None:
    port = free_port()
    process = http_server(port, SHIFTING, "--hold", str(tmp_path / "hold"), "--log",
                          str(tmp_path / "log"))
    channel = Channel(["allow_session", "allow_session", "deny"])
    try:

        async def main() -> None:
            async with harness(tmp_path, {"shift": _server(tmp_path, port)}) as h:
                s = await _granted(tmp_path, reins_home, h, channel)
                await s.change(kind)
                raced = await h.call(TARGET, {"text": "raced"})
                _asked_because_suspended(channel.requests[2])
                assert raced.error_code is ErrorCode.APPROVAL_DENIED
                await s.listed()
                assert s.ran() == ["v1 granted", "v1 on the grant"]

        asyncio.run(main())
    finally:
        process.terminate()
        process.wait(10)
