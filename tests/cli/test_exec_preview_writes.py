"""Through `reins exec` in ask mode: the approval request of a command shows the exact
command and the facts it runs with, no guess of what it writes (issue 29: what it wrote is
judged after it ran); denied, nothing is written."""

from __future__ import annotations

from kernel.fakemodel import ToolUse, reply
from tests.cli.conftest import Cli, events


def test_the_approval_preview_is_the_command_and_its_facts(cli: Cli):
    cli.server.add(reply(ToolUse("run_command", {"command": "echo hi > out.txt 2>> ~/x.pth"},
                                 id="c1")), reply("ok"))
    code, out, err = cli.call("exec", "--json", "--mode", "ask", "--approve", "deny", "write")
    assert code == 0, err
    (request,) = [e for e in events(out) if e["type"] == "approval_request"]
    lines = request["preview"].splitlines()
    assert lines[0] == "$ echo hi > out.txt 2>> ~/x.pth"
    assert [line.split(":")[0] for line in lines[1:]] == ["cwd", "sandbox", "network"]
    assert not (cli.workspace / "out.txt").exists()
