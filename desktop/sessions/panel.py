"""The sessions sidebar: list (title, workspace, time), new, rename, delete, search.

Every question it asks (delete?, which folder?) is a dialog opened with `open()`; nothing
here blocks the event loop.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import (
    QAbstractListModel,
    QEvent,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QLineEdit,
    QListView,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

if TYPE_CHECKING:
    from desktop.sessions.new_dialog import NewSessionDialog
    from kernel.protocol import SessionInfo

SEARCH_ROLE = Qt.ItemDataRole.UserRole + 1
ID_ROLE = Qt.ItemDataRole.UserRole + 2


def when(timestamp: float, now: float | None = None) -> str:
    """A short human time: 14:05 today, 'Mon 14:05' this week, else the date."""
    if timestamp <= 0:
        return ""
    now = time.time() if now is None else now
    local = time.localtime(timestamp)
    if time.strftime("%Y-%m-%d", local) == time.strftime("%Y-%m-%d", time.localtime(now)):
        return time.strftime("%H:%M", local)
    if now - timestamp < 6 * 86400:
        return time.strftime("%a %H:%M", local)
    return time.strftime("%Y-%m-%d", local)


class SessionListModel(QAbstractListModel):
    rename_requested = Signal(str, str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._sessions: list[SessionInfo] = []

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._sessions)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> object:
        if not index.isValid() or index.row() >= len(self._sessions):
            return None
        info = self._sessions[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            title = info.title or "Untitled session"
            return f"{title}\n{_short_path(info.workspace)} · {info.mode} · {when(info.updated_at)}"
        if role == Qt.ItemDataRole.EditRole:
            return info.title
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{info.title}\nWorkspace: {info.workspace}\nMode: {info.mode}"
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return f"Session {info.title}, workspace {info.workspace}"
        if role == SEARCH_ROLE:
            return f"{info.title} {info.workspace}".lower()
        if role == ID_ROLE:
            return info.session_id
        return None

    def flags(self, index: QModelIndex | QPersistentModelIndex) -> Qt.ItemFlag:
        return super().flags(index) | Qt.ItemFlag.ItemIsEditable

    def setData(self, index: QModelIndex | QPersistentModelIndex, value: object,
                role: int = Qt.ItemDataRole.EditRole) -> bool:
        if role != Qt.ItemDataRole.EditRole or not isinstance(value, str):
            return False
        title = value.strip()
        info = self._sessions[index.row()]
        if not title or title == info.title:
            return False
        self.rename_requested.emit(info.session_id, title)
        return True

    def set_sessions(self, sessions: list[SessionInfo]) -> None:
        self.beginResetModel()
        self._sessions = sorted(sessions, key=lambda s: s.updated_at, reverse=True)
        self.endResetModel()

    def upsert(self, info: SessionInfo) -> None:
        for row, existing in enumerate(self._sessions):
            if existing.session_id == info.session_id:
                self._sessions[row] = info
                index = self.index(row)
                self.dataChanged.emit(index, index)
                return
        self.beginInsertRows(QModelIndex(), 0, 0)
        self._sessions.insert(0, info)
        self.endInsertRows()

    def remove(self, session_id: str) -> None:
        for row, existing in enumerate(self._sessions):
            if existing.session_id == session_id:
                self.beginRemoveRows(QModelIndex(), row, row)
                del self._sessions[row]
                self.endRemoveRows()
                return

    def get(self, session_id: str) -> SessionInfo | None:
        return next((s for s in self._sessions if s.session_id == session_id), None)

    def row_of(self, session_id: str) -> int:
        return next((r for r, s in enumerate(self._sessions) if s.session_id == session_id), -1)


def _short_path(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home):] if path.startswith(home) else path


class SessionsPanel(QWidget):
    session_activated = Signal(str)
    new_requested = Signal(str, str, bool)
    """workspace ("": a scratch folder the kernel makes), mode, the user confirmed a broad
    workspace (kernel.shared.workspace)"""
    new_cancelled = Signal()
    rename_requested = Signal(str, str)
    delete_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None, default_mode: str = "ask",
                 filter_locally: bool = True) -> None:
        """`filter_locally`: search filters the listed titles and workspaces here; the app
        turns it off and asks the kernel instead, whose search also covers message text."""
        super().__init__(parent)
        self.setAccessibleName("Sessions")
        self.default_mode = default_mode
        self.default_workspace = ""
        """The folder a new session starts from; never the home folder by default."""
        self.model = SessionListModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setFilterRole(SEARCH_ROLE)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.search = QLineEdit(self)
        self.search.setAccessibleName("Search sessions")
        self.search.setPlaceholderText("Search sessions")
        self.search.setClearButtonEnabled(True)
        self.list = QListView(self)
        self.list.setAccessibleName("Session list")
        self.list.setModel(self.proxy)
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.setUniformItemSizes(True)
        self.list.setFrameShape(QFrame.Shape.NoFrame)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.new_button = QPushButton("&New", self)
        self.new_button.setAccessibleName("New session")
        self.rename_button = QPushButton("&Rename", self)
        self.rename_button.setAccessibleName("Rename session")
        self.delete_button = QPushButton("De&lete", self)
        self.delete_button.setAccessibleName("Delete session")
        buttons = QHBoxLayout()
        for button in (self.new_button, self.rename_button, self.delete_button):
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.search)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)

        self.restyle()
        if filter_locally:
            self.search.textChanged.connect(self.proxy.setFilterFixedString)
        self.list.activated.connect(self._on_activated)
        self.list.clicked.connect(self._on_activated)
        self.new_button.clicked.connect(self.ask_new)
        self.rename_button.clicked.connect(self.rename_selected)
        self.delete_button.clicked.connect(self.ask_delete)
        self.model.rename_requested.connect(self.rename_requested)
        self.confirm: QMessageBox | None = None
        self.new_dialog: NewSessionDialog | None = None

    def restyle(self) -> None:
        """The list as a quiet sidebar: rows with room, the chosen one a soft rounded fill
        (from the palette, light or dark)."""
        from PySide6.QtGui import QGuiApplication, QPalette

        from desktop.theme import mix

        palette = QGuiApplication.palette()
        ground = palette.color(QPalette.ColorRole.Window)
        text = palette.color(QPalette.ColorRole.WindowText)
        sheet = ("QListView { background: transparent; }"
                 " QListView::item { padding: 6px 8px; border-radius: 8px; margin: 1px 0; }"
                 f" QListView::item:selected {{ background: {mix(ground, text, 0.13).name()};"
                 f" color: {text.name()}; }}"
                 " QListView::item:hover:!selected { background:"
                 f" {mix(ground, text, 0.06).name()}; }}")
        if sheet != self.list.styleSheet():
            self.list.setStyleSheet(sheet)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.restyle()

    def selected_id(self) -> str | None:
        index = self.list.currentIndex()
        return index.data(ID_ROLE) if index.isValid() else None

    def select(self, session_id: str) -> None:
        row = self.model.row_of(session_id)
        if row >= 0:
            self.list.setCurrentIndex(self.proxy.mapFromSource(self.model.index(row)))

    def _on_activated(self, index: QModelIndex) -> None:
        if index.isValid():
            self.session_activated.emit(index.data(ID_ROLE))

    def rename_selected(self) -> None:
        index = self.list.currentIndex()
        if index.isValid():
            self.list.edit(index)

    def ask_new(self) -> NewSessionDialog:
        """The new-session dialog (one at a time: asking again shows the open one)."""
        if self.new_dialog is not None and self.new_dialog.isVisible():
            self.new_dialog.raise_()
            self.new_dialog.activateWindow()
            return self.new_dialog
        from desktop.sessions.new_dialog import NewSessionDialog  # not needed before this

        self.new_dialog = NewSessionDialog(self, self.default_workspace, self.default_mode)
        self.new_dialog.accepted.connect(self._on_new_accepted)
        self.new_dialog.rejected.connect(self.new_cancelled)
        self.new_dialog.open()
        return self.new_dialog

    def _on_new_accepted(self) -> None:
        dialog = self.new_dialog
        if dialog is None:
            return
        if dialog.scratch():
            self.new_requested.emit("", dialog.mode(), False)
            return
        self.default_workspace = dialog.workspace()
        self.new_requested.emit(dialog.workspace(), dialog.mode(), dialog.broad_confirmed())

    def ask_delete(self) -> None:
        session_id = self.selected_id()
        info = self.model.get(session_id) if session_id else None
        if info is None:
            return
        box = QMessageBox(QMessageBox.Icon.Warning, "Delete session?",
                          f"Delete “{info.title or 'Untitled session'}” and its history? "
                          "This cannot be undone.",
                          QMessageBox.StandardButton.Cancel, self)
        box.setTextFormat(Qt.TextFormat.PlainText)  # a title is shown as written
        box.setAccessibleName("Confirm delete session")
        delete = box.addButton("Delete", QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        def clicked(button: object) -> None:
            if button is delete:
                self.delete_requested.emit(info.session_id)

        box.buttonClicked.connect(clicked)
        self.confirm = box
        box.open()
