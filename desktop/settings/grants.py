"""The grants page: what each session may do without asking, each grant in words, revocable.

It lists every session's grants ("allow for this session") and the always-allow rules of
settings.json, as the kernel reports them (GrantList for ListAllGrants). Revoke acts at once
(the page says so; Save and Cancel do not undo it): it asks the kernel (RevokeGrant), and the
list shown is always the kernel's answer, never a local guess.
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

ALWAYS = "Every session (settings.json)"


def granted_in(grant: GrantInfo, current: str | None) -> str:
    """Where a grant holds, in words."""
    if grant.scope == "always":
        return ALWAYS
    title = f"“{grant.session_title or 'Untitled session'}”"
    return f"{title} (open now)" if grant.session_id == current else title


def in_order(grants: tuple[GrantInfo, ...], current: str | None) -> list[GrantInfo]:
    """The open session's grants first, then the other sessions', then the always rules
    (each group in the kernel's order)."""
    def rank(grant: GrantInfo) -> int:
        if grant.scope == "always":
            return 2
        return 0 if grant.session_id == current else 1

    return sorted(grants, key=rank)


class GrantsPanel(QWidget):
    revoke_requested = Signal(str, str, str)
    """(session id, rule, scope) the user chose to revoke; the session id is empty for an
    always-allow rule."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Grants")
        self.intro = QLabel("What each session may do without asking. Revoking acts at once: "
                            "Save and Cancel do not undo it. Always-allow rules are also "
                            "in Permissions.", self)
        self.intro.setAccessibleName("About grants")
        self.intro.setWordWrap(True)
        self.tree = QTreeWidget(self)
        self.tree.setAccessibleName("Granted rules")
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["Rule", "Granted in", "What it allows"])
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.header().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.tree.itemSelectionChanged.connect(self._update_buttons)
        self.empty_label = QLabel("Loading…", self)
        self.empty_label.setAccessibleName("No grants")
        self.empty_label.setWordWrap(True)
        self.revoke_button = QPushButton("&Revoke now", self)
        self.revoke_button.setAccessibleName("Revoke the selected grant now")
        self.revoke_button.setToolTip("Takes effect at once, also in a running session")
        self.revoke_button.clicked.connect(self._revoke)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.revoke_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.empty_label)
        layout.addLayout(buttons)
        self.grants: tuple[GrantInfo, ...] = ()
        self._update_buttons()

    def show_all(self, grants: tuple[GrantInfo, ...], current: str | None = None) -> None:
        """The kernel's list of every session's grants; `current`: the open session."""
        chosen = self.selected()
        self.grants = grants
        self.tree.clear()
        for grant in in_order(grants, current):
            item = QTreeWidgetItem([grant.rule, granted_in(grant, current),
                                    grant.words + (" (with network)" if grant.network
                                                   else "")])
            item.setToolTip(2, item.text(2))
            key = (grant.session_id, grant.rule, grant.scope)
            item.setData(0, Qt.ItemDataRole.UserRole, key)
            self.tree.addTopLevelItem(item)
            if key == chosen:
                self.tree.setCurrentItem(item)
        self.tree.resizeColumnToContents(0)
        self.tree.resizeColumnToContents(1)
        first = self.tree.topLevelItem(0)
        if first is not None and self.selected() is None:
            self.tree.setCurrentItem(first)
        self.empty_label.setText("Nothing is granted: every call the mode does not allow "
                                 "is asked.")
        self.empty_label.setVisible(not grants)
        self._update_buttons()

    def selected(self) -> tuple[str, str, str] | None:
        item = self.tree.currentItem()
        if item is None or not item.isSelected():
            return None
        session_id, rule, scope = item.data(0, Qt.ItemDataRole.UserRole)
        return str(session_id), str(rule), str(scope)

    def _update_buttons(self) -> None:
        self.revoke_button.setEnabled(self.selected() is not None)

    def _revoke(self) -> None:
        chosen = self.selected()
        if chosen is not None:
            self.revoke_button.setEnabled(False)
            self.revoke_requested.emit(*chosen)
