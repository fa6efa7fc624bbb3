"""The painted, fixed-row text view of the output viewer.

    view = LogView()
    view.set_index(index)           # a LineIndex, or None
    view.refresh()                  # the index grew: update the scroll range (and follow)
    view.set_wrap(bool), view.set_ansi(bool), view.set_highlight(re.Pattern[str] | None)
    view.scroll_to_row(row), view.select_rows(first, last), view.selected_text()
    view.follow                     # True: stay at the end as rows are added (tail -f)

Only the rows on screen are read, decoded and painted, so the cost of a paint does not depend
on the file's size. The vertical scroll bar counts rows; every row is one line of the font
high, except that with wrapping on a row takes as many lines as it needs (the scroll bar still
moves by rows). Line numbers are painted in a gutter; the continuation rows of a line longer
than the index's cap show "↪" instead of a number. Selection is by whole rows (click, shift-click,
drag, Shift+arrows); Ctrl+C copies the selected rows as plain text, without ANSI codes.
Text is drawn with QPainter.drawText: never interpreted as rich text.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from itertools import pairwise

from PySide6.QtCore import QRect, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QGuiApplication,
    QKeyEvent,
    QKeySequence,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPalette,
    QResizeEvent,
    QWheelEvent,
)
from PySide6.QtWidgets import QAbstractScrollArea, QWidget

from desktop.viewer.index import LineIndex
from desktop.viewer.text import DisplayLine, render_row

COPY_LIMIT = 16 * 1024 * 1024
_ROW_CACHE = 4000
HIGHLIGHT = QColor(255, 214, 0, 150)
CURRENT = QColor(255, 140, 0, 200)


class LogView(QAbstractScrollArea):
    copied = Signal(int, bool)
    """(rows copied, truncated at COPY_LIMIT) after Ctrl+C or copy()."""
    follow_changed = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Output text")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setStyleHint(QFont.StyleHint.Monospace)
        self.setFont(font)
        self.viewport().setFont(font)
        self._index: LineIndex | None = None
        self._rows = 0
        self._generation = -1
        self._wrap = False
        self._ansi = True
        self._highlight: re.Pattern[str] | None = None
        self._current: tuple[int, int] | None = None
        """(row, byte offset) of the current search match."""
        self._anchor: int | None = None
        self._caret: int | None = None
        self._follow = False
        self._jumping = False
        """A move made by scroll_to_row, not by the user scrolling."""
        self._widest = 0
        self._cache: OrderedDict[int, DisplayLine] = OrderedDict()
        self._layout: list[tuple[int, int, int]] = []
        """(row, top y, bottom y) of the rows painted last."""
        self._size_seen = 0
        self._gutter_seen = 0
        self.verticalScrollBar().valueChanged.connect(self._scrolled)
        self.horizontalScrollBar().valueChanged.connect(lambda _v: self.viewport().update())

    # --- state ---------------------------------------------------------------------------

    def set_index(self, index: LineIndex | None) -> None:
        self._index = index
        self._cache.clear()
        self._rows = 0
        self._widest = 0
        self._anchor = self._caret = None
        self._current = None
        self._generation = index.generation if index else -1
        self._size_seen = 0
        self.verticalScrollBar().setValue(0)
        self.refresh()
        self.viewport().update()

    @property
    def row_count(self) -> int:
        return self._rows

    @property
    def follow(self) -> bool:
        return self._follow

    def set_follow(self, follow: bool) -> None:
        if follow != self._follow:
            self._follow = follow
            self.follow_changed.emit(follow)
        if follow:
            self.scroll_to_row(max(0, self._rows - 1))

    def set_wrap(self, wrap: bool) -> None:
        self._wrap = wrap
        self._update_ranges()
        self.viewport().update()

    def set_ansi(self, ansi: bool) -> None:
        self._ansi = ansi
        self._cache.clear()
        self.viewport().update()

    def set_highlight(self, pattern: re.Pattern[str] | None) -> None:
        self._highlight = pattern
        self.viewport().update()

    def set_current_match(self, row: int | None, offset: int = 0) -> None:
        self._current = None if row is None else (row, offset)
        self.viewport().update()

    def refresh(self) -> None:
        """Pick up rows the index found since the last call; repaint only if they show."""
        index = self._index
        rows = index.row_count() if index else 0
        size = index.size if index else 0
        repaint = False
        if index is not None and index.generation != self._generation:
            self._generation = index.generation
            self._cache.clear()
            self._anchor = self._caret = None
            repaint = True
        old_rows = self._rows
        bottom = self.top_row() + self.visible_rows()
        if size != self._size_seen and old_rows:
            self._cache.pop(old_rows - 1, None)  # the last row may have grown
            repaint = repaint or old_rows <= bottom
        self._size_seen = size
        gutter = self.gutter_width()
        gutter_changed = gutter != self._gutter_seen
        if rows != old_rows or gutter_changed:
            self._rows = rows
            self._gutter_seen = gutter
            self._update_ranges()
            repaint = repaint or old_rows <= bottom or gutter_changed
            if self._follow:
                self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())
                repaint = True
        if repaint:
            self.viewport().update()

    # --- geometry ------------------------------------------------------------------------

    def line_height(self) -> int:
        return self.fontMetrics().lineSpacing()

    def char_width(self) -> float:
        """The advance of one character of the fixed font (fractional: 100 of them / 100)."""
        return max(1.0, self.fontMetrics().horizontalAdvance("M" * 100) / 100)

    def visible_rows(self) -> int:
        return max(1, self.viewport().height() // self.line_height())

    def gutter_width(self) -> int:
        lines = self._index.line_count() if self._index else 0
        return int((len(str(max(lines, 9999))) + 2) * self.char_width())

    def text_columns(self) -> int:
        return max(8, int((self.viewport().width() - self.gutter_width() - 10)
                          // self.char_width()))

    def top_row(self) -> int:
        return self.verticalScrollBar().value()

    def _update_ranges(self) -> None:
        bar = self.verticalScrollBar()
        last = max(0, self._rows - 1) if self._wrap else max(0, self._rows - self.visible_rows())
        bar.setRange(0, last)
        bar.setPageStep(self.visible_rows())
        hbar = self.horizontalScrollBar()
        if self._wrap:
            hbar.setRange(0, 0)
        else:
            columns = self.text_columns()
            hbar.setRange(0, int(max(0, self._widest - columns + 4) * self.char_width()))
            hbar.setPageStep(int(columns * self.char_width()))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._update_ranges()

    def _scrolled(self, value: int) -> None:
        at_end = value >= self.verticalScrollBar().maximum()
        if at_end and self._jumping:
            at_end = self._follow  # a jump (search, go to line) never starts following
        if at_end != self._follow and self._rows:
            self._follow = at_end
            self.follow_changed.emit(at_end)
        self.viewport().update()

    def scroll_to_row(self, row: int, *, center: bool = False) -> None:
        """Bring `row` into view; reaching the end this way does not turn following on
        (only the user's own scrolling, End or the Follow box do)."""
        bar = self.verticalScrollBar()
        top = bar.value()
        visible = self.visible_rows()
        self._jumping = True
        try:
            if center:
                bar.setValue(max(0, row - visible // 2))
            elif row < top:
                bar.setValue(row)
            elif row >= top + visible:
                bar.setValue(row - visible + 1)
        finally:
            self._jumping = False
        self.viewport().update()

    # --- rows ----------------------------------------------------------------------------

    def display_line(self, row: int) -> DisplayLine:
        cached = self._cache.get(row)
        if cached is not None:
            self._cache.move_to_end(row)
            return cached
        assert self._index is not None
        line = render_row(self._index.row_bytes(row), ansi=self._ansi)
        self._cache[row] = line
        if len(self._cache) > _ROW_CACHE:
            self._cache.popitem(last=False)
        return line

    def row_at(self, y: int) -> int | None:
        for row, top, bottom in self._layout:
            if top <= y < bottom:
                return row
        if self._layout and y >= self._layout[-1][2]:
            return self._layout[-1][0]
        return None

    # --- painting ------------------------------------------------------------------------

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self.viewport())
        palette = self.palette()
        rect = self.viewport().rect()
        painter.fillRect(rect, palette.color(QPalette.ColorRole.Base))
        metrics = self.fontMetrics()
        lh, cw = self.line_height(), self.char_width()
        gutter = self.gutter_width()
        painter.fillRect(QRect(0, 0, gutter, rect.height()),
                         palette.color(QPalette.ColorRole.AlternateBase))
        self._layout = []
        if self._index is None or not self._rows:
            return
        x0 = gutter + 6 - (0 if self._wrap else self.horizontalScrollBar().value())
        columns = self.text_columns()
        ascent = metrics.ascent()
        selection = self._selection()
        text_colour = palette.color(QPalette.ColorRole.Text)
        dim = palette.color(QPalette.ColorRole.PlaceholderText)
        widest = self._widest
        y = 0
        row = self.top_row()
        while y < rect.height() and row < self._rows:
            try:
                info = self._index.row(row)
                line = self.display_line(row)
            except (IndexError, OSError):
                break
            widest = max(widest, len(line.text))
            pieces = ([line.text[i : i + columns] for i in range(0, len(line.text), columns)]
                      or [""]) if self._wrap else [line.text]
            height = lh * len(pieces)
            if selection and selection[0] <= row <= selection[1]:
                painter.fillRect(QRect(gutter, y, rect.width() - gutter, height),
                                 palette.color(QPalette.ColorRole.Highlight))
            painter.setPen(dim)
            number = "↪" if info.continuation else str(info.line + 1)
            painter.drawText(QRect(0, y, gutter - int(cw), lh),
                             int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter),
                             number)
            painter.setClipRect(QRect(gutter, 0, rect.width() - gutter, rect.height()))
            self._paint_highlights(painter, row, line.text, x0, y, columns, lh)
            for k, piece in enumerate(pieces):
                base = k * columns
                self._paint_text(painter, line, piece, base, x0, y + k * lh + ascent,
                                 text_colour, selected=bool(selection and
                                                            selection[0] <= row <= selection[1]))
            painter.setClipping(False)
            self._layout.append((row, y, y + height))
            y += height
            row += 1
        if widest > self._widest:
            self._widest = widest
            self._update_ranges()

    def _paint_text(self, painter: QPainter, line: DisplayLine, piece: str, base: int,
                    x0: int, baseline: int, colour: QColor, *, selected: bool) -> None:
        metrics = self.fontMetrics()
        if selected:
            colour = self.palette().color(QPalette.ColorRole.HighlightedText)
        if not line.spans or selected:
            painter.setPen(colour)
            painter.drawText(x0, baseline, piece)
            return
        end = base + len(piece)
        cuts = sorted({base, end, *(s.start for s in line.spans if base < s.start < end),
                       *(s.end for s in line.spans if base < s.end < end)})
        for a, b in pairwise(cuts):
            span = next((s for s in line.spans if s.start <= a < s.end), None)
            segment = line.text[a:b]
            x = x0 + metrics.horizontalAdvance(line.text[base:a])
            if span is not None and span.bg:
                painter.fillRect(QRect(x, baseline - metrics.ascent(),
                                       metrics.horizontalAdvance(segment), metrics.height()),
                                 QColor(span.bg))
            painter.setPen(QColor(span.fg) if span is not None and span.fg else colour)
            if span is not None and span.bold:
                font = QFont(painter.font())
                font.setBold(True)
                painter.setFont(font)
            painter.drawText(x, baseline, segment)
            if span is not None and span.bold:
                painter.setFont(self.font())

    def _paint_highlights(self, painter: QPainter, row: int, text: str, x0: int, y: int,
                          columns: int, lh: int) -> None:
        if self._highlight is None or not text:
            return
        metrics = self.fontMetrics()
        current_row = self._current[0] if self._current else None
        first = True
        for match in self._highlight.finditer(text):
            a, b = match.span()
            if a == b:
                continue
            colour = CURRENT if row == current_row and first else HIGHLIGHT
            first = False
            while a < b:
                k = a // columns if self._wrap else 0
                base = k * columns if self._wrap else 0
                piece_end = min(b, base + columns) if self._wrap else b
                x = x0 + metrics.horizontalAdvance(text[base:a])
                width = metrics.horizontalAdvance(text[a:piece_end])
                painter.fillRect(QRect(x, y + k * lh, width, lh), colour)
                a = piece_end

    # --- selection and keys --------------------------------------------------------------

    def _selection(self) -> tuple[int, int] | None:
        if self._anchor is None or self._caret is None:
            return None
        return min(self._anchor, self._caret), max(self._anchor, self._caret)

    def selection(self) -> tuple[int, int] | None:
        """First and last selected row, or None."""
        return self._selection()

    def select_rows(self, first: int, last: int) -> None:
        self._anchor, self._caret = first, last
        self.viewport().update()

    def selected_text(self) -> tuple[str, bool]:
        """The selected rows as plain text (ANSI stripped), and whether it was cut short."""
        selection = self._selection()
        if selection is None or self._index is None:
            return "", False
        parts: list[str] = []
        size = 0
        for row in range(selection[0], selection[1] + 1):
            text = render_row(self._index.row_bytes(row), ansi=False).text
            if row > selection[0] and not self._index.row(row).continuation:
                parts.append("\n")
            parts.append(text)
            size += len(text) + 1
            if size > COPY_LIMIT:
                return "".join(parts), True
        return "".join(parts), False

    def copy(self) -> None:
        text, cut = self.selected_text()
        if not text and self._selection() is None:
            return
        QGuiApplication.clipboard().setText(text)
        selection = self._selection() or (0, -1)
        self.copied.emit(selection[1] - selection[0] + 1, cut)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return super().mousePressEvent(event)
        row = self.row_at(int(event.position().y()))
        if row is None:
            return None
        if event.modifiers() & Qt.KeyboardModifier.ShiftModifier and self._anchor is not None:
            self._caret = row
        else:
            self._anchor = self._caret = row
        self.viewport().update()
        return None

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton and self._anchor is not None:
            y = int(event.position().y())
            if y < 0:
                self.verticalScrollBar().setValue(self.top_row() - 1)
            elif y > self.viewport().height():
                self.verticalScrollBar().setValue(self.top_row() + 1)
            row = self.row_at(max(0, min(y, self.viewport().height() - 1)))
            if row is not None:
                self._caret = row
                self.viewport().update()

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() // 40
        if steps:
            self.verticalScrollBar().setValue(self.top_row() - steps)
        else:
            super().wheelEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.matches(QKeySequence.StandardKey.Copy):
            self.copy()
            return
        bar = self.verticalScrollBar()
        key = event.key()
        page = self.visible_rows()
        moves: dict[int, int] = {
            Qt.Key.Key_Up: -1, Qt.Key.Key_Down: 1,
            Qt.Key.Key_PageUp: -page, Qt.Key.Key_PageDown: page,
        }
        if key in moves:
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                caret = self._caret if self._caret is not None else self.top_row()
                if self._anchor is None:
                    self._anchor = caret
                self._caret = max(0, min(self._rows - 1, caret + moves[key]))
                self.scroll_to_row(self._caret)
            else:
                bar.setValue(bar.value() + moves[key])
        elif key == Qt.Key.Key_Home:
            bar.setValue(0)
        elif key == Qt.Key.Key_End:
            self.set_follow(True)
        else:
            super().keyPressEvent(event)
            return
        self.viewport().update()
