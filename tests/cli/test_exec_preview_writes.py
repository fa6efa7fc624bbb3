"""Through `reins exec` in ask mode: the approval request of a command names the files its
redirections would write; denied, nothing is written."""

from __future__ import annotations

from kernel.fakemodel import ToolUse, reply
from tests.cli.conftest import Cli, events


def test_the_approval_preview_names_the_redirected_files(cli: Cli):
    cli.server.add(reply(ToolUse("run_command", {"command": "echo hi > out.txt 2>> ~/x.pth"},
                                 id="c1")), reply("ok"))
    code, out, err = cli.call("exec", "--json", "--mode", "ask", "--approve", "deny", "write")
    assert code == 0, err
    (request,) = [e for e in events(out) if e["type"] == "approval_request"]
    lines = request["preview"].splitlines()
    assert f"writes: {cli.workspace}/out.txt" in lines
    assert any(line.startswith("writes: ") and line.endswith("x.pth (outside the workspace)")
               for line in lines)
    assert not (cli.workspace / "out.txt").exists()
