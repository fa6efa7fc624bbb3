"""Painting of timeline rows: a coloured status badge, a button-like action cell, fixed height.

`TimelineDelegate(parent)` paints every cell as plain text (tool output is untrusted: no rich
text anywhere). The status cell gets a coloured dot; the action cell looks like a small button
("■ Stop" on a running call, "Open output" on a call whose full output is on disk) and a click
on it emits `stop_clicked(call_id)` or `open_clicked(path)`. Every row has the same height
(`row_height()`), which the panel also gives the view's vertical header so Qt never measures
rows.

Painting is cheap because the table repaints while a run streams: each cell asks the model
for its text once (not the dozen roles `QStyledItemDelegate` asks through the Python model),
draws it directly, and elided strings are cached per (text, width) for the current font.
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
from PySide6.QtGui import QColor, QFont, QFontMetrics, QMouseEvent, QPainter, QPalette
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from desktop.timeline.model import RECORD_ROLE, Column
from desktop.timeline.record import CallRecord
from kernel.events import CallStatus

STATUS_COLOURS: dict[CallStatus, QColor] = {
    "queued": QColor("#8a8f98"),
    "awaiting_approval": QColor("#d69e00"),
    "running": QColor("#2f7fd8"),
    "ok": QColor("#2e9d58"),
    "error": QColor("#d23c3c"),
    "denied": QColor("#a04fc7"),
    "stopped": QColor("#6b6f76"),
    "timeout": QColor("#e0702a"),
}

Index = QModelIndex | QPersistentModelIndex
ELIDE_CACHE_SIZE = 4096
"""Elided strings kept per font; the cache starts over when it is full or the font changes."""
_LEFT = Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft
_RIGHT = Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight
_CENTRE = Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignHCenter
_ALIGN: dict[int, int] = {Column.DURATION: int(_RIGHT), Column.OUTPUT: int(_RIGHT),
                          Column.ACTION: int(_CENTRE)}
_ELIDE: dict[int, Qt.TextElideMode] = {Column.TOOL: Qt.TextElideMode.ElideMiddle}
"""Tool names keep both ends (`mcp__server__tool`: the server and the tool stay readable)."""
_SELECTED = QStyle.StateFlag.State_Selected
_DISPLAY = Qt.ItemDataRole.DisplayRole


class TimelineDelegate(QStyledItemDelegate):
    stop_clicked = Signal(str)
    open_clicked = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._height = 0
        self._font = QFont()
        self._metrics = QFontMetrics(self._font)
        self._elided: dict[tuple[str, int, Qt.TextElideMode], str] = {}

    def row_height(self, metrics: QFontMetrics) -> int:
        if not self._height:
            self._height = metrics.height() + 10
        return self._height

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        size = super().sizeHint(option, index)
        return QSize(size.width(), self.row_height(option.fontMetrics))

    def elided(self, option: QStyleOptionViewItem, text: str, width: int,
               mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight) -> str:
        """`text` elided to `width` pixels in the option's font (cached)."""
        metrics = self._metrics_for(option)
        key = (text, width, mode)
        hit = self._elided.get(key)
        if hit is None:
            if len(self._elided) >= ELIDE_CACHE_SIZE:
                self._elided.clear()
            hit = metrics.elidedText(text, mode, width)
            self._elided[key] = hit
        return hit

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        column = index.column()
        text = index.data(_DISPLAY) or ""
        state = option.state
        palette = option.palette
        rect = option.rect
        selected = bool(state & _SELECTED)
        if selected:
            painter.fillRect(rect, palette.brush(QPalette.ColorRole.Highlight))
        text_colour = palette.color(
            QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text)
        if column == Column.STATUS or (column == Column.ACTION and text):
            painter.save()
            rect = self._paint_decoration(painter, option, index, column, text, text_colour)
            painter.restore()
            if column == Column.ACTION:
                text_colour = palette.color(QPalette.ColorRole.ButtonText)
        else:
            rect = rect.adjusted(6, 0, -4, 0)
        if text:
            painter.setPen(text_colour)
            painter.drawText(rect, _ALIGN.get(column, int(_LEFT)),
                             self.elided(option, str(text), rect.width(),
                                         _ELIDE.get(column, Qt.TextElideMode.ElideRight)))
        if state & QStyle.StateFlag.State_HasFocus and column == Column.STATUS:
            widget = option.widget
            style = widget.style() if widget is not None else None
            if style is not None:
                style.drawPrimitive(QStyle.PrimitiveElement.PE_FrameFocusRect, option,
                                    painter, widget)

    def _paint_decoration(self, painter: QPainter, option: QStyleOptionViewItem, index: Index,
                          column: int, text: str, text_colour: QColor) -> QRect:
        """The status dot or the action button; returns the rect left for the text."""
        rect = option.rect.adjusted(6, 0, -4, 0)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        if column == Column.STATUS:
            record = index.data(RECORD_ROLE)
            if not isinstance(record, CallRecord):
                return rect
            dot = min(10, rect.height() - 6)
            selected = bool(option.state & _SELECTED)
            painter.setPen(text_colour if selected else Qt.PenStyle.NoPen)
            painter.setBrush(STATUS_COLOURS[record.status])
            top = rect.top() + (rect.height() - dot) // 2
            painter.drawEllipse(QRect(rect.left(), top, dot, dot))
            return rect.adjusted(dot + 6, 0, 0, 0)
        button = self.button_rect(option.rect, self._metrics_for(option), text)
        painter.setPen(option.palette.color(QPalette.ColorRole.Mid))
        painter.setBrush(option.palette.brush(QPalette.ColorRole.Button))
        painter.drawRoundedRect(button, 4, 4)
        return button

    def _metrics_for(self, option: QStyleOptionViewItem) -> QFontMetrics:
        """Metrics of the option's font, made again (and the elide cache emptied) only when
        the font changes."""
        font = option.font
        if font != self._font:
            self._font = QFont(font)
            self._metrics = QFontMetrics(font)
            self._elided.clear()
        return self._metrics

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
        if record.stoppable:
            self.stop_clicked.emit(record.call_id)
            return True
        if record.externalized_path:
            self.open_clicked.emit(record.externalized_path)
            return True
        return False
