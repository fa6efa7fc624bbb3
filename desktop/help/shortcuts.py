"""The keyboard shortcuts list: every menu action that has a shortcut (read from the window's
menus, so the list cannot drift from what the keys do), and the keys that work inside a
widget (the prompt, the conversation, find)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QMenu,
    QMenuBar,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.approval.deliberate import ALLOW_ONCE_KEYS

IN_PLACE: tuple[tuple[str, str], ...] = (
    ("Prompt", "Enter: send · Shift+Enter: new line · Esc: stop the run (while an approval "
               "waits: decide later) · Up in an empty prompt: edit your last message"),
    ("Approval", f"{ALLOW_ONCE_KEYS}: allow once (the oldest card in the conversation, or the "
                 "dialog when it shows), from anywhere in the window · Esc: it keeps waiting"),
    ("Conversation", "Drag: select text · Ctrl+C: copy the selection or the message · "
                     "double-click: select a word"),
    ("Code block", "Copy button: copy the code · Shift+wheel: scroll sideways"),
    ("Tool card", "Click or Enter: show or fold its arguments and result"),
    ("Find", "Enter: next match · Shift+Enter: previous · Esc: close"),
)


def _label(action: QAction) -> str:
    return action.text().replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("…")


def menu_shortcuts(bar: QMenuBar) -> list[tuple[str, str]]:
    """(what, keys) for every action of the menus that has a shortcut, in menu order."""
    rows: list[tuple[str, str]] = []

    def walk(menu: QMenu) -> None:
        for action in menu.actions():
            sub = action.menu()
            if isinstance(sub, QMenu):
                walk(sub)
            elif action.shortcuts():
                keys = " or ".join(s.toString(QKeySequence.SequenceFormat.NativeText)
                                   for s in action.shortcuts())
                rows.append((_label(action), keys))

    for action in bar.actions():
        menu = action.menu()
        if isinstance(menu, QMenu):
            walk(menu)
    return rows


class ShortcutsDialog(QDialog):
    def __init__(self, bar: QMenuBar, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowTitle("Keyboard shortcuts")
        self.setAccessibleName("Keyboard shortcuts")
        rows = [*menu_shortcuts(bar), *IN_PLACE]
        self.table = QTableWidget(len(rows), 2, self)
        self.table.setAccessibleName("Shortcuts")
        self.table.setHorizontalHeaderLabels(["Action", "Keys"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        for row, (what, keys) in enumerate(rows):
            for column, text in enumerate((what, keys)):
                item = QTableWidgetItem(text)
                item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
                self.table.setItem(row, column, item)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.resizeColumnToContents(0)
        # Rows follow the columns' widths as shown (fitted once, they kept the heights of
        # the table's first, narrow columns).
        self.table.verticalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.resize(620, 460)

    def rows(self) -> list[tuple[str, str]]:
        table = self.table

        def text(row: int, column: int) -> str:
            item = table.item(row, column)
            return item.text() if item is not None else ""

        return [(text(r, 0), text(r, 1)) for r in range(table.rowCount())]
