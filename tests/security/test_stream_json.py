"""`reins exec --json` cannot be broken by what the model or a tool says: every line survives
`str.splitlines()`, lone surrogates are kept (store, --json, human output), and the stream
always ends with `run_finished`. The real console script against the fake model server."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

from kernel import protocol as p
from kernel.agent.store import SessionStore
from kernel.events import ApprovalRequest, AssistantText, ToolCallStarted, json_text
from kernel.fakemodel import FakeAnthropicServer
from kernel.fakemodel.script import ToolUse, reply
from kernel.paths import AppPaths
from tests.security.execkit import REINS, exec_env, json_lines, run_json

SEPARATORS = "\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e\r\x1b"


def test_every_json_line_survives_splitlines(workspace: Path, reins_home: AppPaths) -> None:
    name = "notes.txt"
    (workspace / name).write_text(f"tool output {SEPARATORS} end\n", encoding="utf-8")
    text = f"the model says {SEPARATORS} and more"
    script = [reply(text, ToolUse("read_file", {"path": name}, id="call_read")),
              reply(f"done {SEPARATORS}")]
    with FakeAnthropicServer(script, api_key="test-key") as server:
        done = run_json(server, workspace, "--mode", "auto")
    assert done.returncode == 0, done.stderr
    for raw in "\u2028\u2029\x85":
        assert raw not in done.stdout
    events = json_lines(done.stdout)
    assert [e["type"] for e in events][-1] == "run_finished"
    texts = [e["text"] for e in events if e["type"] == "assistant_text"]
    assert texts == [text, f"done {SEPARATORS}"]
    [result] = [e for e in events if e["type"] == "tool_result"]
    assert SEPARATORS in result["preview"]


def _surrogate_script() -> list[object]:
    return [reply("bad \ud800 text", ToolUse("read_file\udfff", {"path": "a.txt"},
                                              id="toolu_\ud800"),
                  ToolUse("read_file", {"path": "a.txt"}, id="call_ok")),
            reply("still here \udc80")]


def test_lone_surrogates_are_kept_and_the_stream_still_ends(
        workspace: Path, reins_home: AppPaths) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    with FakeAnthropicServer(_surrogate_script(), api_key="test-key") as server:
        done = run_json(server, workspace, "--mode", "auto")
    assert "Traceback" not in done.stderr, done.stderr
    events = json_lines(done.stdout)
    assert events[-1]["type"] == "run_finished"
    assert done.returncode == (0 if events[-1]["stop_reason"] == "end_turn" else 1)
    assert "bad \ud800 text" in [e["text"] for e in events if e["type"] == "assistant_text"]
    calls = {e["call_id"]: e["name"] for e in events if e["type"] == "tool_call"}
    assert calls["toolu_\ud800"] == "read_file\udfff"
    session_id = events[0]["session_id"]
    with SessionStore(reins_home.database) as store:
        stored = [e for _, e in store.events(session_id)]
        assert AssistantText(session_id, "bad \ud800 text") in stored
        assert any(isinstance(e, ToolCallStarted) and e.call_id == "toolu_\ud800"
                   and e.name == "read_file\udfff" for e in stored)
        blocks = store.messages(session_id)[1]["content"]
        assert {"type": "text", "text": "bad \ud800 text"} in [
            {k: b[k] for k in ("type", "text")} for b in blocks if b["type"] == "text"]
        assert "read_file\udfff" in [b.get("name") for b in blocks]
        assert store.get_session(session_id).run_state.value != "running"
    with sqlite3.connect(reins_home.database) as db:  # valid UTF-8 on disk, escapes kept
        (data,) = db.execute("SELECT data FROM events WHERE type = 'assistant_text'"
                             " ORDER BY seq LIMIT 1").fetchone()
    assert json.loads(data)["text"] == "bad \ud800 text"


def test_the_human_printer_shows_lone_surrogates_escaped(
        workspace: Path, reins_home: AppPaths) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    with FakeAnthropicServer(_surrogate_script(), api_key="test-key") as server:
        done = subprocess.run(
            [REINS, "exec", "--mode", "auto", "--workspace", str(workspace), "go"],
            env=exec_env(server), capture_output=True, timeout=120,
            stdin=subprocess.DEVNULL, check=False)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert "Traceback" not in err, err
    assert "bad \\ud800 text" in out
    assert "→ read_file\\udfff" in out
    assert "── " in out.splitlines()[-1]  # the run's summary line: it ended, and said so


def test_json_text_round_trips_what_json_dumps_cannot_encode() -> None:
    values = ["\ud800", "a\udfffb", {"k\udc00": ["\u2028", "\x85", "\u2029"]}, "ü中😀",
              "\x00\x1b\r\n"]
    for value in values:
        text = json_text(value)
        assert len(text.splitlines()) == 1
        text.encode("utf-8")
        assert json.loads(text) == value
        assert json.loads(json_text(value, compact=True)) == value


def test_the_ui_pipe_carries_lone_surrogates_and_line_separators() -> None:
    event = ApprovalRequest("s1", call_id="toolu_\ud800", name="run_command\udfff",
                            input={"command": "echo \u2028\ud800"}, risk="execute",
                            reason="because \x85", preview="$ echo \u2028\ud800")
    raw = p.encode(p.EventMessage(event))
    raw.decode("utf-8")
    message = p.decode(raw)
    assert isinstance(message, p.EventMessage)
    assert message.event == event
