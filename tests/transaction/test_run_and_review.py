"""Run and review, the kernel's whole path: the real gate asks and offers it, the person
chooses it through the channel, the real run_command runs in real bubblewrap on a real
overlay without the network, every change (ordinary and held) is shown with its diff as a
second request of that call, and nothing is in the workspace until it is kept: kept, it is
one checkpoint step that undoes; discarded, nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kernel.events import HELD_RULE, ApprovalDecision, ApprovalRequest, Event
from kernel.paths import AppPaths
from kernel.policy.approvals import PolicyGate
from kernel.policy.channels import Answer, QueueChannel
from kernel.policy.decide import Mode
from kernel.policy.settings import load_settings
from kernel.runtime.assemble import SandboxFacts
from kernel.sandbox.executor import CommandExecutor
from kernel.tools.builtin.command import make_run_command
from kernel.tools.dispatch import Dispatcher
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import ToolCall, ToolResult
from kernel.transaction.checkpoints import Checkpoints
from tests.transaction.test_tool_steps import needs_bwrap

COMMAND = ("echo two >> notes.txt && echo new > new.txt && mkdir -p .vscode && "
           "echo '{}' > .vscode/tasks.json")


@needs_bwrap
@pytest.mark.parametrize("keep", [True, False])
def test_run_and_review_applies_nothing_until_kept(workspace: Path, reins_home: AppPaths,
                                                   keep: bool) -> None:
    (workspace / "notes.txt").write_text("one\n")
    executor = CommandExecutor(reins_home, transactions=True, ahead=False)
    events: list[Event] = []
    channel = QueueChannel()
    policy = PathPolicy(workspace, app_paths=reins_home)
    gate = PolicyGate(session_id="s1", mode=Mode.ASK, path_policy=policy,
                      settings=load_settings(reins_home),
                      sandbox=SandboxFacts(executor.status(), executor.transactions),
                      channel=channel, emit=events.append, app_paths=reins_home)
    asked: list[ApprovalRequest] = []
    while_reviewed: list[set[str]] = []

    async def answering() -> None:
        request = await channel.requests.get()
        asked.append(request)
        channel.answer(request.call_id, Answer("allow_review"))
        review = await channel.requests.get()
        asked.append(review)
        while_reviewed.append({p.name for p in workspace.iterdir()})
        channel.answer(review.call_id, Answer("allow_once" if keep else "deny"))

    async def main(dispatcher: Dispatcher) -> ToolResult:
        helper = asyncio.ensure_future(answering())
        try:
            return await dispatcher.dispatch(ToolCall("c1", "run_command",
                                                      {"command": COMMAND}))
        finally:
            helper.cancel()

    try:
        with Checkpoints(reins_home.checkpoints) as checkpoints:
            dispatcher = Dispatcher(
                ToolRegistry([make_run_command(executor)]), session_id="s1",
                workspace=workspace, outputs=OutputStore.for_session(reins_home, "s1"),
                path_policy=policy, gate=gate, checkpoints=checkpoints)
            result = asyncio.run(main(dispatcher))
            first, review = asked
            assert "allow_review" in first.offered()
            assert review.rule == HELD_RULE and review.offered() == ("allow_once", "deny")
            assert "You chose Run and review" in review.reason
            preview = review.preview
            lines = preview.splitlines()
            assert lines[0] == "Every changed path (4: 2 held, 2 ordinary):"
            assert lines[1].startswith("HELD created  dir ") and ".vscode" in lines[1]
            assert lines[2].startswith("HELD created  file ") and ".vscode/tasks.json" in \
                lines[2]
            for line in ("+two", "+new", "# notes.txt: modified", "# new.txt: created"):
                assert line in preview, preview
            assert while_reviewed == [{"notes.txt"}]  # nothing applied while asked
            decisions = [e for e in events if isinstance(e, ApprovalDecision)]
            assert [d.decision for d in decisions] == [
                "allow_review", "allow_once" if keep else "deny"]
            assert "network: off" in result.text and not result.is_error, result.text
            steps = checkpoints.steps("s1")
            if keep:
                assert (workspace / "notes.txt").read_text() == "one\ntwo\n"
                assert (workspace / ".vscode/tasks.json").exists()
                assert result.changes is not None and len(result.changes) == 4
                assert [s.call_id for s in steps] == ["c1"]  # one step, all of it
                assert "and kept them" in result.text
                assert checkpoints.undo("s1", "c1").ok
                assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt"]
                assert (workspace / "notes.txt").read_text() == "one\n"
            else:
                assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt"]
                assert (workspace / "notes.txt").read_text() == "one\n"
                assert result.changes is None and steps == []
                assert "discarded them: none of them is in the workspace" in result.text
    finally:
        executor.shutdown()
    assert not list((reins_home.data / "transactions").iterdir())
