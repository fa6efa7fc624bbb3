"""The grants page: what one session may do without asking, each grant in words, revocable.

It lists the session's grants ("allow for this session") and the always-allow rules of
settings.json, as the kernel reports them (GrantList). Revoke asks the kernel (RevokeGrant);
the list shown is always the kernel's answer, never a local guess.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from kernel.protocol import GrantInfo

SCOPE_NAMES = {"session": "This session", "always": "Always (settings.json)"}


class GrantsPanel(QWidget):
    revoke_requested = Signal(str, str)
    """(rule, scope) the user chose to revoke."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Grants")
        self.session_label = QLabel(self)
        self.session_label.setAccessibleName("Session whose grants are shown")
        self.session_label.setWordWrap(True)
        self.session_label.setTextFormat(Qt.TextFormat.PlainText)
        self.tree = QTreeWidget(self)
        self.tree.setAccessibleName("Granted rules")
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["Rule", "Scope", "What it allows"])
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.header().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.tree.itemSelectionChanged.connect(self._update_buttons)
        self.empty_label = QLabel("Nothing is granted: every call the mode does not allow "
                                  "is asked.", self)
        self.empty_label.setAccessibleName("No grants")
        self.empty_label.setWordWrap(True)
        self.revoke_button = QPushButton("&Revoke", self)
        self.revoke_button.setAccessibleName("Revoke the selected grant")
        self.revoke_button.clicked.connect(self._revoke)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.revoke_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.session_label)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.empty_label)
        layout.addLayout(buttons)
        self.grants: tuple[GrantInfo, ...] = ()
        self.set_session(None)

    def set_session(self, title: str | None, waiting: bool = True) -> None:
        """Which session is shown; None: no session is open (only settings' rules apply)."""
        if title is None:
            self.session_label.setText("Open a session to see and revoke what it is allowed "
                                       "to do. Always-allow rules are also in Permissions.")
        else:
            self.session_label.setText(f"Granted in “{title}”"
                                       + (" (loading…)" if waiting else ""))
        self.tree.setEnabled(title is not None)
        self.set_grants(())
        self._title = title

    def set_grants(self, grants: tuple[GrantInfo, ...]) -> None:
        self.grants = grants
        self.tree.clear()
        for grant in grants:
            item = QTreeWidgetItem([grant.rule, SCOPE_NAMES.get(grant.scope, grant.scope),
                                    grant.words + (" (with network)" if grant.network
                                                   else "")])
            item.setToolTip(2, item.text(2))
            item.setData(0, Qt.ItemDataRole.UserRole, (grant.rule, grant.scope))
            self.tree.addTopLevelItem(item)
        self.tree.resizeColumnToContents(0)
        if grants:
            self.tree.setCurrentItem(self.tree.topLevelItem(0))
        self.empty_label.setVisible(not grants)
        self._update_buttons()

    def show_grants(self, grants: tuple[GrantInfo, ...]) -> None:
        """The kernel's answer for the shown session."""
        if self._title is not None:
            self.session_label.setText(f"Granted in “{self._title}”")
        self.set_grants(grants)

    def selected(self) -> tuple[str, str] | None:
        item = self.tree.currentItem()
        if item is None or not item.isSelected():
            return None
        rule, scope = item.data(0, Qt.ItemDataRole.UserRole)
        return str(rule), str(scope)

    def _update_buttons(self) -> None:
        self.revoke_button.setEnabled(self.selected() is not None)

    def _revoke(self) -> None:
        chosen = self.selected()
        if chosen is not None:
            self.revoke_button.setEnabled(False)
            self.revoke_requested.emit(*chosen)
