"""`reins exec`, `reins export` and `reins doctor` as real processes against the fake API."""

from __future__ import annotations

import gc
import json
import os
import signal

import pytest

from kernel.agent.runlock import RunLock
from kernel.fakemodel import Failure, Reply, Text, ToolUse, reply
from tests.cli.conftest import Cli, events, types


def test_exec_json_prints_only_events_and_export_writes_the_trace(cli: Cli):
    cli.server.add(reply("Let me read it.", ToolUse("read_file", {"path": "a.txt"}, id="c1")),
                   reply("It says alpha."))
    done = cli.run("exec", "--json", "--mode", "auto", "what is in a.txt?")
    assert done.returncode == 0, done.stderr
    out = events(done.stdout)
    assert types(out) == ["session_started", "user_message", "assistant_text", "tool_call",
                          "tool_result", "assistant_text", "run_finished"]
    started, finished = out[0], out[-1]
    assert started["workspace"] == str(cli.workspace) and started["sandbox"] in ("bwrap", "none")
    assert started["model"] and started["mode"] == "auto"
    call, result = (next(e for e in out if e["type"] == kind)
                    for kind in ("tool_call", "tool_result"))
    assert call == {**call, "call_id": "c1", "name": "read_file", "input": {"path": "a.txt"}}
    assert result["is_error"] is False and "alpha file" in result["preview"]
    assert finished["stop_reason"] == "end_turn" and finished["rounds"] == 2
    assert finished["usage"]["input_tokens"] == 200
    assert "test-key" not in done.stdout + done.stderr
    sid = started["session_id"]
    code, out, err = cli.call("export", sid)
    assert code == 0, err
    lines = events(out)
    assert types(lines) == ["session", "round", "round"]
    assert lines[1]["request_id"] == "req_fake_1" and lines[1]["round"] == 0
    assert lines[1]["model_tool_calls"] == [
        {"id": "c1", "name": "read_file", "input": {"path": "a.txt"}}]
    (tool,) = lines[1]["tools"]
    assert tool["name"] == "read_file" and tool["error_code"] is None
    assert tool["duration_ms"] >= 0 and "alpha" in tool["result"]
    assert lines[2]["answer"] == "It says alpha."


def test_exec_without_json_is_readable(cli: Cli):
    cli.server.add(reply(ToolUse("read_file", {"path": "a.txt"})), reply("Alpha, it says."))
    code, out, err = cli.call("exec", "--mode", "auto", "--rate-limit", "read_file=5",
                              "--thinking-budget", "1024", "read a")
    assert code == 0, err
    assert "→ read_file" in out and "← read_file ok" in out
    assert "Alpha, it says." in out and "end_turn" in out
    assert not out.lstrip().startswith("{")
    body = cli.server.requests[0].body
    assert body["thinking"]["budget_tokens"] == 1024 and body["tool_choice"] == {"type": "auto"}


def test_exit_codes_for_limit_error_and_bad_usage(cli: Cli):
    cli.server.add(reply(ToolUse("read_file", {"path": "a.txt"})))
    code, out, _ = cli.call("exec", "--json", "--max-rounds", "1", "--mode", "auto", "go")
    assert code == 3
    assert events(out)[-1]["stop_reason"] == "max_rounds"
    cli.server.add(Failure(401, "authentication_error", "invalid x-api-key", None))
    code, text, _ = cli.call("exec", "--json", "hi")
    assert code == 1
    out = events(text)
    error = next(e for e in out if e["type"] == "error")
    assert error["code"] == "auth_error" and "401" in error["message"]
    assert out[-1]["stop_reason"] == "error"
    for bad in (["exec"], ["exec", "--mode", "yolo", "x"], ["exec", "--session", "nope"],
                ["exec", "--max-rounds", "0", "x"], ["exec", "--rate-limit", "grep", "x"],
                ["export", "missing"], ["frobnicate"]):
        try:
            code, out, err = cli.call(*bad)
        except SystemExit as exc:
            code, err = exc.code, cli.capsys.readouterr().err
        assert code == 2, (bad, err)
        assert err.strip()


