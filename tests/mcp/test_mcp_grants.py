"""Grants of MCP tools record the tool's fingerprint; a changed tool suspends its grant.

Unit tests of the record, then the real PolicyGate in front of the real dispatcher with the
FastMCP edge server swapping a granted tool.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kernel.events import ApprovalRequest
from kernel.mcp.fingerprint import ANNOTATION_KEY
from kernel.mcp.grants import GrantFingerprints
from kernel.paths import AppPaths
from kernel.policy.approvals import PolicyGate
from kernel.policy.channels import Answer, Choice
from kernel.policy.decide import Mode
from kernel.policy.settings import load_settings
from kernel.tools.spec import ErrorCode, ToolSpec
from tests.mcp.conftest import edge, harness
from tests.mcp.test_mcp_servers import WAIT, ready

SCHEMA = {"type": "object", "properties": {}}


def _spec(name: str, fingerprint: str | None = None) -> ToolSpec:
    return ToolSpec(name=name, description="d", input_schema=SCHEMA, handler=lambda: None,
                    annotations={ANNOTATION_KEY: fingerprint} if fingerprint else {})


def test_a_recorded_grant_covers_only_the_definition_the_user_saw(tmp_path: Path) -> None:
    store = GrantFingerprints(tmp_path / "fp.json")
    store.record(["mcp__s__t"], _spec("mcp__s__t", "sha256:1"))
    assert store.check("mcp__s__t", _spec("mcp__s__t", "sha256:1")).valid
    changed = store.check("mcp__s__t", _spec("mcp__s__t", "sha256:2"))
    assert not changed.valid
    assert "changed since it was granted" in changed.reason and "mcp__s__t" in changed.reason
    again = GrantFingerprints(tmp_path / "fp.json")
    assert not again.check("mcp__s__t", _spec("mcp__s__t", "sha256:2")).valid
    again.record(["mcp__s__t"], _spec("mcp__s__t", "sha256:2"))
    assert GrantFingerprints(tmp_path / "fp.json").check(
        "mcp__s__t", _spec("mcp__s__t", "sha256:2")).valid


def test_hand_written_rules_are_guarded_from_first_use(tmp_path: Path) -> None:
    store = GrantFingerprints(tmp_path / "fp.json")
    assert store.check("mcp__git__*", _spec("mcp__git__status", "sha256:1")).valid
    assert store.recorded("mcp__git__*") == {"mcp__git__status": "sha256:1"}
    assert not store.check("mcp__git__*", _spec("mcp__git__status", "sha256:9")).valid
    assert store.check("read_file", _spec("read_file")).valid
    assert store.recorded("read_file") == {}


def test_unreadable_records_ask_again_instead_of_trusting(tmp_path: Path) -> None:
    path = tmp_path / "fp.json"
    path.write_text("{not json")
    store = GrantFingerprints(path)
    verdict = store.check("mcp__s__t", _spec("mcp__s__t", "sha256:1"))
    assert not verdict.valid and "could not be read" in verdict.reason
    store.record(["mcp__s__t"], _spec("mcp__s__t", "sha256:1"))
    assert store.check("mcp__s__t", _spec("mcp__s__t", "sha256:1")).valid


class Scripted:
    """The user's answers, in order; every request is kept."""

    name = "ui"

    def __init__(self, *answers: Choice) -> None:
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest, *, destructive: bool) -> Answer:
        self.requests.append(request)
        return Answer(self.answers.pop(0))


class NoSandbox:
    available = True

    def describe(self) -> str:
        return "bwrap"


def test_swapped_tool_after_a_session_grant_asks_again(
        tmp_path: Path, reins_home: AppPaths) -> None:
    channel = Scripted("allow_session", "allow_once", "allow_session")
    events: list[Any] = []

    async def main() -> None:
        async with harness(tmp_path, {"edge": edge()}) as h:
            await h.manager.wait_for("edge", ready, WAIT)
            h.dispatcher.gate = PolicyGate(
                session_id="mcp-test", mode=Mode.AUTO, path_policy=h.dispatcher.path_policy,
                settings=load_settings(reins_home), sandbox=NoSandbox(), channel=channel,
                emit=events.append, app_paths=reins_home)

            first = await h.call("mcp__edge__echo", {"text": "one"})
            assert first.text == "one" and len(channel.requests) == 1
            assert "comes from mcp:edge" in channel.requests[0].reason
            second = await h.call("mcp__edge__echo", {"text": "two"})
            assert second.text == "two" and len(channel.requests) == 1

            await h.call("mcp__edge__swap")
            assert len(channel.requests) == 2  # swap itself is another tool: asked
            await h.manager.wait_for(
                "edge",
                lambda s: "target" in h.registry.get("mcp__edge__echo").input_schema[
                    "properties"], WAIT)
            third = await h.call("mcp__edge__echo", {"text": "three", "target": "x"})
            assert len(channel.requests) == 3
            suspended = channel.requests[2]
            assert suspended.name == "mcp__edge__echo"
            assert "changed since it was granted" in suspended.reason
            assert suspended.rule == "grant suspended mcp__edge__echo"
            assert third.text == "sent three to x"

            fourth = await h.call("mcp__edge__echo", {"text": "four"})
            assert fourth.text == "sent four to " and len(channel.requests) == 3

    asyncio.run(main())
    decisions = [e for e in events if e.type == "approval_decision" and e.decided_by == "ui"]
    assert [d.decision for d in decisions] == ["allow_session", "allow_once", "allow_session"]


def test_denied_reapproval_keeps_the_swapped_tool_from_running(
        tmp_path: Path, reins_home: AppPaths) -> None:
    channel = Scripted("allow_always", "allow_once", "deny")

    async def main() -> None:
        async with harness(tmp_path, {"edge": edge()}) as h:
            await h.manager.wait_for("edge", ready, WAIT)
            h.dispatcher.gate = PolicyGate(
                session_id="mcp-test", mode=Mode.ASK, path_policy=h.dispatcher.path_policy,
                settings=load_settings(reins_home), sandbox=NoSandbox(), channel=channel,
                emit=lambda _e: None, app_paths=reins_home)
            assert (await h.call("mcp__edge__echo", {"text": "a"})).text == "a"
            assert "mcp__edge__echo" in load_settings(reins_home).raw["permissions"]["allow"]
            await h.call("mcp__edge__swap")
            await h.manager.wait_for(
                "edge",
                lambda s: "target" in h.registry.get("mcp__edge__echo").input_schema[
                    "properties"], WAIT)
            denied = await h.call("mcp__edge__echo", {"text": "b", "target": "evil"})
            assert denied.error_code is ErrorCode.APPROVAL_DENIED
            assert "changed since it was granted" in channel.requests[-1].reason

    asyncio.run(main())
