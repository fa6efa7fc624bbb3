"""Keyboard actions of the real main window (find, focus the prompt, switch sessions, stop)
and the Help menu: a shortcuts list read from the menus, and About."""

from __future__ import annotations

import platform

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from desktop.help.about import AboutDialog
from desktop.help.shortcuts import ShortcutsDialog
from desktop.main_window import MainWindow
from kernel.protocol import SessionInfo


def make_window(qtbot: QtBot) -> MainWindow:
    window = MainWindow()
    qtbot.addWidget(window)
    window.show_page(welcome=False)
    window.show()
    qtbot.waitExposed(window)
    return window


def action(window: MainWindow, name: str) -> QAction:
    found = window.findChild(QAction, name)
    assert isinstance(found, QAction), name
    return found


def keys(found: QAction) -> list[str]:
    return [s.toString() for s in found.shortcuts()]


def test_the_menus_offer_the_keyboard_actions(qtbot: QtBot) -> None:
    window = make_window(qtbot)
    titles = [a.text().replace("&", "") for a in window.menuBar().actions()]
    assert titles[-1] == "Help" and {"Edit", "Session"} <= set(titles)
    assert keys(action(window, "find")) == [QKeySequence(QKeySequence.StandardKey.Find)
                                            .toString()]
    assert keys(action(window, "focus-prompt")) == ["Ctrl+L"]
    assert keys(action(window, "next-session")) == ["Ctrl+PgDown", "Ctrl+Tab"]
    assert keys(action(window, "previous-session")) == ["Ctrl+PgUp", "Ctrl+Shift+Tab"]
    assert keys(action(window, "stop-run")) == ["Ctrl+."]
    assert keys(action(window, "shortcuts")) == ["Ctrl+/", "F1"]
    every = [s.toString() for a in window.findChildren(QAction) for s in a.shortcuts()]
    assert len(every) == len(set(every)), "no key does two things"


def test_find_and_focus_the_prompt(qtbot: QtBot) -> None:
    window = make_window(qtbot)
    action(window, "find").trigger()
    assert window.chat.find_bar.isVisible() and window.focusWidget() is window.chat.find_bar.edit
    action(window, "focus-prompt").trigger()
    assert window.focusWidget() is window.prompt.edit


def test_stop_acts_only_while_a_run_runs(qtbot: QtBot) -> None:
    window = make_window(qtbot)
    stops: list[bool] = []
    window.prompt.stop.connect(lambda: stops.append(True))
    action(window, "stop-run").trigger()
    assert stops == []
    window.prompt.set_running(True)
    action(window, "stop-run").trigger()
    assert stops == [True]


def test_next_and_previous_session_wrap_around(qtbot: QtBot) -> None:
    window = make_window(qtbot)
    window.sessions.model.set_sessions([
        SessionInfo("a", "First", "/w", updated_at=3.0),
        SessionInfo("b", "Second", "/w", updated_at=2.0),
        SessionInfo("c", "Third", "/w", updated_at=1.0),
    ])
    opened: list[str] = []
    window.sessions.session_activated.connect(opened.append)
    for _ in range(4):
        action(window, "next-session").trigger()
    action(window, "previous-session").trigger()
    action(window, "previous-session").trigger()
    assert opened == ["a", "b", "c", "a", "c", "b"]


def test_the_shortcuts_list_shows_what_the_menus_do(qtbot: QtBot) -> None:
    window = make_window(qtbot)
    action(window, "shortcuts").trigger()
    dialog = window.findChild(ShortcutsDialog)
    assert isinstance(dialog, ShortcutsDialog) and dialog.isVisible()
    rows = dict(dialog.rows())
    assert rows["Find in conversation"] == QKeySequence(QKeySequence.StandardKey.Find).toString(
        QKeySequence.SequenceFormat.NativeText)
    assert rows["Settings"] == QKeySequence("Ctrl+,").toString(
        QKeySequence.SequenceFormat.NativeText)
    assert rows["Next session"].endswith(" or Ctrl+Tab")
    assert "Stop the run" in rows and "New session" in rows
    assert "Esc: stop the run" in rows["Prompt"] and "Ctrl+C" in rows["Conversation"]
    assert all("&" not in what for what in rows)
    dialog.reject()


def test_about_says_what_and_which_version_in_plain_text(qtbot: QtBot) -> None:
    window = make_window(qtbot)
    action(window, "about").trigger()
    dialog = window.findChild(AboutDialog)
    assert isinstance(dialog, AboutDialog) and dialog.isVisible()
    [label] = [w for w in dialog.findChildren(QLabel) if w.text().startswith("Reins ")]
    assert f"Python {platform.python_version()}" in label.text()
    assert label.textFormat().name == "PlainText"


def test_each_shortcut_row_is_as_tall_as_its_text_at_the_width_shown(qtbot: QtBot) -> None:
    """The rows are fitted to the columns the dialog has once shown (they were fitted to the
    table's first, narrow columns: one-line keys two lines tall, the prompt's keys five)."""
    window = make_window(qtbot)
    action(window, "shortcuts").trigger()
    dialog = window.findChild(ShortcutsDialog)
    assert isinstance(dialog, ShortcutsDialog)
    qtbot.waitExposed(dialog)
    table = dialog.table
    metrics = table.fontMetrics()
    one_line = metrics.height()
    for row in range(table.rowCount()):
        lines = 1
        for column in (0, 1):
            item = table.item(row, column)
            assert item is not None
            room = table.columnWidth(column) - 8
            lines = max(lines, -(-metrics.horizontalAdvance(item.text()) // room))
        height = table.rowHeight(row)
        assert height <= (lines + 1) * one_line, (table.item(row, 0).text(), height, lines)
    heights = {table.rowHeight(r) for r in range(table.rowCount())
               if metrics.horizontalAdvance(table.item(r, 1).text()) < table.columnWidth(1) // 2}
    assert len(heights) == 1, "the one-line rows are all one line tall"
