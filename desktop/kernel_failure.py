"""When the kernel cannot be kept running: say why, and offer what can help.

`KernelFailureDialog` shows the client's `KernelFailure` (why, and the kernel's last stderr
lines) and offers to move the session database aside and start again — the usual way out of
a database that kills every kernel before it is ready — or to just try again. Moving aside
renames the database and its SQLite companions (`-wal`, `-shm`, `-journal`) together, so
the kept copy stays whole: `reins.sqlite3` becomes `reins.sqlite3.broken-<time>`. Nothing
is deleted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.kernel_client import KernelFailure

COMPANIONS = ("-wal", "-shm", "-journal")
"""The files SQLite keeps next to a database, named by suffix."""


def move_database_aside(database: Path, now: float | None = None) -> Path:
    """Rename the database (and its companions) to `<name>.broken-<YYYYmmdd-HHMMSS>`, with
    `-2`, `-3`… when that name is taken; the new path of the database. A missing database
    raises FileNotFoundError; nothing is overwritten."""
    if not database.exists():
        raise FileNotFoundError(f"there is no session database at {database}")
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    base = f"{database.name}.broken-{stamp}"
    target = database.with_name(base)
    counter = 1
    while any(database.with_name(target.name + c).exists() for c in ("", *COMPANIONS)):
        counter += 1
        target = database.with_name(f"{base}-{counter}")
    for companion in COMPANIONS:
        source = database.with_name(database.name + companion)
        if source.exists():
            source.rename(target.with_name(target.name + companion))
    database.rename(target)
    return target


class KernelFailureDialog(QDialog):
    moved = Signal(str)
    """The database was moved aside to this path (a new kernel is being started)."""

    def __init__(self, failure: KernelFailure, database: Path, restart: Callable[[], None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Reins cannot start its kernel")
        self._database = database
        self._restart = restart
        what = (f"{failure.reason} The session database {database} cannot be used."
                if failure.database_unusable else
                f"{failure.reason} It was restarted {failure.restarts} time(s) and stopped "
                f"again each time.")
        self.summary = QLabel(
            f"{what} Until a kernel runs, nothing can be run and past sessions cannot be "
            f"opened.\n\nMoving the database aside starts Reins with an empty one; the old "
            f"file is kept next to it (renamed, not deleted).")
        self.summary.setWordWrap(True)
        self.details = QPlainTextEdit(failure.stderr_tail or "(the kernel wrote nothing on "
                                      "stderr)")
        self.details.setReadOnly(True)
        self.details.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.outcome = QLabel("")
        self.outcome.setWordWrap(True)
        buttons = QDialogButtonBox()
        self.move_button = QPushButton("Move the database aside and restart")
        self.retry_button = QPushButton("Try again")
        self.close_button = QPushButton("Close")
        for button in (self.move_button, self.retry_button, self.close_button):
            button.setAutoDefault(False)
        buttons.addButton(self.move_button, QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.addButton(self.retry_button, QDialogButtonBox.ButtonRole.ResetRole)
        buttons.addButton(self.close_button, QDialogButtonBox.ButtonRole.RejectRole)
        self.move_button.clicked.connect(self._move_aside)
        self.retry_button.clicked.connect(self._retry)
        self.close_button.clicked.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(QLabel("What the kernel said last:"))
        layout.addWidget(self.details)
        layout.addWidget(self.outcome)
        layout.addWidget(buttons)
        self.resize(640, 420)

    def _move_aside(self) -> None:
        try:
            moved = move_database_aside(self._database)
        except OSError as exc:
            self.outcome.setText(f"The database could not be moved: {exc}")
            return
        self.moved.emit(str(moved))
        self.accept()
        self._restart()

    def _retry(self) -> None:
        self.accept()
        self._restart()
