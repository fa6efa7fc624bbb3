"""Bar charts of eval metrics, drawn with QPainter (no web view).

`MetricChart` shows one bar per run for each metric: one run, or two side by side (a
comparison). The geometry is a pure function (`bar_layout`), so it is tested without
looking at pixels; the widget only paints what it computes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QWidget

SERIES_COLORS = ("#4C78A8", "#F58518")
LABEL_WIDTH = 190
ROW_HEIGHT = 34
VALUE_WIDTH = 90


@dataclass(frozen=True)
class MetricRow:
    label: str
    values: tuple[float | None, ...]
    """One value per run (None: not measured)."""
    scale: float
    """The value a full-width bar stands for (1.0 for rates)."""
    text: tuple[str, ...]
    """Each value as shown beside its bar."""


@dataclass(frozen=True)
class Bar:
    rect: QRectF
    series: int
    text: str


def bar_layout(rows: Sequence[MetricRow], width: float) -> list[Bar]:
    """Where each bar goes in a chart `width` pixels wide: one row per metric, one bar per
    run stacked in the row; a bar's length is its value over the row's scale (clamped to
    the available width, at least 1 px for a measured zero so it stays visible)."""
    track = max(10.0, width - LABEL_WIDTH - VALUE_WIDTH)
    bars = []
    for i, row in enumerate(rows):
        count = max(1, len(row.values))
        height = (ROW_HEIGHT - 8) / count
        for s, value in enumerate(row.values):
            if value is None:
                continue
            share = 0.0 if row.scale <= 0 else min(1.0, max(0.0, value / row.scale))
            top = i * ROW_HEIGHT + 4 + s * height
            bars.append(Bar(QRectF(LABEL_WIDTH, top, max(1.0, share * track), height - 1), s,
                            row.text[s] if s < len(row.text) else ""))
    return bars


class MetricChart(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows: list[MetricRow] = []
        self.setMinimumHeight(ROW_HEIGHT)

    def set_rows(self, rows: Sequence[MetricRow]) -> None:
        self._rows = list(rows)
        self.setMinimumHeight(max(ROW_HEIGHT, ROW_HEIGHT * len(self._rows)))
        self.updateGeometry()
        self.update()

    @property
    def rows(self) -> list[MetricRow]:
        return list(self._rows)

    def sizeHint(self) -> QSize:
        return QSize(LABEL_WIDTH + 400 + VALUE_WIDTH, ROW_HEIGHT * max(1, len(self._rows)))

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        text_color = self.palette().color(QPalette.ColorRole.WindowText)
        painter.setPen(text_color)
        for i, row in enumerate(self._rows):
            painter.drawText(QRectF(4, i * ROW_HEIGHT, LABEL_WIDTH - 8, ROW_HEIGHT),
                             Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                             row.label)
        for bar in bar_layout(self._rows, self.width()):
            painter.fillRect(bar.rect, QColor(SERIES_COLORS[bar.series % len(SERIES_COLORS)]))
            painter.setPen(text_color)
            painter.drawText(QRectF(bar.rect.right() + 6, bar.rect.top() - 2, VALUE_WIDTH,
                                    bar.rect.height() + 4),
                             Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, bar.text)
        painter.end()
