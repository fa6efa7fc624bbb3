"""Painting of timeline rows: a status icon, a button-like action cell, fixed height.

`TimelineDelegate(parent)` paints every cell as plain text (tool output is untrusted: no rich
text anywhere). The status cell gets its status icon (resources/icons/ui, in the status's
colour), the tool's name the text colour, the other cells the muted one; a selected row is
a soft tint of the highlight and a hovered one a faint shade. The action cell looks like a
small button ("■ Stop" on a running call, "Open output" on a call whose full output is on
disk) and a click on it emits `stop_clicked(call_id)` or `open_clicked(path)`. Every row
has the same height (`row_height()`), which the panel also gives the view's vertical header
so Qt never measures rows.

Painting is cheap because the table repaints while a run streams: each cell asks the model
for its text once (not the dozen roles `QStyledItemDelegate` asks through the Python model),
draws it directly, and elided strings are cached per (text, width) for the current font;
the tinted icons and the row colours are made once per palette.
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

from desktop.call_status import STATUS_COLOURS as CALL_COLOURS
from desktop.call_status import STATUS_ICONS
from desktop.icons import icon_pixmap
from desktop.theme import mix, muted_text
from desktop.timeline.model import RECORD_ROLE, Column
from desktop.timeline.record import CallRecord
from kernel.events import CallStatus

STATUS_COLOURS: dict[CallStatus, QColor] = {
    status: QColor(colour) for status, colour in CALL_COLOURS.items()}
"""desktop.call_status's colours, as the painter takes them."""

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
ICON = 14
"""The status icon's size in logical pixels."""
ROW_PADDING = 16
"""Added to the font's height for a row: room to read."""
_STRONG = frozenset({Column.STATUS, Column.TOOL})
"""Columns in the text colour; the others are secondary (muted)."""


class _Colours:
    """The row colours of one palette: selection and hover fills, text, muted text and the
    action button's border (made once per palette, asked at every paint)."""

    def __init__(self, palette: QPalette) -> None:
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        self.key = palette.cacheKey()
        self.selected = mix(base, palette.color(QPalette.ColorRole.Highlight), 0.22)
        self.hover = mix(base, text, 0.05)
        self.text = text
        self.muted = muted_text(palette)
        self.border = mix(base, text, 0.22)
        self.button = base
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
        self._colours: _Colours | None = None
        self.hovered_row = -1
        """The row under the mouse (the view's `entered`; -1: none), shaded whole."""

    def row_height(self, metrics: QFontMetrics) -> int:
        if not self._height:
            self._height = metrics.height() + ROW_PADDING
        return self._height

    def colours(self, palette: QPalette) -> _Colours:
        colours = self._colours
        if colours is None or colours.key != palette.cacheKey():
            colours = self._colours = _Colours(palette)
        return colours

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
        colours = self.colours(option.palette)
        rect = option.rect
        if state & _SELECTED:
            painter.fillRect(rect, colours.selected)
        elif index.row() == self.hovered_row:
            painter.fillRect(rect, colours.hover)
        text_colour = colours.text if column in _STRONG else colours.muted
        if column == Column.STATUS or (column == Column.ACTION and text):
            painter.save()
            rect = self._paint_decoration(painter, option, index, column, colours)
            painter.restore()
            if column == Column.ACTION:
                text_colour = colours.text
        else:
            rect = rect.adjusted(8, 0, -6, 0)
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
                          column: int, colours: _Colours) -> QRect:
        """The status icon or the action button; returns the rect left for the text."""
        rect = option.rect.adjusted(10, 0, -6, 0)
        if column == Column.STATUS:
            record = index.data(RECORD_ROLE)
            if not isinstance(record, CallRecord):
                return rect
            ratio = painter.device().devicePixelRatioF()
            pixmap = icon_pixmap(STATUS_ICONS[record.status], STATUS_COLOURS[record.status],
                                 ICON, ratio)
            top = rect.top() + (rect.height() - ICON) // 2
            painter.drawPixmap(rect.left(), top, pixmap)
            return rect.adjusted(ICON + 8, 0, 0, 0)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        button = self.button_rect(option.rect, self._metrics_for(option), str(index.data(_DISPLAY)))
        painter.setPen(colours.border)
        painter.setBrush(colours.button)
        painter.drawRoundedRect(button.adjusted(0, 0, -1, -1), 7, 7)
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
        return QRect(cell.left() + 3, cell.top() + 5, width, cell.height() - 10)

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
