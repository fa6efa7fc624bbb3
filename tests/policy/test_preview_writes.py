"""The approval preview of a command lists the files its redirections write (issue 15):
resolved, with what the path policy says of each, and the targets no one can know before
the command runs. A table over many spellings, through the real shell reader and path
policy."""

from __future__ import annotations

import pytest

from kernel.policy.preview import build_preview
from tests.policy.worldkit import COMMAND, PolicyWorld


def writes_shown(world: PolicyWorld, command: str) -> list[str]:
    args = {"command": command}
    facts = world.run_facts(command)
    text = build_preview(COMMAND, args, policy=world.policy, paths=facts.paths,
                         sandbox="bubblewrap", network=False, command=facts.command,
                         writes=facts.writes)
    assert text.startswith("$ ") and "\nnetwork: no" in text
    return [line.replace(str(world.workspace), "WS").replace(str(world.home), "HOME")
            for line in text.split("\nnetwork: no", 1)[1].splitlines() if line]


@pytest.mark.parametrize(("command", "shown"), [
    ("ls -la", []),
    ("echo hi > out.txt", ["writes: WS/out.txt"]),
    ("echo hi>out.txt", ["writes: WS/out.txt"]),
    ("echo hi >>log.txt", ["writes: WS/log.txt"]),
    ("echo hi 1> out.txt", ["writes: WS/out.txt"]),
    ("make 2> err.log", ["writes: WS/err.log"]),
    ("make &> all.log", ["writes: WS/all.log"]),
    ("echo hi >| forced.txt", ["writes: WS/forced.txt"]),
    ("cat a 2> err.log > out.txt", ["writes: WS/err.log", "writes: WS/out.txt"]),
    ("echo hi > 'with space.txt'", ["writes: WS/with space.txt"]),
    ("echo hi | tee -a x > y.txt", ["writes: WS/y.txt", "writes: WS/x"]),
    ("tee .git/hooks/pre-commit", ["writes: WS/.git/hooks/pre-commit (protected: .git/**)"]),
    ("cp x ~/.bashrc", ["writes: HOME/.bashrc (protected: .bashrc)"]),
    ("sed -i s/a/b/ .env", ["writes: WS/.env (a secret location: environment files (API "
                             "keys and passwords))"]),
    ("dd if=/dev/zero of=out.bin", ["writes: WS/out.bin"]),
    ("curl -so /dev/null https://x", []),
    ('tee "$F"', ["writes, to a file known only when it runs: $F"]),
    ("echo a > /dev/null", []),
    ("echo x 2>&1", []),
    ("echo hi >> ~/x.pth", ["writes: HOME/x.pth (outside the workspace)"]),
    ("echo x > /tmp/elsewhere.txt", ["writes: /tmp/elsewhere.txt (outside the workspace)"]),
    ("echo k >> ~/.ssh/authorized_keys",
     ["writes: HOME/.ssh/authorized_keys (a secret location: SSH private keys and "
      "configuration)"]),
    ("echo x > .git/config", ["writes: WS/.git/config (protected: .git/**)"]),
    ("cat > f.txt <<EOF\nhi\nEOF", ["writes: WS/f.txt"]),
    ("bash -c 'echo x > inner.txt'", ["writes: WS/inner.txt"]),
    ("sh -c \"echo x >> ~/.bashrc\"", ["writes: HOME/.bashrc (protected: .bashrc)"]),
    ('echo x > "$F"', ["writes, to a file known only when it runs: $F"]),
    ("echo x > $(mktemp)", ["writes, to a file known only when it runs: $(mktemp)"]),
    ("cd sub && echo x > rel.txt", ["writes, to a file known only when it runs: rel.txt"]),
])
def test_a_commands_preview_lists_what_it_writes(world: PolicyWorld, command, shown):
    assert writes_shown(world, command) == shown


def test_a_preview_line_of_the_command_cannot_pass_for_a_writes_line(world: PolicyWorld):
    shown = writes_shown(world, "echo hi\nwrites: nothing > real.txt")
    assert shown == ["writes: WS/real.txt"]
