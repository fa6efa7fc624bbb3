"""Server requests and run notices through the whole app (real widgets, a real kernel worker,
a real MCP server, the fake model): a server's form is filled in and accepted in its dialog
and the server gets the values; Compact conversation summarizes older turns and says so in
the chat and on the timeline; an empty answer is flagged; `/` in the prompt box lists the
servers' prompts and puts the chosen one's text into the box, sending nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox, QLineEdit
from pytestqt.qtbot import QtBot

from desktop.chat.model import MessageItem, Role
from desktop.controller import AppController
from kernel.events import ContextCompacted, ToolResultEvent
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths
from tests.desktop.conftest import click_answer, running_app
from tests.desktop.test_app_approvals_e2e import new_session, stored
from tests.desktop.test_app_e2e import running, type_prompt
from tests.mcp.conftest import edge, everything

__all__ = ["everything"]

WAIT_MS = 90_000
KEY = "sk-mcp-app"
pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key=KEY) as server:
        yield server
        server.release()


def notices(app: AppController) -> list[str]:
    chat = app.views[app.current or ""].chat
    items = [chat.item(i) for i in range(chat.rowCount())]
    return [i.text for i in items if isinstance(i, MessageItem) and i.role is Role.NOTICE]


def test_a_servers_form_is_filled_in_and_accepted_in_the_app(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, workspace: Path) -> None:
    with running_app(qtbot, reins_home, fake, api_key=KEY, model="claude-mcp", mode="auto",
                     mcpServers={"edge": edge()},
                     permissions={"allow": ["mcp__edge__ask_form"]}) as app:
        new_session(qtbot, app, workspace, "auto")
        qtbot.waitUntil(lambda: any(s.status == "ready" for s in app.mcp_states.servers),
                        timeout=WAIT_MS)
        fake.add(reply(ToolUse("mcp__edge__ask_form", {}, id="f1")), reply("Noted."))
        type_prompt(qtbot, app, "ask me")
        qtbot.waitUntil(lambda: app._mcp_requests is not None
                        and app.mcp_requests.form_dialog.isVisible(), timeout=WAIT_MS)
        dialog = app.mcp_requests.form_dialog
        assert dialog.server_label.text() == "The MCP server “edge” asks you"
        assert dialog.message_label.text() == "Pick your preferences"
        editors = {e.field.name: e for e in dialog.editors}
        color, count = editors["color"].editor, editors["count"].editor
        assert isinstance(color, QLineEdit) and isinstance(count, QLineEdit)
        assert (color.text(), count.text()) == ("blue", "3")
        color.setText("green")
        count.setText("many")
        click_answer(qtbot, dialog, dialog.accept_button)
        assert editors["count"].error.text() == "A whole number." and dialog.isVisible()
        count.setText("5")
        click_answer(qtbot, dialog, dialog.accept_button)
        qtbot.waitUntil(lambda: not running(app), timeout=WAIT_MS)
        (result,) = [e for e in stored(app, ToolResultEvent) if e.call_id == "f1"]
        assert json.loads(result.preview) == {"action": "accept",
                                              "data": {"color": "green", "count": 5}}
        assert not dialog.isVisible()


def test_compact_and_an_empty_answer_are_said_in_the_chat_and_on_the_timeline(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, workspace: Path) -> None:
    with running_app(qtbot, reins_home, fake, api_key=KEY, model="claude-mcp",
                     mode="auto") as app:
        w = app.window
        assert not w.compact_action.isEnabled()
        new_session(qtbot, app, workspace, "auto")
        fake.add(reply("One."), reply("Two."), reply())
        for prompt in ("first", "second", "third"):
            type_prompt(qtbot, app, prompt)
            qtbot.waitUntil(lambda: not running(app), timeout=WAIT_MS)
        empty = ("The model ended its turn without writing an answer. Ask again, or say what "
                 "you expected.")
        assert empty in notices(app)
        w.resize(1400, 900)  # room for the whole status bar (a narrow one drops Compact)
        qtbot.waitUntil(w.compact_button.isVisible)
        qtbot.waitUntil(w.compact_action.isEnabled, timeout=WAIT_MS)
        fake.add(reply("The user said first; the model said One."))
        w.compact_action.trigger()
        qtbot.waitUntil(lambda: bool(stored(app, ContextCompacted)) and not running(app),
                        timeout=WAIT_MS)
        (compacted,) = stored(app, ContextCompacted)
        assert compacted.reason == "user"
        said = [n for n in notices(app) if n.startswith("Older turns were summarized as you "
                                                        "asked")]
        assert len(said) == 1 and said[0].endswith("the full history is kept.")
        notes = w.timeline.notes
        assert notes.isVisibleTo(w.timeline) and notes.texts() == [empty, said[0]]
        summary_request: Any = fake.requests[-1].body
        assert "first" in json.dumps(summary_request["messages"])


def test_slash_fills_the_box_and_a_sampling_request_waits_for_approval(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, workspace: Path,
        everything: dict[str, Any]) -> None:
    sample = "mcp__every__trigger-sampling-request"
    with running_app(qtbot, reins_home, fake, api_key=KEY, model="claude-mcp", mode="auto",
                     mcpServers={"every": everything},
                     permissions={"allow": [sample]}) as app:
        new_session(qtbot, app, workspace, "auto")
        qtbot.waitUntil(lambda: any(s.status == "ready" for s in app.mcp_states.servers),
                        timeout=WAIT_MS)
        edit, menu = app.window.prompt.edit, app.prompt_menu
        qtbot.keyClicks(edit, "/args")
        qtbot.waitUntil(lambda: any(t.startswith("/every/args-prompt <city>")
                                    for t in menu.texts()), timeout=WAIT_MS)
        qtbot.keyClick(edit, Qt.Key.Key_Return)
        dialog = menu.arguments
        assert dialog is not None and dialog.isVisible()
        dialog.edits["city"].setText("Paris")
        qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Ok),
                         Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: edit.toPlainText() == "What's weather in Paris?",
                        timeout=WAIT_MS)
        assert fake.requests == [] and not running(app), "nothing is sent by itself"

        fake.add(reply(ToolUse(sample, {"prompt": "a haiku", "maxTokens": 30}, id="s1")),
                 reply("Leaves fall."), reply("It wrote one."))
        qtbot.keyClick(edit, Qt.Key.Key_Return)  # the user's own send
        qtbot.waitUntil(lambda: app._mcp_requests is not None
                        and app.mcp_requests.sampling_dialog.isVisible(), timeout=WAIT_MS)
        assert "What's weather in Paris?" in json.dumps(fake.requests[0].body["messages"])
        sampling = app.mcp_requests.sampling_dialog
        assert sampling.server_label.text() == (
            "The MCP server “every” asks the model to answer")
        assert "at most 30 tokens" in sampling.details_label.text()
        assert sampling.system.toPlainText() == "You are a helpful test server."
        assert sampling.messages.toPlainText().endswith("context: a haiku")
        assert len(fake.requests) == 1, "nothing goes to the model before the approval"
        click_answer(qtbot, sampling, sampling.send_button)
        qtbot.waitUntil(lambda: not running(app), timeout=WAIT_MS)
        assert len(fake.requests) == 3
        assert any(n.startswith("The MCP server “every” had the model answer (")
                   for n in notices(app))
