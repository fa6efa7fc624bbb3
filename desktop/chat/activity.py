"""The chat's activity line: an animated spinner, what the run is doing and for how long
("Thinking · 4.2 s", "Running run_command · 12.0 s", "Waiting for your approval · 3 s").

It lives in a strip under the conversation that is always there (so showing it never
relayouts the messages) and animates only while shown.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QRectF, Qt, QTimer
from PySide6.QtGui import QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QWidget

from desktop.chat.model import Activity
from desktop.words import format_duration

HEIGHT = 24
FRAME_MS = 80
SPIN_DEGREES = 30


class ActivityIndicator(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("What the run is doing")
        self.setFixedHeight(HEIGHT)
        self.activity: Activity | None = None
        self._angle = 0
        self._timer = QTimer(self)
        self._timer.setInterval(FRAME_MS)
        self._timer.timeout.connect(self._tick)
        self.hide()

    def show_activity(self, activity: Activity | None) -> None:
        self.activity = activity
        if activity is None:
            self._timer.stop()
            self.hide()
            return
        self.show()
        self.raise_()
        if not self._timer.isActive():
            self._timer.start()
        self.update()

    def text(self) -> str:
        if self.activity is None:
            return ""
        elapsed = format_duration(time.time() - self.activity.since)
        return f"{self.activity.label} · {elapsed}"

    def _tick(self) -> None:
        self._angle = (self._angle + SPIN_DEGREES) % 360
        self.setAccessibleDescription(self.text())
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        colour = self.palette().color(QPalette.ColorRole.Highlight)
        pen = QPen(colour, 2.2)
        pen.setCapStyle(Qt.PenCapStyle.RoundCap)
        painter.setPen(pen)
        spinner = QRectF(14, (HEIGHT - 12) / 2, 12, 12)
        painter.drawArc(spinner, -self._angle * 16, 270 * 16)
        painter.setPen(self.palette().color(QPalette.ColorRole.PlaceholderText))
        painter.drawText(QRectF(34, 0, self.width() - 40, HEIGHT),
                         Qt.AlignmentFlag.AlignVCenter, self.text())
        painter.end()
