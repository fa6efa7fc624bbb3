"""The window's keyboard actions and its Help menu: find in the conversation, focus the
prompt, switch sessions, stop the run, the shortcuts list and About.

`install_menus(window)` adds them to the main window's menu bar (after File and View), each
an action with its shortcut, so the shortcuts list shows exactly what the keys do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

if TYPE_CHECKING:
    from desktop.main_window import MainWindow
    from desktop.sessions.panel import SessionsPanel


def step_session(panel: SessionsPanel, delta: int) -> None:
    """Open the next (+1) or previous (-1) session of the list, wrapping around."""
    count = panel.proxy.rowCount()
    if not count:
        return
    current = panel.list.currentIndex()
    row = (current.row() + delta) % count if current.isValid() else 0
    index = panel.proxy.index(row, 0)
    panel.list.setCurrentIndex(index)
    panel.list.activated.emit(index)


def show_shortcuts(window: MainWindow) -> None:
    """The shortcuts list (its module loaded on first use, not before the first paint)."""
    from desktop.help.shortcuts import ShortcutsDialog

    ShortcutsDialog(window.menuBar(), window).open()


def show_about(window: MainWindow) -> None:
    from desktop.help.about import AboutDialog

    AboutDialog(window).open()


def _action(menu: QMenu, text: str, keys: list[QKeySequence], slot: Callable[[], object],
            name: str) -> QAction:
    action = QAction(text, menu)
    action.setObjectName(name)
    action.setShortcuts(keys)
    action.triggered.connect(lambda _checked=False: slot())
    menu.addAction(action)
    return action


def install_menus(window: MainWindow) -> None:
    bar = window.menuBar()
    edit = QMenu("&Edit", window)
    _action(edit, "&Find in conversation…", [QKeySequence(QKeySequence.StandardKey.Find)],
            window.chat.open_find, "find")
    session = QMenu("&Session", window)
    _action(session, "Focus the &prompt", [QKeySequence("Ctrl+L")],
            window.prompt.edit.setFocus, "focus-prompt")
    _action(session, "&Next session", [QKeySequence("Ctrl+PgDown"), QKeySequence("Ctrl+Tab")],
            lambda: step_session(window.sessions, 1), "next-session")
    _action(session, "P&revious session",
            [QKeySequence("Ctrl+PgUp"), QKeySequence("Ctrl+Shift+Tab")],
            lambda: step_session(window.sessions, -1), "previous-session")
    _action(session, "&Stop the run", [QKeySequence("Ctrl+.")],
            window.prompt.stop_button.click, "stop-run")
    help_menu = QMenu("&Help", window)
    _action(help_menu, "&Keyboard shortcuts", [QKeySequence("Ctrl+/"), QKeySequence("F1")],
            lambda: show_shortcuts(window), "shortcuts")
    _action(help_menu, "&About Reins", [], lambda: show_about(window), "about")
    for menu in (edit, session, help_menu):
        bar.addMenu(menu)
