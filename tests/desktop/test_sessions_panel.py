"""The sessions sidebar: list, search, new (workspace + mode), rename, delete with a
confirmation."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLineEdit, QMessageBox
from pytestqt.qtbot import QtBot

from desktop.sessions.new_dialog import NewSessionDialog
from desktop.sessions.panel import SessionsPanel, when
from desktop.words import MODE_ALLOWS
from kernel.protocol import SessionInfo

NOW = time.time()
SESSIONS = [
    SessionInfo("a", "Fix the build", "/work/alpha", "ask", "m", NOW - 30),
    SessionInfo("b", "Write docs", "/work/beta", "auto-edit", "m", NOW - 10),
    SessionInfo("c", "Refactor parser", "/work/alpha", "auto", "m", NOW - 3 * 86400),
]


def make_panel(qtbot: QtBot) -> SessionsPanel:
    panel = SessionsPanel()
    qtbot.addWidget(panel)
    panel.model.set_sessions(SESSIONS)
    panel.show()
    return panel


def visible_titles(panel: SessionsPanel) -> list[str]:
    proxy = panel.proxy
    return [proxy.index(r, 0).data(Qt.ItemDataRole.EditRole) for r in range(proxy.rowCount())]


def test_lists_newest_first_with_workspace_and_time(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    assert visible_titles(panel) == ["Write docs", "Fix the build", "Refactor parser"]
    text = panel.proxy.index(0, 0).data(Qt.ItemDataRole.DisplayRole)
    assert "/work/beta" in text and "auto-edit" in text and when(NOW - 10) in text


def test_search_filters_by_title_and_workspace(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    qtbot.keyClicks(panel.search, "ALPHA")
    assert visible_titles(panel) == ["Fix the build", "Refactor parser"]
    panel.search.setText("docs")
    assert visible_titles(panel) == ["Write docs"]
    panel.search.clear()
    assert len(visible_titles(panel)) == 3


def test_click_activates_a_session(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    rect = panel.list.visualRect(panel.proxy.index(1, 0))
    with qtbot.waitSignal(panel.session_activated) as signal:
        qtbot.mouseClick(panel.list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert signal.args == ["a"]


def test_rename_in_place(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    panel.select("b")
    panel.rename_selected()
    editor = panel.list.findChild(QLineEdit)
    assert editor is not None and editor.text() == "Write docs"
    editor.setText("Write the docs")
    with qtbot.waitSignal(panel.rename_requested) as signal:
        qtbot.keyClick(editor, Qt.Key.Key_Return)
    assert signal.args == ["b", "Write the docs"]


def test_delete_asks_first_and_cancel_keeps_it(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    deleted: list[str] = []
    panel.delete_requested.connect(deleted.append)
    panel.select("a")
    panel.ask_delete()
    box = panel.confirm
    assert isinstance(box, QMessageBox) and box.isVisible() and "Fix the build" in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert deleted == []
    panel.ask_delete()
    delete = next(b for b in panel.confirm.buttons() if b.text() == "Delete")
    delete.click()
    assert deleted == ["a"]
    panel.model.remove("a")
    assert "Fix the build" not in visible_titles(panel)


def test_new_session_asks_workspace_and_mode(qtbot: QtBot, tmp_path: Path) -> None:
    panel = make_panel(qtbot)
    panel.ask_new()
    dialog = panel.new_dialog
    assert dialog is not None and dialog.isVisible()
    dialog.workspace_edit.setText(str(tmp_path / "missing"))
    ok = dialog.buttons.buttons()[0]
    assert not ok.isEnabled()
    dialog.workspace_edit.setText(str(tmp_path))
    dialog.mode_combo.setCurrentText("auto-edit")
    with qtbot.waitSignal(panel.new_requested) as signal:
        dialog.buttons.accepted.emit()
    assert signal.args == [str(tmp_path), "auto-edit", False]
    assert panel.default_workspace == str(tmp_path)


def test_every_control_has_an_accessible_name(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    QApplication.processEvents()
    for widget in [panel.search, panel.list, panel.new_button, panel.rename_button,
                   panel.delete_button]:
        assert widget.accessibleName(), widget


def test_the_delete_question_shows_a_title_as_written(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    panel.model.set_sessions([SessionInfo("h", "<b>bold</b> <img src='x'>", "/tmp", "ask",
                                          "m", NOW)])
    panel.select("h")
    panel.ask_delete()
    box = panel.confirm
    assert box is not None and box.textFormat() is Qt.TextFormat.PlainText
    assert "<b>bold</b> <img src='x'>" in box.text()


def test_the_new_session_dialog_offers_a_path_typing_replaces_and_says_what_modes_allow(
        qtbot: QtBot, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    dialog = NewSessionDialog(None, str(tmp_path), "ask")
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    edit = dialog.workspace_edit
    assert dialog.focusWidget() is edit and edit.selectedText() == str(tmp_path)
    qtbot.keyClicks(edit, str(other))
    assert dialog.workspace() == str(other), "typing replaced the offered path"
    combo = dialog.mode_combo
    assert combo.currentText() == "ask"
    assert [combo.itemData(i, Qt.ItemDataRole.ToolTipRole) for i in range(combo.count())] == [
        MODE_ALLOWS[combo.itemText(i)] for i in range(combo.count())]
