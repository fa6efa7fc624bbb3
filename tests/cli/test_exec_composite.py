"""Composite tools in `reins exec` as a real process against the fake Messages API: one
call for the model, one approval (the terminal prompt lists every step), each step a child
call in `--json`, one tool_result sent back; a bad declaration stops the command."""

from __future__ import annotations

import json

from kernel.fakemodel import ToolUse, reply
from tests.cli.conftest import Cli, events

TOOLS = {"composites": {"write_and_run": {
    "description": "Write a file, then run a shell command.",
    "input_schema": {"type": "object", "required": ["path", "content", "command"],
                     "properties": {"path": {"type": "string"}, "content": {"type": "string"},
                                    "command": {"type": "string"}}},
    "steps": [{"tool": "write_file", "args": {"path": "/input/path", "content": "/input/content"}},
              {"tool": "run_command", "args": {"command": "/input/command"}}]}}}


def _settings(cli: Cli, tools: dict[str, object]) -> None:
    cli.paths.settings_file.parent.mkdir(parents=True, exist_ok=True)
    cli.paths.settings_file.write_text(json.dumps({"tools": tools}, indent=2))


def test_a_composite_runs_its_steps_as_child_calls(cli: Cli) -> None:
    _settings(cli, TOOLS)
    cli.server.add(reply(ToolUse("write_and_run", {"path": "n.txt", "content": "41\n",
                                                   "command": "cat n.txt"}, id="c1")),
                   reply("It printed 41."))
    done = cli.run("exec", "--json", "--mode", "ask", "--approve", "allow", "write and run")
    assert done.returncode == 0, done.stderr
    out = events(done.stdout)
    calls = [(e["call_id"], e["name"], e["parent_call_id"]) for e in out
             if e["type"] == "tool_call"]
    assert calls == [("c1", "write_and_run", ""), ("c1-step1", "write_file", "c1"),
                     ("c1-step2", "run_command", "c1")]
    [request] = [e for e in out if e["type"] == "approval_request"]
    assert request["call_id"] == "c1" and [s["tool"] for s in request["steps"]] == [
        "write_file", "run_command"]
    decided = {e["call_id"]: e["decided_by"] for e in out if e["type"] == "approval_decision"}
    assert decided == {"c1": "cli", "c1-step1": "composite", "c1-step2": "composite"}
    assert (cli.workspace / "n.txt").read_text() == "41\n"
    sent = cli.server.requests[1].body["messages"][-1]["content"]
    assert [b["tool_use_id"] for b in sent if b["type"] == "tool_result"] == ["c1"]
    text = json.dumps(sent)
    assert "step 1 write_file (ok)" in text and "step 2 run_command (ok)" in text
    assert "41" in text
    tools = cli.server.requests[0].body["tools"]
    assert "write_and_run" in [t["name"] for t in tools]


def test_the_terminal_prompt_lists_the_steps_and_a_bad_declaration_stops(cli: Cli) -> None:
    _settings(cli, TOOLS)
    cli.server.add(reply(ToolUse("write_and_run", {"path": "m.txt", "content": "x",
                                                   "command": "true"}, id="c2")),
                   reply("Not run."))
    done = cli.run("exec", "--mode", "ask", "--approve", "deny", "write and run")
    assert done.returncode == 0, done.stderr
    assert "1. write_file — risk ordinary (write), ask" in done.stdout + done.stderr
    assert "command ← /input/command" in done.stdout + done.stderr
    assert not (cli.workspace / "m.txt").exists()
    broken = {"composites": {**TOOLS["composites"], "looping": {
        "description": "x", "steps": [{"tool": "looping"}]}}}
    _settings(cli, broken)
    done = cli.run("exec", "--mode", "ask", "anything")
    assert done.returncode == 2 and "'looping' contains itself" in done.stderr
    assert f"{cli.paths.settings_file}:" in done.stderr


def test_a_declaration_not_in_force_is_said_before_the_run(cli: Cli) -> None:
    _settings(cli, {"fallbacks": {"mcp__gone__find": {"to": "grep", "on": ["timeout"]}}})
    cli.server.add(reply("Nothing to do."))
    done = cli.run("exec", "--json", "--mode", "auto", "hello")
    assert done.returncode == 0, done.stderr
    [error] = [e for e in events(done.stdout) if e["type"] == "error"]
    assert error["code"] == "tools_declaration"
    assert error["message"] == ("settings.json tools/fallbacks/mcp__gone__find is not in force "
                                "in this run: waits for ['mcp__gone__find'] to be registered")


def test_a_composites_steps_count_toward_their_tools_rate_limits(cli: Cli) -> None:
    # `--rate-limit run_command=1`: the model's own command uses the minute's one call, so
    # the composite's run_command step is refused as a direct call would be (not run, said
    # as rate_limited), and the composite fails at that step; nothing bypasses the limit.
    _settings(cli, TOOLS)
    cli.server.add(reply(ToolUse("run_command", {"command": "echo one"}, id="d1")),
                   reply(ToolUse("write_and_run", {"path": "r.txt", "content": "2\n",
                                                   "command": "touch ran"}, id="c3")),
                   reply("Limited."))
    code, out, err = cli.call("exec", "--json", "--mode", "auto", "--rate-limit",
                              "run_command=1", "go")
    assert code == 0, err
    results = {e["call_id"]: e for e in events(out) if e["type"] == "tool_result"}
    assert results["d1"]["error_code"] is None
    assert results["c3-step1"]["error_code"] is None
    assert results["c3-step2"]["error_code"] == "rate_limited"
    assert results["c3-step2"]["parent_call_id"] == "c3"
    assert results["c3"]["is_error"] and "limited to 1 calls per minute" in json.dumps(
        cli.server.requests[2].body["messages"][-1]["content"])
    assert not (cli.workspace / "ran").exists()
