"""About Reins: what it is, its version, and what it runs on (plain text)."""

from __future__ import annotations

import platform

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

DISTRIBUTION = "reins-desktop"


def reins_version() -> str:
    # importlib.metadata costs tens of milliseconds: loaded when About opens, not at start.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "development build"


def about_text() -> str:
    return (f"Reins {reins_version()}\n\n"
            "A desktop AI assistant that acts on your computer while you keep hold of the "
            "reins: every tool call is shown, risky ones ask first, commands run in a "
            "sandbox.\n\n"
            f"Python {platform.python_version()} · Qt {qVersion()} · PySide6 {pyside_version}"
            f"\nLicense: MIT")


class AboutDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowTitle("About Reins")
        self.setAccessibleName("About Reins")
        self.label = QLabel(about_text(), self)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.label)
        layout.addWidget(buttons)
        self.setMinimumWidth(420)
