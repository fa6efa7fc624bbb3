"""The menu action that opens the Evaluations window (built on first use, then reused).

Only QAction is imported here, so adding the menu entry costs the main window nothing at
start-up; the window and its modules load when the entry is first chosen.
"""

from __future__ import annotations

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QWidget

EVALS_FOLDER = "evals"


def evaluations_action(window: QWidget) -> QAction:
    """View → Evaluations…: opens the window; runs are saved under the data folder."""
    action = QAction("&Evaluations…", window)
    action.setObjectName("evaluations")
    opened: list[QWidget] = []

    def open_window() -> None:
        if not opened:
            from desktop.evaluations.window import EvaluationsWindow
            from kernel.paths import AppPaths

            opened.append(EvaluationsWindow(AppPaths.from_env().data / EVALS_FOLDER, window))
        opened[0].show()
        opened[0].raise_()
        opened[0].activateWindow()

    action.triggered.connect(open_window)
    return action
