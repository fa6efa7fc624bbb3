"""A newcomer's first minute, through the whole app (real widgets, a real kernel worker, the
real anthropic client): with no key and no keyring the welcome page offers the demo; the
demo session works in a scratch folder the bar names, answers, lists the folder, asks before
it writes and shows each call in the timeline; *Choose folder…* moves it to a real folder;
Settings → Test connection says a wrong key is wrong, and a right one works."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from desktop.chat.model import MessageItem, Role
from desktop.controller import DEMO_PROMPT, AppController
from kernel.demo.script import NOTES_FILE
from kernel.events import ApprovalRequest, ToolCallStarted
from kernel.fakemodel import FakeAnthropicServer
from kernel.paths import AppPaths
from kernel.shared.demo import DEMO_MODEL
from tests.desktop.conftest import approval_card, click_answer
from tests.desktop.test_app_e2e import running

WAIT_MS = 90_000
pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def keyless_app(qtbot: QtBot, reins_home: AppPaths, quiet_home: Path,
                no_keyring: None) -> Iterator[AppController]:
    """The app as a newcomer starts it: no key, no base URL, no keyring, no settings."""
    controller = AppController(reins_home)
    qtbot.addWidget(controller.window)
    controller.start()
    try:
        yield controller
    finally:
        controller.shutdown()


def _texts(app: AppController, role: Role) -> list[str]:
    chat = app.views[app.current or ""].chat
    return [item.text for item in (chat.item(r) for r in range(chat.rowCount()))
            if isinstance(item, MessageItem) and item.role is role]


def test_a_newcomer_tries_the_demo_then_gives_it_a_real_folder(
        qtbot: QtBot, keyless_app: AppController, reins_home: AppPaths,
        workspace: Path) -> None:
    app, w = keyless_app, keyless_app.window
    if w.kernel_label.text():
        assert not w.welcome.demo_button.isEnabled(), "the demo waits for the kernel"
    qtbot.waitUntil(lambda: w.kernel_label.text() == "", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w.pages.currentWidget() is w.welcome, timeout=WAIT_MS)
    assert w.welcome.demo_button.isEnabled()
    assert "Try the" in w.welcome.text.text() and "Demo model" in w.welcome.text.text()
    qtbot.mouseClick(w.welcome.demo_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.current is not None, timeout=WAIT_MS)
    assert w.pages.currentWidget() is w.chat_page
    info = app.views[app.current or ""].info
    scratch = Path(info.workspace)
    assert info.model == DEMO_MODEL and reins_home.is_scratch(scratch)
    bar = w.workspace_bar
    assert bar.isVisible() and "Demo model" in bar.label.text()
    assert f"scratch folder Reins made: {scratch}" in bar.label.text()
    assert bar.folder_button.isVisible() and bar.key_button.isVisible()
    assert w.model_picker.combo.currentText() == "Demo model (scripted)"
    edit = w.prompt.edit
    assert edit.toPlainText() == DEMO_PROMPT and edit.textCursor().hasSelection()
    assert not edit.isReadOnly(), "the demo runs without a key"

    qtbot.keyClicks(edit, "Show me around")  # typing replaces the suggestion
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    card = approval_card(qtbot, app, timeout=WAIT_MS)  # in front: the card in the turn
    [asked] = [e for e in app.views[app.current or ""].events
               if isinstance(e, ApprovalRequest)]
    assert asked.input["path"] == NOTES_FILE and not (scratch / NOTES_FILE).exists()
    click_answer(qtbot, card, card.buttons["allow_once"])
    qtbot.waitUntil(lambda: not running(app), timeout=WAIT_MS)
    assert "Show me around" in (scratch / NOTES_FILE).read_text()
    answers = _texts(app, Role.ASSISTANT)
    assert "demo model" in answers[0] and "Show me around" in answers[0]
    assert "written only because you allowed" in answers[-1]
    assert "Settings" in answers[-1]
    timeline = w.timeline
    names = [e.name for e in app.views[app.current or ""].events
             if isinstance(e, ToolCallStarted)]
    assert names == ["list_directory", "write_file"]
    qtbot.waitUntil(lambda: timeline.model.rowCount() >= 2, timeout=WAIT_MS)

    app.ask_folder = lambda: str(workspace)
    qtbot.mouseClick(bar.folder_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.views[app.current or ""].info.workspace == str(workspace),
                    timeout=WAIT_MS)
    assert "scratch" not in bar.label.text() and not bar.folder_button.isVisible()
    assert bar.isVisible(), "still the demo model: it still says so"
    [moved] = [t for t in _texts(app, Role.NOTICE) if "From the next message on" in t]
    assert str(workspace) in moved and str(scratch) in moved
    assert QApplication.activeModalWidget() is None


def test_test_connection_says_a_wrong_key_is_wrong_and_a_right_one_works(
        qtbot: QtBot, keyless_app: AppController) -> None:
    app, w = keyless_app, keyless_app.window
    qtbot.waitUntil(lambda: w.kernel_label.text() == "", timeout=WAIT_MS)
    with FakeAnthropicServer(api_key="sk-ant-right", models=("claude-one",)) as fake:
        qtbot.mouseClick(w.welcome.button, Qt.MouseButton.LeftButton)
        dialog = app.settings_dialog
        assert dialog is not None
        qtbot.waitUntil(lambda: dialog.loaded, timeout=WAIT_MS)
        qtbot.keyClicks(dialog.key_edit, "sk-ant-wrong")
        qtbot.keyClicks(dialog.base_url_edit, fake.base_url)
        qtbot.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
        assert dialog.connection_label.text().startswith("Testing the connection to")
        assert not dialog.test_button.isEnabled()
        qtbot.waitUntil(dialog.test_button.isEnabled, timeout=WAIT_MS)
        assert dialog.connection_label.text() == (
            f"✗ {fake.base_url} refused the key (HTTP 401: invalid x-api-key). Check that the "
            "whole key was pasted; Anthropic keys start with sk-ant-.")
        dialog.key_edit.clear()
        qtbot.keyClicks(dialog.key_edit, "sk-ant-right")
        qtbot.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(dialog.test_button.isEnabled, timeout=WAIT_MS)
        assert dialog.connection_label.text() == (
            f"✓ Connected to {fake.base_url}: the key works, and the server offers 1 model "
            "(claude-one).")
        assert fake.requests == [] and not app.paths.api_key_file.exists()
        dialog.reject()
