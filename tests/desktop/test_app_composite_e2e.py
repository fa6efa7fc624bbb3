"""A composite tool through the whole app (real widgets, a real kernel worker, the real
anthropic client against the fake model): declared in settings.json, one approval in the
dialog listing its steps, its steps as child rows indented under it on the timeline, one
result sent to the model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from desktop.chat.model import ToolCardItem
from desktop.timeline.model import Column
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.paths import AppPaths
from tests.cli.test_exec_composite import TOOLS
from tests.desktop.conftest import approval_card, click_answer, running_app, shown_card
from tests.desktop.test_app_approvals_e2e import block_text, new_session, tool_result_block
from tests.desktop.test_app_e2e import running, type_prompt

WAIT_MS = 90_000
KEY = "sk-composite-e2e"
pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key=KEY) as server:
        yield server
        server.release()


def test_a_composite_is_one_approval_and_child_rows(
        qtbot: QtBot, reins_home: AppPaths, fake: FakeAnthropicServer, workspace: Path) -> None:
    fake.add(reply("Both at once.", ToolUse("write_and_run", {
        "path": "n.txt", "content": "73\n", "command": "cat n.txt"}, id="wr1")),
             reply("It printed 73."))
    with running_app(qtbot, reins_home, fake, api_key=KEY, model="claude-composite",
                     mode="ask", tools=TOOLS) as app:
        new_session(qtbot, app, workspace, "ask")
        type_prompt(qtbot, app, "write n.txt and cat it")
        card = approval_card(qtbot, app, timeout=WAIT_MS)  # in front: the card in the turn
        assert card.request.call_id == "wr1"
        shown = card.preview.toPlainText()
        assert "1. write_file" in shown and "2. run_command" in shown
        assert tuple(card.buttons) == ("allow_once", "deny"), "a composite is allowed once"
        click_answer(qtbot, card, card.buttons["allow_once"])
        qtbot.waitUntil(lambda: not running(app), timeout=WAIT_MS)
        assert shown_card(app) is None, "the steps were not asked about again"
        assert (workspace / "n.txt").read_text() == "73\n"
        timeline = app.window.timeline
        model = timeline.model
        qtbot.waitUntil(lambda: model.rowCount() == 3, timeout=WAIT_MS)
        rows = [(model.data(model.index(r, Column.TOOL)),
                 model.data(model.index(r, Column.STATUS))) for r in range(3)]
        assert rows == [("write_and_run", "done"), ("  ↳ write_file", "done"),
                        ("  ↳ run_command", "done")]
        assert not timeline.view.grab().toImage().isNull()
        chat = app.window.chat.chat_model()
        steps = [(item.name, item.depth) for item in chat.items()
                 if isinstance(item, ToolCardItem)]
        assert steps == [("write_and_run", 0), ("write_file", 1), ("run_command", 1)]
        text = block_text(tool_result_block(fake, "wr1"))
        assert "step 2 run_command (ok)" in text and "73" in text
