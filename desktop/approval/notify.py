"""Approvals noticed from another window: a tray icon with the pending count, and a desktop
notification when a request arrives while Reins is not the active window. Clicking the
tray icon or the notification brings the main window and the approval dialog up.

The tray icon is shown only while something is pending (where the desktop has a tray);
the notification goes through the tray (QSystemTrayIcon.showMessage), and the window
also asks for attention (QApplication.alert) in the task bar.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QRect, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

from desktop.approval.dialog import ApprovalQueue
from desktop.resources import ResourceMissing, icon_png
from kernel.events import ApprovalRequest
from kernel.visible import one_line

BADGE_SIZE = 64


def badge_icon(count: int) -> QIcon:
    """The app icon with the pending count in a red circle."""
    try:
        pixmap = QPixmap(str(icon_png(BADGE_SIZE)))
    except ResourceMissing:
        pixmap = QPixmap(BADGE_SIZE, BADGE_SIZE)
        pixmap.fill(QColor("#6e7781"))
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    radius = BADGE_SIZE * 0.28
    circle = QRect(int(BADGE_SIZE - 2 * radius), 0, int(2 * radius), int(2 * radius))
    painter.setBrush(QColor("#d1242f"))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawEllipse(circle)
    font = QFont()
    font.setBold(True)
    font.setPixelSize(int(radius * 1.3))
    painter.setFont(font)
    painter.setPen(QColor("white"))
    painter.drawText(circle, Qt.AlignmentFlag.AlignCenter, str(count) if count < 100 else "99+")
    painter.end()
    return QIcon(pixmap)


class ApprovalNotifier(QObject):
    def __init__(self, window: QWidget, queue: ApprovalQueue) -> None:
        super().__init__(window)
        self.window = window
        self.queue = queue
        self.tray = QSystemTrayIcon(self)
        self.tray.activated.connect(self._tray_activated)
        self.tray.messageClicked.connect(self.bring_up)
        self.last_message = ("", "")
        """The latest notification's title and text (what was shown, for the record)."""
        queue.count_changed.connect(self.set_count)
        queue.arrived.connect(self._arrived)

    def set_count(self, count: int) -> None:
        if count <= 0:
            self.tray.hide()
            return
        self.tray.setIcon(badge_icon(count))
        self.tray.setToolTip(f"Reins — {count} approval{'s' if count != 1 else ''} pending")
        self.tray.show()

    def _arrived(self, request: ApprovalRequest) -> None:
        if self._reins_active():
            return
        title = "Reins — approval needed"
        text = one_line(f"{request.name}: {request.reason}")
        self.last_message = (title, text)
        self.tray.showMessage(title, text, QSystemTrayIcon.MessageIcon.Warning, 30_000)

    def _reins_active(self) -> bool:
        """The main window or one of its dialogs (approval, settings…) has the focus."""
        widget = QApplication.activeWindow()
        while widget is not None:
            if widget is self.window:
                return True
            widget = widget.parentWidget()
        return False

    def _tray_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in (QSystemTrayIcon.ActivationReason.Trigger,
                      QSystemTrayIcon.ActivationReason.DoubleClick):
            self.bring_up()

    def bring_up(self) -> None:
        """The main window raised and the first pending request shown, focused."""
        if self.window.isMinimized():
            self.window.showNormal()
        self.window.show()
        self.window.raise_()
        self.window.activateWindow()
        self.queue.show_current(activate=True)