def test_missing_key_is_a_clear_error(cli: Cli):
    del os.environ["ANTHROPIC_API_KEY"], os.environ["ANTHROPIC_BASE_URL"]
    code, out, _ = cli.call("exec", "--json", "hi")
    assert code == 1
    (error,) = [e for e in events(out) if e["type"] == "error"]
    assert error["code"] == "config_error" and "ANTHROPIC_API_KEY" in error["message"]
    assert not cli.server.requests


def test_kill_9_mid_run_then_resume_shows_everything_printed(cli: Cli):
    cli.server.add(
        reply("Reading.", ToolUse("read_file", {"path": "a.txt"}, id="k1")),
        Reply((Text("this answer never arrives in full"),), stall_after=3),
    )
    proc = cli.start("exec", "--json", "--mode", "auto", "read a.txt")
    printed: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        printed.append(line)
        if json.loads(line)["type"] == "tool_result":
            break
    assert cli.server.wait_for_requests(2) and cli.server.stalled.wait(30)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    printed.extend(proc.stdout.read().splitlines(keepends=True))
    proc.stdout.close()
    proc.stderr.close() if proc.stderr else None
    assert proc.returncode == -signal.SIGKILL
    before = [json.loads(line) for line in printed]
    assert before[-1]["type"] == "tool_result"
    assert types(before) == ["session_started", "user_message", "assistant_text", "tool_call",
                             "tool_result"]
    sid = before[0]["session_id"]
    cli.server.release()
    cli.server.add(reply("It says alpha."))
    resumed = cli.run("exec", "--json", "--session", sid)
    assert resumed.returncode == 0, resumed.stderr
    after = events(resumed.stdout)
    assert after[: len(before)] == before
    assert types(after[len(before):]) == ["session_started", "assistant_text", "run_finished"]
    assert all(json.dumps(e) in resumed.stdout for e in before)
    assert after[-1]["stop_reason"] == "end_turn"
    assert [e["call_id"] for e in after if e["type"] == "tool_result"] == ["k1"]
    last = cli.server.requests[-1].body["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user"]
    assert last[2]["content"][0]["tool_use_id"] == "k1"
    assert "alpha file" in str(last[2]["content"][0]["content"])


def test_sigint_cancels_the_run_with_exit_3(cli: Cli):
    cli.server.add(Reply((Text("word " * 400),), delay_s=0.05, chunk_chars=5))
    proc = cli.start("exec", "--json", "talk")
    assert cli.server.wait_for_requests(1)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert json.loads(first)["type"] == "session_started"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3, err
    assert events(out)[-1]["stop_reason"] == "cancelled"


def test_approve_deny_denies_each_call_that_needs_approval(cli: Cli):
    cli.server.add(reply(ToolUse("write_file", {"path": "new.txt", "content": "x"}, id="w1")),
                   reply("It was denied."))
    code, text, err = cli.call("exec", "--json", "--mode", "ask", "--approve", "deny",
                               "write new.txt")
    assert code == 0, err
    out = events(text)
    request = next(e for e in out if e["type"] == "approval_request")
    decision = next(e for e in out if e["type"] == "approval_decision" and e["call_id"] == "w1")
    assert request["call_id"] == "w1" and decision["decision"] == "deny"
    result = next(e for e in out if e["type"] == "tool_result")
    assert result["is_error"] and result["error_code"] == "approval_denied"
    assert (request["status"], decision["status"], result["status"]) == (
        "awaiting_approval", "denied", "denied")
    assert all(isinstance(e["at"], float) for e in out)
    assert not (cli.workspace / "new.txt").exists()

    cli.server.add(reply(ToolUse("write_file", {"path": "new.txt", "content": "x"}, id="w2")),
                   reply("It was denied."))
    code, text, err = cli.call("exec", "--mode", "ask", "--approve", "deny", "write new.txt")
    assert code == 0, err
    assert "← write_file denied approval_denied" in text


