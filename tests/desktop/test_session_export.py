"""Export a session from the app: File → Export conversation as Markdown… / Export trace…
ask where (a save dialog), get the data from the kernel over the protocol (the desktop never
reads the store) and write it. The trace is what `reins export` writes; the Markdown's
form is checked in test_export_markdown.py."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from kernel.cli.cmd_export import export_command
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths
from tests.desktop.conftest import running_app

WAIT_MS = 90_000
pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key="sk-export") as server:
        yield server


def test_export_from_the_app_writes_what_the_save_dialog_chose(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, workspace: Path,
        tmp_path: Path) -> None:
    (workspace / "notes.txt").write_text("remember the milk\n")
    fake.add(reply("Reading it.", ToolUse("read_file", {"path": "notes.txt"})))
    fake.add(reply("It says: **remember the milk**."))
    with running_app(qtbot, reins_home, fake, api_key="sk-export", model="claude-export",
                     mode="ask") as app:
        w = app.window
        qtbot.waitUntil(lambda: w.kernel_label.text() == "", timeout=WAIT_MS)
        assert not any(a.isEnabled() for a in w.export_actions.values()), "no session yet"
        w.sessions.new_requested.emit(str(workspace), "ask", False)
        qtbot.waitUntil(lambda: app.current is not None, timeout=WAIT_MS)
        assert all(a.isEnabled() for a in w.export_actions.values())
        app.send_prompt("what do my notes say?")
        view = app.views[app.current or ""]
        qtbot.waitUntil(lambda: not view.running and len(fake.requests) == 2, timeout=WAIT_MS)
        asked: list[tuple[str, str]] = []
        targets = {"markdown": tmp_path / "out" / "chat.md",
                   "trace": tmp_path / "out" / "trace.jsonl"}
        (tmp_path / "out").mkdir()

        def answer(what: str, title: str) -> str:
            asked.append((what, title))
            return str(targets[what])

        app.ask_export_path = answer
        w.export_actions["markdown"].trigger()
        w.export_actions["trace"].trigger()
        qtbot.waitUntil(lambda: all(t.exists() for t in targets.values()), timeout=WAIT_MS)
        assert [what for what, _ in asked] == ["markdown", "trace"]
        markdown = targets["markdown"].read_text()
        assert "what do my notes say?" in markdown
        assert "It says: **remember the milk**." in markdown
        assert "**Tool call** `read_file`" in markdown and "remember the milk" in markdown
        trace = targets["trace"].read_text()
        cancelled = targets["markdown"].stat().st_mtime
        app.ask_export_path = lambda _what, _title: ""  # the dialog cancelled: nothing sent
        w.export_actions["markdown"].trigger()
        assert targets["markdown"].stat().st_mtime == cancelled
        session_id = app.current or ""
    lines = [json.loads(line) for line in trace.splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["session_id"] == session_id
    assert [line["type"] for line in lines[1:]] == ["round", "round"]
    out = io.StringIO()
    export_command(session_id, out)
    assert out.getvalue() == trace, "the same trace as `reins export`"
