"""`reins exec --mode ask --approve deny|allow` end to end: the real console script, the real
SDK against the fake Messages API server, the real store and the real sandboxed run_command."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from kernel.fakemodel import FakeAnthropicServer
from kernel.fakemodel.script import ToolUse, reply
from kernel.paths import AppPaths

REINS = Path(sys.executable).with_name("reins")

CALLS = [
    ToolUse("write_file", {"path": "new.txt", "content": "hello"}, id="call_write"),
    ToolUse("run_command", {"command": "touch ran.txt"}, id="call_cmd"),
    ToolUse("edit_file", {"path": "keep.txt", "old_string": "old", "new_string": "new"},
            id="call_edit"),
]


def _exec(server: FakeAnthropicServer, workspace: Path, *args: str) -> tuple[object, list[dict]]:
    """Exit code and the --json events; stderr is shown when the run failed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test-key")
    done = subprocess.run(
        [str(REINS), "exec", "--json", "--workspace", str(workspace), *args,
         "make the changes"], env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL, check=False)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    return (done.returncode if done.returncode == 0 else (done.returncode, done.stderr)), events


def _of(events: list[dict], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def test_ask_mode_with_approve_deny_denies_every_call(workspace: Path,
                                                      reins_home: AppPaths) -> None:
    (workspace / "keep.txt").write_text("old\n")
    with FakeAnthropicServer([reply("on it", *CALLS), reply("I was not allowed.")],
                             api_key="test-key") as server:
        code, events = _exec(server, workspace, "--mode", "ask", "--approve", "deny")
        assert code == 0
        requests = _of(events, "approval_request")
        decisions = _of(events, "approval_decision")
        results = _of(events, "tool_result")
        ids = ["call_write", "call_cmd", "call_edit"]
        assert [r["call_id"] for r in requests] == ids
        assert [(d["call_id"], d["decision"], d["decided_by"]) for d in decisions] == [
            (i, "deny", "cli") for i in ids]
        assert [(r["call_id"], r["error_code"]) for r in results] == [
            (i, "approval_denied") for i in ids]
        for request, decision in zip(requests, decisions, strict=True):
            assert events.index(request) < events.index(decision)
        assert requests[1]["preview"].startswith("$ touch ran.txt\ncwd: ")
        assert "+hello" in requests[0]["preview"]
        assert _of(events, "run_finished")[0]["stop_reason"] == "end_turn"
        back = server.requests[-1].body["messages"][-1]["content"]
        assert [b["is_error"] for b in back if b["type"] == "tool_result"] == [True] * 3
    assert sorted(p.name for p in workspace.iterdir()) == ["keep.txt"]
    assert (workspace / "keep.txt").read_text() == "old\n"


def test_ask_mode_with_approve_allow_runs_every_call(workspace: Path,
                                                     reins_home: AppPaths) -> None:
    (workspace / "keep.txt").write_text("old\n")
    with FakeAnthropicServer([reply("on it", *CALLS), reply("done")],
                             api_key="test-key") as server:
        code, events = _exec(server, workspace, "--mode", "ask", "--approve", "allow")
        assert code == 0
        decisions = _of(events, "approval_decision")
        assert [d["decision"] for d in decisions] == ["allow_once"] * 3
        results = _of(events, "tool_result")
        assert [r["is_error"] for r in results] == [False] * 3, results
    assert (workspace / "new.txt").read_text() == "hello"
    assert (workspace / "ran.txt").exists()
    assert (workspace / "keep.txt").read_text() == "new\n"


def test_read_only_offers_only_read_tools_and_denies_others(workspace: Path,
                                                            reins_home: AppPaths) -> None:
    with FakeAnthropicServer([reply("try", CALLS[0]), reply("ok")],
                             api_key="test-key") as server:
        code, events = _exec(server, workspace, "--mode", "read-only", "--approve", "allow")
        assert code == 0
        offered = {t["name"] for t in server.requests[0].body["tools"]}
        assert "read_file" in offered
        assert not offered & {"write_file", "edit_file", "run_command"}
        [result] = _of(events, "tool_result")
        assert result["error_code"] == "permission_denied"
        assert _of(events, "approval_request") == []
    assert not (workspace / "new.txt").exists()


def test_exec_killed_while_asking_on_a_terminal_resumes_with_the_same_request(
        workspace: Path, reins_home: AppPaths) -> None:
    script = [reply("writing", ToolUse("write_file", {"path": "w.txt", "content": "once"},
                                       id="call_w")), reply("written")]
    with FakeAnthropicServer(script, api_key="test-key") as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test-key")
        controller, terminal = pty.openpty()
        child = subprocess.Popen(
            [str(REINS), "exec", "--json", "--mode", "ask", "--workspace", str(workspace),
             "write it"], env=env, stdin=terminal, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True)
        os.close(terminal)
        try:
            assert child.stdout is not None
            first = []
            for line in child.stdout:
                first.append(json.loads(line))
                if first[-1]["type"] == "approval_request":
                    break
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
            os.close(controller)
        session_id = first[0]["session_id"]
        assert first[-1]["call_id"] == "call_w"
        assert not (workspace / "w.txt").exists()

        done = subprocess.run(
            [str(REINS), "exec", "--json", "--session", session_id, "--approve", "allow"],
            env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
            check=False)
        assert done.returncode == 0, done.stderr
        events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [(e["type"], e.get("call_id")) for e in events
             if e["type"] in ("approval_request", "approval_decision", "tool_result")]
    assert kinds == [("approval_request", "call_w"), ("approval_decision", "call_w"),
                     ("tool_result", "call_w")]
    assert _of(events, "approval_decision")[0]["decision"] == "allow_once"
    assert _of(events, "tool_result")[0]["is_error"] is False
    assert _of(events, "run_finished")[-1]["stop_reason"] == "end_turn"
    assert (workspace / "w.txt").read_text() == "once"
    assert len(server.requests) == 2
