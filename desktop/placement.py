"""Where a new top-level window goes: wholly on the screen its parent is on.

    fit_on_screen(wanted, available) -> QRect   # pure: the size cut to the screen, then
                                                # moved (not shrunk further) inside it
    place_window(window, parent, size)          # centred on the parent, then fitted
"""

from __future__ import annotations

from PySide6.QtCore import QMargins, QRect, QSize
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget


def fit_on_screen(wanted: QRect, available: QRect) -> QRect:
    """`wanted` no larger than `available` and moved so that all of it lies inside."""
    width = min(wanted.width(), available.width())
    height = min(wanted.height(), available.height())
    left = max(available.left(), min(wanted.left(), available.right() - width + 1))
    top = max(available.top(), min(wanted.top(), available.bottom() - height + 1))
    return QRect(left, top, width, height)


def place_window(window: QWidget, parent: QWidget | None, size: QSize) -> None:
    """Give `window` `size` centred on `parent` (or its screen), wholly on that screen,
    its frame (title bar, borders: taken to be those of the parent's window) included."""
    top_level = parent.window() if parent is not None else None
    screen = (top_level.screen() if top_level is not None else None) or \
        QGuiApplication.primaryScreen()
    available = screen.availableGeometry()
    anchor = top_level.frameGeometry() if top_level is not None and top_level.isVisible() \
        else available
    margins = QMargins()
    if top_level is not None and top_level.isVisible():
        outer, inner = top_level.frameGeometry(), top_level.geometry()
        margins = QMargins(inner.left() - outer.left(), inner.top() - outer.top(),
                           outer.right() - inner.right(), outer.bottom() - inner.bottom())
    wanted = QRect(0, 0, size.width() + margins.left() + margins.right(),
                   size.height() + margins.top() + margins.bottom())
    wanted.moveCenter(anchor.center())
    window.setGeometry(fit_on_screen(wanted, available).marginsRemoved(margins))