def test_exec_pauses_the_garbage_collector_only_while_it_starts(cli: Cli):
    assert gc.isenabled()
    cli.server.add(reply("Hello."))
    code, _out, _err = cli.call("exec", "--json", "say hello")
    assert code == 0 and gc.isenabled()
    code, _out, err = cli.call("exec")  # stopped before the run: usage
    assert code == 2 and "PROMPT" in err and gc.isenabled()


def test_doctor_reports_sandbox_key_and_folders(cli: Cli):
    code, out, _ = cli.call("doctor")
    assert "sandbox:" in out and "found in the environment" in out
    assert str(cli.paths.database) in out and "test-key" not in out
    assert code == (0 if "sandbox: bwrap" in out else 1)


DOCTOR_EXEC = {"exec": {"limits": {"memory_mb": 2048, "processes": 64},
                        "local_network": True, "bwrap": "bwrap-not-installed-here"}}


@pytest.mark.parametrize("run", ["in this process", "reins doctor"])
def test_doctor_reports_the_sandbox_the_settings_give_commands(cli: Cli, run: str):
    """Its sandbox lines are about settings.json's `exec` (its bubblewrap, limits and
    network), as commands get it, not the defaults; and an invalid file says so and reports
    the defaults."""
    cli.paths.config.mkdir(parents=True, exist_ok=True)
    cli.paths.settings_file.write_text(json.dumps(DOCTOR_EXEC))
    if run == "reins doctor":
        done = cli.run("doctor")
        code, out = done.returncode, done.stdout
    else:
        code, out, _ = cli.call("doctor")
    assert code == 1  # no sandbox: that bubblewrap is not installed
    assert "sandbox: none (commands NOT sandboxed)" in out
    assert "bubblewrap (bwrap-not-installed-here) is not installed" in out
    assert "limits: memory (address space) 2 GiB, file size 1 GiB, processes 64" in out
    assert "exec.local_network is on" in out
    cli.paths.settings_file.write_text('{"exec": {"limits": {"memory_mb": 1}}}')
    code, out, _ = cli.call("doctor")
    assert code == 1 and "settings: " in out and "INVALID" in out
    assert "limits: memory (address space) 4 GiB" in out and "local_network" not in out


def test_a_session_running_in_another_process_is_refused(cli: Cli):
    cli.server.add(reply("first"))
    code, out, _ = cli.call("exec", "--json", "hello")
    assert code == 0
    sid = events(out)[0]["session_id"]
    lock = RunLock(cli.paths.session_dir(sid) / "run.lock")
    lock.acquire()
    try:
        code, out, _ = cli.call("exec", "--json", "--session", sid, "again")
    finally:
        lock.release()
    assert code == 1
    assert events(out)[-1]["type"] == "error" and events(out)[-1]["code"] == "session_busy"
    assert len(cli.server.requests) == 1


def test_exec_runs_commands_with_the_users_exec_settings(cli: Cli, monkeypatch):
    """settings.json's `exec` section reaches the executor: a variable named there is passed
    to commands; one that is not stays withheld."""
    cli.paths.config.mkdir(parents=True, exist_ok=True)
    cli.paths.settings_file.write_text(json.dumps({"exec": {"env": ["REINS_TEST_GREETING"]}}))
    monkeypatch.setenv("REINS_TEST_GREETING", "hello-from-settings")
    monkeypatch.setenv("REINS_TEST_UNLISTED", "not-passed")
    command = 'echo "g=$REINS_TEST_GREETING u=${REINS_TEST_UNLISTED:-unset}"'
    cli.server.add(reply(ToolUse("run_command", {"command": command}, id="c1")), reply("ok"))
    code, out, err = cli.call("exec", "--json", "--mode", "auto", "--approve", "allow", "env?")
    assert code == 0, err
    result = next(e for e in events(out) if e["type"] == "tool_result")
    assert "g=hello-from-settings u=unset" in result["preview"], result
