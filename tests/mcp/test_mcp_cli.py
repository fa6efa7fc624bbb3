"""`reins exec` with an MCP server in settings.json: a real process, end to end."""

from __future__ import annotations

import json
import uuid

import psutil

from kernel.fakemodel import ToolUse, reply
from tests.cli.conftest import Cli, cli, events, types
from tests.mcp.conftest import EDGE, edge

__all__ = ["cli"]


def _edge_processes(mark: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if str(EDGE) in (proc.info["cmdline"] or []) and \
                    proc.environ().get("REINS_MCP_MARK") == mark:
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


def test_exec_starts_the_configured_servers_and_ends_them(cli: Cli) -> None:
    mark = uuid.uuid4().hex
    cli.paths.config.mkdir(parents=True, exist_ok=True)
    cli.paths.settings_file.write_text(json.dumps(
        {"mcpServers": {"edge": edge(env={"REINS_MCP_MARK": mark})}}))
    cli.server.add(reply(ToolUse("mcp__edge__echo", {"text": "hello"}, id="c1")),
                   reply("It said hello."))
    done = cli.run("exec", "--json", "--mode", "ask", "--approve", "allow", "say hello")
    assert done.returncode == 0, done.stderr
    out = events(done.stdout)
    assert types(out) == ["mcp_server", "session_started", "user_message", "tool_call",
                          "approval_request",
                          "approval_decision", "tool_result", "assistant_text", "run_finished"]
    request = next(e for e in out if e["type"] == "approval_request")
    assert request["name"] == "mcp__edge__echo"
    result = next(e for e in out if e["type"] == "tool_result")
    assert result["is_error"] is False and result["preview"] == "hello"
    assert "mcp__edge__echo" in [t["name"] for t in cli.server.requests[0].body["tools"]]
    assert _edge_processes(mark) == []


def test_exec_refuses_an_unusable_server_entry(cli: Cli) -> None:
    cli.paths.config.mkdir(parents=True, exist_ok=True)
    cli.paths.settings_file.write_text(json.dumps({"mcpServers": {" ": {"command": "x"}}}))
    code, _out, err = cli.call("exec", "--json", "hello")
    assert code != 0
    assert "server name ' ' must be 1–64 characters" in err
