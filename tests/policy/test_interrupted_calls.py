"""A call allowed and then interrupted before its result (the kernel died while it ran):
a command is asked again before it reruns, whatever the mode or the earlier answer; reads
and whole-file writes run again as decided. `ask_history` reads approvals in order."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kernel.events import ApprovalDecision, ApprovalRequest, Event
from kernel.paths import AppPaths
from kernel.policy.approvals import INTERRUPTED_REASON, ask_history
from kernel.policy.channels import Answer, FixedChannel, QueueChannel
from kernel.policy.decide import Mode
from kernel.tools.spec import ErrorCode, ToolCall
from tests.policy.gatekit import Kit

REQ = ApprovalRequest("s1", "c", "run_command", {"command": "x"}, "execute", "asks")
REQ2 = ApprovalRequest("s1", "c", "run_command", {"command": "x"}, "execute", "again")


def _dec(decision: str, by: str = "ui", call_id: str = "c") -> ApprovalDecision:
    return ApprovalDecision("s1", call_id, decision, decided_by=by)


@pytest.mark.parametrize(("history", "request_", "decision", "allowed"), [
    ([], None, None, False),
    ([REQ], REQ, None, False),
    ([REQ, _dec("allow_once")], REQ, "allow_once", True),
    ([REQ, _dec("allow_session")], REQ, "allow_session", True),
    ([REQ, _dec("allow_always")], REQ, "allow_always", True),
    ([REQ, _dec("deny")], REQ, "deny", False),
    ([REQ, _dec("unavailable")], REQ, None, False),
    ([_dec("allow", by="policy")], None, None, True),
    ([_dec("deny", by="policy")], None, None, False),
    # asked again after an interruption: the earlier answer does not count for it
    ([REQ, _dec("allow_once"), REQ2], REQ2, None, False),
    ([REQ, _dec("allow_once"), REQ2, _dec("deny")], REQ2, "deny", False),
    ([REQ, _dec("allow_once"), REQ2, _dec("allow_once")], REQ2, "allow_once", True),
    ([_dec("allow", by="policy"), REQ2], REQ2, None, False),
    # other calls do not mix in
    ([REQ, _dec("allow_once", call_id="other")], REQ, None, False),
])
def test_ask_history_reads_approvals_in_order(history: list[Event],
                                              request_: ApprovalRequest | None,
                                              decision: str | None, allowed: bool) -> None:
    asked = ask_history(history)
    assert asked.requests.get("c") is request_
    found = asked.decisions.get("c")
    assert (found.decision if found else None) == decision
    assert ("c" in asked.allowed) is allowed


MARK = "echo ran >> marks.txt"


def _ask_once(kit: Kit, channel: QueueChannel, answer: Answer, call: ToolCall
              ) -> tuple[list[ApprovalRequest], object]:
    asked: list[ApprovalRequest] = []

    async def main() -> object:
        async def answering() -> None:
            while True:
                request = await channel.requests.get()
                asked.append(request)
                channel.answer(request.call_id, answer)

        helper = asyncio.ensure_future(answering())
        try:
            return await kit.dispatcher.dispatch(call)
        finally:
            helper.cancel()

    return asked, asyncio.run(main())


@pytest.mark.parametrize(("mode", "history"), [
    (Mode.AUTO, [_dec("allow", by="policy")]),
    (Mode.ASK, [REQ, _dec("allow_once")]),
    (Mode.ASK, [REQ, _dec("allow_session")]),
    (Mode.AUTO, [REQ, _dec("allow_once")]),
])
def test_an_interrupted_command_is_asked_again_before_it_reruns(
        workspace: Path, reins_home: AppPaths, mode: Mode, history: list[Event]) -> None:
    channel = QueueChannel()
    kit = Kit(workspace, reins_home, mode=mode, channel=channel, history=history)
    call = ToolCall("c", "run_command", {"command": MARK})
    asked, result = _ask_once(kit, channel, Answer("deny"), call)
    [request] = asked
    assert request.reason == INTERRUPTED_REASON and request.rule == "interrupted call"
    assert MARK in request.preview and not request.can_always
    assert getattr(result, "error_code", None) is ErrorCode.APPROVAL_DENIED
    assert not (workspace / "marks.txt").exists()
    assert kit.of_type("approval_request") == [request]

    # Allowed this time, it runs once; a later gate over this history does not re-ask
    # because of the first interruption (the new request starts over).
    channel = QueueChannel()
    again = Kit(workspace, reins_home, mode=mode, channel=channel,
                history=[*history, request])
    asked, result = _ask_once(again, channel, Answer("allow_session"), call)
    assert [r.reason for r in asked] == [INTERRUPTED_REASON]
    assert not getattr(result, "is_error", True)
    assert (workspace / "marks.txt").read_text() == "ran\n"
    [decision] = again.of_type("approval_decision")
    assert (decision.decision, decision.scope) == ("allow_once", "once")  # not a grant


def test_reads_and_writes_rerun_as_decided(workspace: Path, reins_home: AppPaths) -> None:
    (workspace / "r.txt").write_text("hello")
    history: list[Event] = [_dec("allow", by="policy", call_id="r"),
                            ApprovalRequest("s1", "w", "write_file", {}, "write", "asks"),
                            _dec("allow_once", call_id="w")]
    kit = Kit(workspace, reins_home, channel=FixedChannel("deny"), history=history)

    async def main() -> list[object]:
        return list(await kit.dispatcher.dispatch_many([
            ToolCall("r", "read_file", {"path": "r.txt"}),
            ToolCall("w", "write_file", {"path": "w.txt", "content": "x"})]))

    results = asyncio.run(main())
    assert [getattr(r, "is_error", True) for r in results] == [False, False]
    assert (workspace / "w.txt").read_text() == "x"
    assert kit.of_type("approval_request") == []

