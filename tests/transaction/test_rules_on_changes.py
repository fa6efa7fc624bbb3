"""The user's write_file and edit_file deny and ask rules judge what a command changed, as
they judge the file tools' writes: the real gate, the real run_command in real bubblewrap on
a real overlay. A change to a path a deny rule names is never applied (whatever wrote it);
one an ask rule names is held and shown; the rest is applied. Table of settle's pure steps
first."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kernel.events import HELD_RULE, ApprovalRequest, Event
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
from kernel.tools.spec import ToolCall, ToolResult, WriteRule
from kernel.transaction.changeset import Change, ChangeSet
from kernel.transaction.checkpoints import Checkpoints
from kernel.transaction.judge import Judged
from kernel.transaction.settle import held_by_rules, without_denied
from tests.transaction.test_tool_steps import needs_bwrap

RULES = {"secrets/a": WriteRule("deny", "write_file(secrets/**)"),
         "docs/b": WriteRule("ask", "edit_file(docs/**)")}


def _change(path: str, previous: str = "") -> Change:
    return Change(path, "renamed" if previous else "created", "file", previous=previous)


@pytest.mark.parametrize(("change", "refused"), [
    (_change("secrets/a"), True),
    (_change("elsewhere/a", previous="secrets/a"), True),  # moved out of a denied path
    (_change("docs/b"), False),  # ask, not deny
    (_change("c"), False),
])
def test_a_change_a_deny_rule_names_is_refused(change: Change, refused: bool) -> None:
    kept, out = without_denied(ChangeSet((change,)), RULES.get)
    assert (out != ()) is refused and (kept.changes == ()) is refused
    if refused:
        assert out[0].rule == "write_file(secrets/**)"


@pytest.mark.parametrize(("change", "held"), [
    (_change("docs/b"), True),
    (_change("docs/c", previous="docs/b"), True),
    (_change("c"), False),
])
def test_a_change_an_ask_rule_names_is_held(change: Change, held: bool) -> None:
    judged = held_by_rules(Judged((change,), ()), RULES.get)
    assert (len(judged.held) == 1) is held and (len(judged.apply) == 1) is not held
    if held:
        assert "edit_file(docs/**)" in judged.held[0].why


COMMAND = ("mkdir -p secrets docs && echo key > secrets/a && python3 -c \"open('docs/b', 'w')"
           ".write('doc')\" && echo plain > c")


@needs_bwrap
@pytest.mark.parametrize("keep", [True, False])
def test_a_commands_writes_meet_the_users_rules(workspace: Path, reins_home: AppPaths,
                                                 keep: bool) -> None:
    reins_home.config.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text(json.dumps({"permissions": {
        "allow": ["run_command"], "deny": ["write_file(secrets/**)"],
        "ask": ["edit_file(docs/**)"]}}))
    executor = CommandExecutor(reins_home, transactions=True, ahead=False)
    if not executor.transactions:
        pytest.skip("commands do not run as transactions here")
    events: list[Event] = []
    channel = QueueChannel()
    policy = PathPolicy(workspace, app_paths=reins_home)
    gate = PolicyGate(session_id="s1", mode=Mode.AUTO, path_policy=policy,
                      settings=load_settings(reins_home),
                      sandbox=SandboxFacts(executor.status(), executor.transactions),
                      channel=channel, emit=events.append, app_paths=reins_home)
    asked: list[ApprovalRequest] = []

    async def answering() -> None:
        while True:
            request = await channel.requests.get()
            asked.append(request)
            channel.answer(request.call_id, Answer("allow_once" if keep else "deny"))

    async def main(dispatcher: Dispatcher) -> ToolResult:
        helper = asyncio.ensure_future(answering())
        try:
            return await dispatcher.dispatch(ToolCall("c1", "run_command",
                                                      {"command": COMMAND}))
        finally:
            helper.cancel()

    with Checkpoints(reins_home.checkpoints) as checkpoints:
        dispatcher = Dispatcher(
            ToolRegistry([make_run_command(executor)]), session_id="s1",
            workspace=workspace, outputs=OutputStore.for_session(reins_home, "s1"),
            path_policy=policy, gate=gate, checkpoints=checkpoints)
        result = asyncio.run(main(dispatcher))
    text = str(result.content)
    assert not result.is_error, text
    (review,) = asked  # the command itself was allowed by its rule; the held change asked
    assert review.rule == HELD_RULE and "docs/b" in review.preview
    assert "secrets/a" not in review.preview
    assert not (workspace / "secrets" / "a").exists()
    assert "refused by the user's deny rules: secrets/a (write_file(secrets/**))" in text
    assert (workspace / "c").read_text() == "plain\n"
    assert (workspace / "docs" / "b").exists() is keep
