"""Painting of timeline rows: a coloured status badge, a button-like action cell, fixed height.

`TimelineDelegate(parent)` paints every cell as plain text (tool output is untrusted: no rich
text anywhere). The status cell gets a coloured dot; the action cell looks like a small button
("■ Stop" on a running call, "Open output" on a call whose full output is on disk) and a click
on it emits `stop_clicked(call_id)` or `open_clicked(path)`. Every row has the same height
(`row_height()`), which the panel also gives the view's vertical header so Qt never measures
rows.
"""

from __future__ import annotations

from PySide6.QtCore import (
    QAbstractItemModel,
    QEvent,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRect,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QFontMetrics, QMouseEvent, QPainter, QPalette
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from desktop.timeline.model import RECORD_ROLE, Column
from desktop.timeline.record import CallRecord, Status

STATUS_COLOURS = {
    Status.QUEUED: QColor("#8a8f98"),
    Status.AWAITING_APPROVAL: QColor("#d69e00"),
    Status.RUNNING: QColor("#2f7fd8"),
    Status.DONE: QColor("#2e9d58"),
    Status.ERROR: QColor("#d23c3c"),
    Status.DENIED: QColor("#a04fc7"),
    Status.CANCELLED: QColor("#6b6f76"),
    Status.TIMED_OUT: QColor("#e0702a"),
}

Index = QModelIndex | QPersistentModelIndex


class TimelineDelegate(QStyledItemDelegate):
    stop_clicked = Signal(str)
    open_clicked = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._height = 0

    def row_height(self, metrics: QFontMetrics) -> int:
        if not self._height:
            self._height = metrics.height() + 10
        return self._height

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        size = super().sizeHint(option, index)
        return QSize(size.width(), self.row_height(option.fontMetrics))

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        column = index.column()
        if column not in (Column.STATUS, Column.ACTION):
            super().paint(painter, option, index)
            return
        record = index.data(RECORD_ROLE)
        if not isinstance(record, CallRecord):
            return
        painter.save()
        if option.state & QStyle.StateFlag.State_Selected:
            painter.fillRect(option.rect, option.palette.brush(QPalette.ColorRole.Highlight))
            text_colour = option.palette.color(QPalette.ColorRole.HighlightedText)
        else:
            text_colour = option.palette.color(QPalette.ColorRole.Text)
        text = str(index.data(Qt.ItemDataRole.DisplayRole) or "")
        rect = option.rect.adjusted(6, 0, -4, 0)
        if column == Column.STATUS:
            colour = STATUS_COLOURS[record.status]
            dot = min(10, rect.height() - 6)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            selected = bool(option.state & QStyle.StateFlag.State_Selected)
            painter.setPen(text_colour if selected else Qt.PenStyle.NoPen)
            painter.setBrush(colour)
            top = rect.top() + (rect.height() - dot) // 2
            painter.drawEllipse(QRect(rect.left(), top, dot, dot))
            rect = rect.adjusted(dot + 6, 0, 0, 0)
        elif text:
            button = self.button_rect(option.rect, option.fontMetrics, text)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setPen(option.palette.color(QPalette.ColorRole.Mid))
            painter.setBrush(option.palette.brush(QPalette.ColorRole.Button))
            painter.drawRoundedRect(button, 4, 4)
            text_colour = option.palette.color(QPalette.ColorRole.ButtonText)
            rect = button
        painter.setPen(text_colour)
        elided = option.fontMetrics.elidedText(text, Qt.TextElideMode.ElideRight, rect.width())
        align = Qt.AlignmentFlag.AlignVCenter | (
            Qt.AlignmentFlag.AlignHCenter if column == Column.ACTION else Qt.AlignmentFlag.AlignLeft
        )
        painter.drawText(rect, int(align), elided)
        painter.restore()

    @staticmethod
    def button_rect(cell: QRect, metrics: QFontMetrics, text: str) -> QRect:
        width = min(cell.width() - 6, metrics.horizontalAdvance(text) + 16)
        return QRect(cell.left() + 3, cell.top() + 3, width, cell.height() - 6)

    def editorEvent(self, event: QEvent, model: QAbstractItemModel,
                    option: QStyleOptionViewItem, index: Index) -> bool:
        if index.column() != Column.ACTION or event.type() != QEvent.Type.MouseButtonRelease:
            return super().editorEvent(event, model, option, index)
        assert isinstance(event, QMouseEvent)
        record = index.data(RECORD_ROLE)
        text = str(index.data(Qt.ItemDataRole.DisplayRole) or "")
        if not isinstance(record, CallRecord) or not text:
            return False
        if not self.button_rect(option.rect, option.fontMetrics, text).contains(
            event.position().toPoint()
        ):
            return False
        if record.status is Status.RUNNING:
            self.stop_clicked.emit(record.call_id)
            return True
        if record.externalized_path:
            self.open_clicked.emit(record.externalized_path)
            return True
        return False
