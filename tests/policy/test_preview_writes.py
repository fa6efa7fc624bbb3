"""The approval preview of a command shows the command and the facts it runs with, and no
guess of what it writes: what it changed is shown after it ran, when a change is held
(kernel.transaction.settle). Through the real shell reader and path policy."""

from __future__ import annotations

import pytest

from kernel.policy.preview import build_preview
from tests.policy.worldkit import COMMAND, PolicyWorld


def preview(world: PolicyWorld, command: str) -> list[str]:
    facts = world.run_facts(command)
    text = build_preview(COMMAND, {"command": command}, policy=world.policy,
                         paths=facts.paths, sandbox="bubblewrap", network=False)
    return text.replace(str(world.workspace), "WS").split("\n")


@pytest.mark.parametrize("command", [
    "ls -la", "echo hi > out.txt", "tee .git/hooks/pre-commit", "cp x ~/.bashrc",
    'echo x > "$F"', "sed -i s/a/b/ .env",
])
def test_a_commands_preview_is_the_command_and_its_facts(world: PolicyWorld,
                                                         command: str) -> None:
    assert preview(world, command) == [f"$ {command}", "cwd: WS", "sandbox: bubblewrap",
                                       "network: no"]


def test_a_line_of_the_command_cannot_pass_for_a_fact(world: PolicyWorld) -> None:
    shown = preview(world, "echo hi\ncwd: /elsewhere > real.txt")
    assert shown[:2] == ["$ echo hi", "> cwd: /elsewhere > real.txt"]
    assert [line for line in shown if line.startswith("cwd:")] == ["cwd: WS"]
