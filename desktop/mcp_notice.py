"""An MCP server's failure, said once and briefly outside the conversation: an item in the
status bar ("⚠ MCP server “docs” failed · Details") that opens what is known about it (the
error, the last lines of its stderr) with a way to its settings.

The kernel pushes every server's state (`McpServerStates`) whenever one changes. A failure
is said when a server becomes failed, and not again while it stays so (its automatic
restarts that fail too, a new kernel, every run); a server is said again only after it was
ready, disabled or removed in between (`to_say`, pure). Reading the details puts the item
away. The conversation says nothing: the session's `mcp_server` events stay a record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from kernel.events import ServerStatus
from kernel.visible import one_line

if TYPE_CHECKING:
    from desktop.status_bar import FitButton
    from kernel.protocol import McpServerInfo

NAME_CHARS = 32
"""A server's name in the status bar is cut to this many characters (the details say all)."""
_STAYS_SAID = (ServerStatus.FAILED, ServerStatus.STARTING)
"""A said failure stays said while the server is failed or tries to start again."""


def to_say(said: frozenset[str], servers: Sequence[McpServerInfo]
           ) -> tuple[list[McpServerInfo], frozenset[str]]:
    """The servers whose failure is to be said now, and the names whose failure is said
    once these states are shown."""
    fresh = [s for s in servers if s.status is ServerStatus.FAILED and s.name not in said]
    kept = {s.name for s in servers if s.status in _STAYS_SAID and s.name in said}
    return fresh, frozenset(kept | {s.name for s in fresh})


def _short(name: str) -> str:
    name = one_line(name)
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


def notice_forms(names: Sequence[str]) -> tuple[str, ...]:
    """The item's forms, the whole first (none for no failure)."""
    if not names:
        return ()
    if len(names) == 1:
        name = _short(names[0])
        return f"⚠ MCP server “{name}” failed · Details", f"⚠ MCP “{name}” failed", \
            "⚠ MCP failed"
    return f"⚠ {len(names)} MCP servers failed · Details", f"⚠ {len(names)} MCP failed", \
        "⚠ MCP failed"


def details_text(servers: Sequence[McpServerInfo]) -> str:
    """The box's sentence: which servers failed and what that means."""
    names = ", ".join(f"“{one_line(s.name)}”" for s in servers)
    one = len(servers) == 1
    return (f"The MCP server{'' if one else 's'} {names} failed: {'its' if one else 'their'} "
            "tools are not available. The MCP settings show each server's state and can "
            "restart it.")


class McpFailureNotice(QObject):
    """Keeps what was said and shows the unread failures on `button` (a part of the status
    bar; `refit` lays the bar out again when its text changes)."""

    settings_requested = Signal()
    """The box's "MCP settings…": show the servers' settings."""

    def __init__(self, button: FitButton, refit: Callable[[], None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.button = button
        self._refit = refit
        self._said: frozenset[str] = frozenset()
        self.unread: dict[str, McpServerInfo] = {}
        """The failures said and not yet read, by name (the latest failed state)."""
        self.box: QMessageBox | None = None
        button.clicked.connect(self.show_details)

    def update(self, servers: Sequence[McpServerInfo]) -> None:
        """New states from the kernel (all servers)."""
        fresh, self._said = to_say(self._said, servers)
        latest = {s.name: s for s in servers if s.status is ServerStatus.FAILED}
        self.unread = {name: latest.get(name, info) for name, info in self.unread.items()
                       if name in self._said} | {s.name: s for s in fresh}
        self._show()

    def _show(self) -> None:
        failed = list(self.unread.values())
        self.button.set_forms(notice_forms([s.name for s in failed]),
                              details_text(failed) if failed else "")
        self._refit()

    def show_details(self) -> None:
        """What is known about the unread failures, in a box; the item goes."""
        from desktop.settings.mcp import server_details

        failed = list(self.unread.values())
        if not failed:
            return
        parent = self.button.window()
        box = QMessageBox(QMessageBox.Icon.Warning, "MCP server failed", details_text(failed),
                          QMessageBox.StandardButton.Close,
                          parent if isinstance(parent, QWidget) else None)
        box.setObjectName("mcpFailureBox")
        box.setInformativeText("\n".join(one_line(f"{s.name}: {s.error or s.summary}")
                                         for s in failed))
        box.setDetailedText("\n\n".join(server_details(s) for s in failed))
        settings = box.addButton("MCP &settings…", QMessageBox.ButtonRole.ActionRole)
        settings.clicked.connect(self.settings_requested)
        box.setEscapeButton(QMessageBox.StandardButton.Close)
        self.box = box
        self.unread = {}
        self._show()
        box.open()
