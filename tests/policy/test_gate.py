"""The PolicyGate inside the real Dispatcher: approvals, denials, grants, channels."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kernel.events import ApprovalDecision, ApprovalRequest
from kernel.paths import AppPaths
from kernel.policy.channels import (
    Answer,
    ChannelUnavailable,
    FixedChannel,
    QueueChannel,
    TerminalChannel,
)
from kernel.policy.decide import Mode
from kernel.policy.settings import load_settings
from kernel.tools.spec import ErrorCode, ToolCall, ToolResult
from tests.policy import gatekit
from tests.policy.gatekit import Kit

Answerer = Callable[[ApprovalRequest], Answer]


async def _with_answers(channel: QueueChannel, answer: Answerer,
                        work: Awaitable[Any]) -> Any:
    """Run `work` while answering every request on `channel` with `answer(request)`."""
    async def answering() -> None:
        while True:
            request = await channel.requests.get()
            channel.answer(request.call_id, answer(request))

    helper = asyncio.ensure_future(answering())
    try:
        return await work
    finally:
        helper.cancel()


def _run(kit: Kit, calls: list[ToolCall], channel: QueueChannel | None = None,
         answer: Answerer | None = None) -> list[ToolResult]:
    async def main() -> list[ToolResult]:
        work = kit.dispatcher.dispatch_many(calls)
        if channel is None or answer is None:
            return await work
        return await _with_answers(channel, answer, work)

    return asyncio.run(main())


def _cmd(call_id: str, command: str, **extra: Any) -> ToolCall:
    return ToolCall(call_id, "run_command", {"command": command, **extra})


def test_denied_write_leaves_the_disk_untouched(workspace: Path, reins_home: AppPaths) -> None:
    target = workspace / "a.txt"
    target.write_text("old\n")
    kit = Kit(workspace, reins_home, channel=FixedChannel("deny"))
    [result] = _run(kit, [ToolCall("w1", "write_file", {"path": "a.txt", "content": "new\n"})])
    assert result.is_error and result.error_code is ErrorCode.APPROVAL_DENIED
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in workspace.iterdir()) == ["a.txt"]
    [request] = kit.of_type("approval_request")
    assert (request.call_id, request.name, request.risk) == ("w1", "write_file", "write")
    assert "-old\n+new\n" in request.preview
    assert request.rule == "mode ask"
    [decision] = kit.of_type("approval_decision")
    assert (decision.call_id, decision.decision, decision.decided_by, decision.scope) == (
        "w1", "deny", "cli", "call")
    assert kit.events.index(request) < kit.events.index(decision)


def test_denied_command_never_starts(workspace: Path, reins_home: AppPaths) -> None:
    gatekit.CONTEXTS.clear()
    kit = Kit(workspace, reins_home, mode=Mode.AUTO, channel=FixedChannel("deny"),
              sandboxed=False)
    [result] = _run(kit, [_cmd("c1", "touch started")])
    assert result.error_code is ErrorCode.APPROVAL_DENIED
    assert not (workspace / "started").exists()
    assert gatekit.CONTEXTS == []
    [request] = kit.of_type("approval_request")
    assert "every command needs your OK" in request.reason
    assert request.preview.splitlines()[:4] == [
        "$ touch started", f"cwd: {workspace}", "sandbox: none (bubblewrap is not installed)",
        "network: no"]


def test_deny_rule_refuses_without_asking(workspace: Path, reins_home: AppPaths) -> None:
    reins_home.settings_file.parent.mkdir(parents=True)
    reins_home.settings_file.write_text('{"permissions": {"deny": ["run_command(touch *)"]}}')
    channel = QueueChannel()
    kit = Kit(workspace, reins_home, mode=Mode.AUTO, channel=channel)
    [result] = _run(kit, [_cmd("c1", "echo hi && touch x")])
    assert result.error_code is ErrorCode.PERMISSION_DENIED
    assert "run_command(touch *)" in result.text
    assert not (workspace / "x").exists()
    assert kit.of_type("approval_request") == []
    [decision] = kit.of_type("approval_decision")
    assert (decision.decision, decision.decided_by, decision.rule) == (
        "deny", "policy", "rule deny run_command(touch *)")


def test_deny_message_reaches_the_model(workspace: Path, reins_home: AppPaths) -> None:
    channel = QueueChannel()
    kit = Kit(workspace, reins_home, channel=channel)
    [result] = _run(kit, [ToolCall("w", "write_file", {"path": "a", "content": "x"})], channel,
                    lambda _r: Answer("deny", message="write to notes/ instead"))
    assert result.error_code is ErrorCode.APPROVAL_DENIED
    assert "write to notes/ instead" in result.text
    [decision] = kit.of_type("approval_decision")
    assert decision.message == "write to notes/ instead"


def test_batch_with_one_denial_keeps_the_other_results(workspace: Path,
                                                       reins_home: AppPaths) -> None:
    (workspace / "r.txt").write_text("readable\n")
    channel = QueueChannel()
    kit = Kit(workspace, reins_home, channel=channel)
    calls = [
        ToolCall("r1", "read_file", {"path": "r.txt"}),
        ToolCall("w1", "write_file", {"path": "one.txt", "content": "1"}),
        ToolCall("w2", "write_file", {"path": "two.txt", "content": "2"}),
        ToolCall("r2", "read_file", {"path": "r.txt"}),
    ]
    results = _run(kit, calls, channel, lambda r: Answer(
        "deny" if r.call_id == "w1" else "allow_once"))
    assert [r.call_id for r in results] == ["r1", "w1", "w2", "r2"]
    assert [r.is_error for r in results] == [False, True, False, False]
    assert "readable" in results[0].text and "readable" in results[3].text
    assert not (workspace / "one.txt").exists()
    assert (workspace / "two.txt").read_text() == "2"
    assert [e.call_id for e in kit.of_type("approval_request")] == ["w1", "w2"]
    decisions = {e.call_id: (e.decision, e.decided_by) for e in kit.of_type("approval_decision")}
    assert decisions == {"r1": ("allow", "policy"), "w1": ("deny", "ui"),
                         "w2": ("allow_once", "ui"), "r2": ("allow", "policy")}


def test_requests_are_asked_one_at_a_time(workspace: Path, reins_home: AppPaths,
                                          tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in "abc":
        (outside / name).write_text(name)
    channel = QueueChannel()
    kit = Kit(workspace, reins_home, channel=channel)
    seen: list[int] = []

    def answer(request: ApprovalRequest) -> Answer:
        seen.append(len(channel.pending))
        return Answer("allow_once")

    calls = [ToolCall(f"r{n}", "read_file", {"path": str(outside / n)}) for n in "abc"]
    results = _run(kit, calls, channel, answer)
    assert seen == [1, 1, 1]
    assert [r.text.strip().split("\t")[-1] for r in results] == ["a", "b", "c"]
    assert not any(r.is_error for r in results)


def test_approved_outside_read_runs_and_only_that_path(workspace: Path, reins_home: AppPaths,
                                                       tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("outside content\n")
    channel = QueueChannel()
    kit = Kit(workspace, reins_home, channel=channel)
    [ok] = _run(kit, [ToolCall("r", "read_file", {"path": str(secret)})], channel,
                lambda _r: Answer("allow_once"))
    assert not ok.is_error and "outside content" in ok.text
    [again] = _run(kit, [ToolCall("r2", "read_file", {"path": str(secret)})], channel,
                   lambda _r: Answer("deny"))
    assert again.error_code is ErrorCode.APPROVAL_DENIED


def test_protected_write_asks_in_auto_and_cannot_be_granted(workspace: Path,
                                                            reins_home: AppPaths) -> None:
    (workspace / ".git").mkdir()
    channel = QueueChannel()
    kit = Kit(workspace, reins_home, mode=Mode.AUTO, channel=channel)
    call = ToolCall("p", "write_file", {"path": ".git/config", "content": "[core]\n"})
    [result] = _run(kit, [call], channel, lambda _r: Answer("allow_always"))
    assert not result.is_error, result.text
    assert (workspace / ".git/config").read_text() == "[core]\n"
    [request] = kit.of_type("approval_request")
    assert request.can_always is False
    assert request.always_rules == []
    assert ".git/config" in request.reason
    decision = kit.of_type("approval_decision")[-1]
    assert (decision.decision, decision.scope) == ("allow_once", "once")
    assert "cannot be always allowed" in decision.message
    assert load_settings(reins_home).permissions.allow.rules == ()
    call2 = ToolCall("p2", "write_file", {"path": ".git/config", "content": "[x]\n"})
    [denied] = _run(kit, [call2], channel, lambda _r: Answer("deny"))
    assert denied.error_code is ErrorCode.APPROVAL_DENIED
    assert (workspace / ".git/config").read_text() == "[core]\n"


def test_session_grant_matches_equivalent_calls_and_can_be_revoked(
        workspace: Path, reins_home: AppPaths) -> None:
    channel = QueueChannel()
    kit = Kit(workspace, reins_home, channel=channel)
    answers = iter([Answer("allow_session"), Answer("deny")])
    results = _run(kit, [_cmd("c1", "echo  hi"), _cmd("c2", "'echo' \"hi\""),
                         _cmd("c3", "echo hi there")], channel, lambda _r: next(answers))
    assert [r.is_error for r in results] == [False, False, True]
    assert [e.call_id for e in kit.of_type("approval_request")] == ["c1", "c3"]
    decisions = {e.call_id: e for e in kit.of_type("approval_decision")}
    assert (decisions["c1"].decision, decisions["c1"].scope, decisions["c1"].rule) == (
        "allow_session", "session", "run_command(echo hi)")
    assert (decisions["c2"].decided_by, decisions["c2"].rule) == (
        "policy", "session grant run_command(echo hi)")
    assert [g.rule.text for g in kit.gate.grants] == ["run_command(echo hi)"]
    kit.gate.revoke_session_grant("run_command(echo hi)")
    [revoked] = kit.of_type("grant_revoked")
    assert (revoked.rule, revoked.scope) == ("run_command(echo hi)", "session")
    [after] = _run(kit, [_cmd("c4", "echo hi")], channel, lambda _r: Answer("deny"))
    assert after.error_code is ErrorCode.APPROVAL_DENIED
    with pytest.raises(KeyError):
        kit.gate.revoke_session_grant("run_command(echo hi)")


def test_always_allow_writes_a_rule_and_can_be_revoked(workspace: Path,
                                                       reins_home: AppPaths) -> None:
    channel = QueueChannel()
    kit = Kit(workspace, reins_home, channel=channel)
    [first] = _run(kit, [_cmd("c1", "echo  saved")], channel,
                   lambda _r: Answer("allow_always"))
    assert not first.is_error
    [request] = kit.of_type("approval_request")
    assert request.preview.startswith("$ echo  saved\n") and "would save" not in request.preview
    assert request.always_rules == [{"rule": "run_command(echo saved)", "words": (
        "run_command: the command `echo saved` (any spacing or quoting), in every session")}]
    assert [r.text for r in load_settings(reins_home).permissions.allow.rules] == [
        "run_command(echo saved)"]
    other = Kit(workspace, reins_home, channel=FixedChannel("deny"), session_id="s2")
    [later] = _run(other, [_cmd("c2", "echo saved")])
    assert not later.is_error
    assert other.of_type("approval_request") == []
    assert other.of_type("approval_decision")[0].rule == "rule allow run_command(echo saved)"
    other.gate.revoke_always_rule("run_command(echo saved)")
    assert load_settings(reins_home).permissions.allow.rules == ()
    [revoked] = other.of_type("grant_revoked")
    assert revoked.scope == "always"
    [denied] = _run(other, [_cmd("c3", "echo saved")])
    assert denied.error_code is ErrorCode.APPROVAL_DENIED


def test_destructive_needs_confirmation_and_is_never_granted(workspace: Path,
                                                             reins_home: AppPaths) -> None:
    gatekit.CONTEXTS.clear()
    (workspace / "victim").mkdir()
    cli = Kit(workspace, reins_home, mode=Mode.AUTO, channel=FixedChannel("allow_once"))
    [refused] = _run(cli, [_cmd("d1", "rm -rf *")])
    assert refused.error_code is ErrorCode.APPROVAL_DENIED
    assert "second explicit confirmation" in refused.text
    assert (workspace / "victim").exists() and gatekit.CONTEXTS == []
    [request] = cli.of_type("approval_request")
    assert (request.risk, request.can_always) == ("destructive", False)
    assert request.always_rules == []

    channel = QueueChannel()
    ui = Kit(workspace, reins_home, mode=Mode.AUTO, channel=channel)
    [unconfirmed] = _run(ui, [_cmd("d2", "rm -rf *")], channel,
                         lambda _r: Answer("allow_session"))
    assert unconfirmed.error_code is ErrorCode.APPROVAL_DENIED
    [ok] = _run(ui, [_cmd("d3", "rm -rf *")], channel,
                lambda _r: Answer("allow_always", confirmed=True))
    assert not ok.is_error
    assert not (workspace / "victim").exists()
    decision = ui.of_type("approval_decision")[-1]
    assert (decision.decision, decision.scope) == ("allow_once", "once")
    assert ui.gate.grants == () and load_settings(reins_home).permissions.allow.rules == ()
    assert gatekit.CONTEXTS[-1].user_approved is True


def test_terminal_prompt(workspace: Path, reins_home: AppPaths) -> None:
    out = io.StringIO()
    terminal = TerminalChannel(io.StringIO("x\ns\n"), out)
    kit = Kit(workspace, reins_home, channel=terminal)
    results = _run(kit, [_cmd("t1", "echo one"), _cmd("t2", "echo  one")])
    assert [r.is_error for r in results] == [False, False]
    assert "approval needed: run_command" in out.getvalue()
    assert "please answer with one of: o, s, a, r, d" in out.getvalue()
    assert "$ echo one" in out.getvalue()
    assert ("[a]lways saves to settings: run_command(echo one) — the command `echo one` (any "
            "spacing or quoting), in every session") in out.getvalue()
    denied = TerminalChannel(io.StringIO("d: not now\n"), io.StringIO())
    kit = Kit(workspace, reins_home, channel=denied)
    [result] = _run(kit, [_cmd("t3", "echo two")])
    assert "not now" in result.text


def test_terminal_destructive_asks_to_type_yes(workspace: Path, reins_home: AppPaths) -> None:
    (workspace / "v").mkdir()
    out = io.StringIO()
    kit = Kit(workspace, reins_home, channel=TerminalChannel(io.StringIO("o\nno\n"), out))
    [result] = _run(kit, [_cmd("t", "rm -rf *")])
    assert result.error_code is ErrorCode.APPROVAL_DENIED
    assert "[o]nce [r]un and review [d]eny" in out.getvalue() and "type yes" in out.getvalue()
    kit = Kit(workspace, reins_home, channel=TerminalChannel(io.StringIO("o\nyes\n"),
                                                             io.StringIO()))
    [result] = _run(kit, [_cmd("t2", "rm -rf *")])
    assert not result.is_error


@pytest.mark.parametrize("how", ["none", "eof", "closed", "broken"])
def test_a_broken_channel_is_unavailable_not_denied(workspace: Path, reins_home: AppPaths,
                                                    how: str) -> None:
    class Broken:
        name = "ui"

        async def ask(self, request: ApprovalRequest, *, destructive: bool) -> Answer:
            raise BrokenPipeError("the UI went away")

    closed = QueueChannel()
    closed.close("the window was closed")
    channel = {"none": None, "eof": TerminalChannel(io.StringIO(""), io.StringIO()),
               "closed": closed, "broken": Broken()}[how]
    kit = Kit(workspace, reins_home, channel=channel)  # type: ignore[arg-type]
    [result] = _run(kit, [ToolCall("w", "write_file", {"path": "a", "content": "x"})])
    assert result.error_code is ErrorCode.APPROVAL_UNAVAILABLE
    assert "not a denial" in result.text and "denied" not in result.text
    assert not (workspace / "a").exists()
    [decision] = kit.of_type("approval_decision")
    assert decision.decision == "unavailable"


def test_closing_the_queue_channel_while_waiting(workspace: Path, reins_home: AppPaths) -> None:
    channel = QueueChannel()
    kit = Kit(workspace, reins_home, channel=channel)

    async def main() -> ToolResult:
        task = asyncio.ensure_future(kit.dispatcher.dispatch(
            ToolCall("w", "write_file", {"path": "a", "content": "x"})))
        await channel.requests.get()
        channel.close("the user quit")
        return await task

    result = asyncio.run(main())
    assert result.error_code is ErrorCode.APPROVAL_UNAVAILABLE
    assert "the user quit" in result.text
    assert channel.answer("w", Answer("allow_once")) is False


def test_network_is_given_only_with_the_users_approval(workspace: Path,
                                                       reins_home: AppPaths) -> None:
    gatekit.CONTEXTS.clear()
    channel = QueueChannel()
    kit = Kit(workspace, reins_home, mode=Mode.AUTO, channel=channel)
    results = _run(kit, [_cmd("n1", "true"), _cmd("n2", "curl --version >/dev/null; true")],
                   channel, lambda _r: Answer("allow_session"))
    assert [r.is_error for r in results] == [False, False]
    assert [(c.call_id, c.network, c.user_approved) for c in gatekit.CONTEXTS] == [
        ("n1", False, False), ("n2", True, True)]
    [request] = kit.of_type("approval_request")
    assert "needs the network" in request.reason
    assert "network: yes" in request.preview
    assert kit.of_type("approval_decision")[-1].network is True


def test_read_only_mode_denies_writes_without_asking(workspace: Path,
                                                     reins_home: AppPaths) -> None:
    kit = Kit(workspace, reins_home, mode=Mode.READ_ONLY, channel=FixedChannel("allow_once"))
    [result] = _run(kit, [ToolCall("w", "write_file", {"path": "a", "content": "x"})])
    assert result.error_code is ErrorCode.PERMISSION_DENIED
    assert "read-only" in result.text
    assert kit.of_type("approval_request") == []


def test_bad_path_is_invalid_arguments(workspace: Path, reins_home: AppPaths) -> None:
    kit = Kit(workspace, reins_home, channel=FixedChannel("allow_once"))
    [result] = _run(kit, [ToolCall("r", "read_file", {"path": "a\x00b"})])
    assert result.error_code is ErrorCode.INVALID_ARGUMENTS


def test_decisions_in_history_are_reused(workspace: Path, reins_home: AppPaths) -> None:
    history = [
        ApprovalRequest("s1", "w", "write_file", {"path": "a", "content": "x"}, "write", "r"),
        ApprovalDecision("s1", "w", "allow_once", decided_by="ui"),
    ]
    channel = QueueChannel()
    kit = Kit(workspace, reins_home, channel=channel, history=history)
    [result] = _run(kit, [ToolCall("w", "write_file", {"path": "a", "content": "x"})])
    assert not result.is_error
    assert (workspace / "a").read_text() == "x"
    assert kit.events == [] and kit.reported == []


def test_queue_channel_refuses_after_close() -> None:
    channel = QueueChannel()
    channel.close("gone")
    request = ApprovalRequest("s", "c", "t", {}, "read", "r")
    with pytest.raises(ChannelUnavailable, match="gone"):
        asyncio.run(channel.ask(request, destructive=False))


def test_rules_changed_on_disk_apply_to_running_gates(workspace: Path,
                                                      reins_home: AppPaths) -> None:
    channel = QueueChannel()
    first = Kit(workspace, reins_home, channel=channel, session_id="s1")
    second = Kit(workspace, reins_home, channel=FixedChannel("deny"), session_id="s2")
    [saved] = _run(first, [_cmd("a1", "echo shared")], channel,
                   lambda _r: Answer("allow_always"))
    assert not saved.is_error
    [allowed] = _run(second, [_cmd("b1", "echo shared")])
    assert not allowed.is_error and second.of_type("approval_request") == []
    second.gate.revoke_always_rule("run_command(echo shared)")
    [asked] = _run(first, [_cmd("a2", "echo shared")], channel, lambda _r: Answer("deny"))
    assert asked.error_code is ErrorCode.APPROVAL_DENIED
    reins_home.settings_file.write_text('{"permissions": {"allow": ["run_command(echo"]}}')
    [broken] = _run(second, [_cmd("b2", "echo shared")])
    assert broken.error_code is ErrorCode.PERMISSION_DENIED
    assert "settings.json" in broken.text and "run_command(echo" in broken.text


def test_every_decision_records_who_when_rule_and_scope(workspace: Path,
                                                        reins_home: AppPaths) -> None:
    import time

    before = time.time()
    channel = QueueChannel()
    kit = Kit(workspace, reins_home, channel=channel)
    _run(kit, [ToolCall("r", "read_file", {"path": "."}),
               _cmd("c", "echo x")], channel, lambda _r: Answer("allow_session"))
    kit.gate.revoke_session_grant("run_command(echo x)")
    decisions = kit.of_type("approval_decision")
    assert [(d.decided_by, d.scope, d.rule) for d in decisions] == [
        ("policy", "call", "mode ask"), ("ui", "session", "run_command(echo x)")]
    stamps = [d.decided_at for d in decisions] + [kit.of_type("grant_revoked")[0].revoked_at]
    assert all(before <= t <= time.time() for t in stamps)


def test_a_cancelled_terminal_prompt_does_not_keep_the_process_waiting() -> None:
    read_end, write_end = os.pipe()
    stdin = os.fdopen(read_end, "r")
    channel = TerminalChannel(stdin, io.StringIO())
    request = ApprovalRequest("s", "c", "write_file", {}, "write", "mode ask")

    async def main() -> bool:
        task = asyncio.ensure_future(channel.ask(request, destructive=False))
        await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    try:
        assert asyncio.run(main()) is True
    finally:
        os.close(write_end)


def test_the_approval_carries_the_risk_level(workspace: Path, reins_home: AppPaths) -> None:
    """The level the UI paints follows the command (issue 29 §4): `date` is not alarming."""
    kit = Kit(workspace, reins_home, mode=Mode.ASK, channel=FixedChannel("deny"))
    lines = {"c1": "date", "c2": "make", "c3": "curl https://example.com",
             "c4": "sudo ls", "c5": "rm -rf ~"}
    _run(kit, [_cmd(call_id, line) for call_id, line in lines.items()])
    got = {r.call_id: r.risk_level for r in kit.of_type("approval_request")}
    assert got == {"c1": "harmless", "c2": "ordinary", "c3": "network", "c4": "privilege",
                   "c5": "destructive"}
    reasons = {r.call_id: r.reason for r in kit.of_type("approval_request")}
    assert reasons["c1"].startswith("Commands need your OK in Ask mode")
