"""The mode picker: a combo box whose list says what each mode allows (the mode's name,
then a line of `desktop.words.MODE_ALLOWS`), so a person choosing knows what they choose.
Its text stays the mode's word, which the controller sends."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QComboBox, QStyledItemDelegate, QWidget

from desktop.words import MODE_ALLOWS
from kernel.modes import MODES

if TYPE_CHECKING:
    from PySide6.QtWidgets import QStyleOptionViewItem

LIST_WIDTH = 420
ROW_PAD = 6


class _ModeRow(QStyledItemDelegate):
    """A mode in the list: its name, and under it what it allows (muted)."""

    def sizeHint(self, option: QStyleOptionViewItem,
                 index: QModelIndex | QPersistentModelIndex) -> QSize:
        line = option.fontMetrics.height()
        return QSize(LIST_WIDTH, 2 * line + 2 * ROW_PAD + 2)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        from PySide6.QtWidgets import QStyle  # (its enums only once the list is opened)

        painter.save()
        palette = option.palette
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        if selected:
            painter.fillRect(option.rect, palette.color(QPalette.ColorRole.Highlight))
        text_role = (QPalette.ColorRole.HighlightedText if selected
                     else QPalette.ColorRole.Text)
        line = option.fontMetrics.height()
        box = QRect(option.rect.adjusted(10, ROW_PAD, -10, -ROW_PAD))
        font = option.font
        font.setBold(True)
        painter.setFont(font)
        painter.setPen(palette.color(text_role))
        name = str(index.data(Qt.ItemDataRole.DisplayRole))
        painter.drawText(box.adjusted(0, 0, 0, -line), Qt.AlignmentFlag.AlignLeft, name)
        font.setBold(False)
        painter.setFont(font)
        if not selected:
            painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
        painter.drawText(box.adjusted(0, line + 2, 0, 0), Qt.AlignmentFlag.AlignLeft,
                         MODE_ALLOWS.get(name, ""))
        painter.restore()


def mode_picker(parent: QWidget) -> QComboBox:
    """The modes, each with what it allows in the list and in its tooltip."""
    combo = QComboBox(parent)
    combo.setAccessibleName("Mode of this session")
    combo.addItems(list(MODES))
    for row, mode in enumerate(MODES):
        combo.setItemData(row, MODE_ALLOWS[mode], Qt.ItemDataRole.ToolTipRole)
    combo.setItemDelegate(_ModeRow(combo))
    combo.view().setMinimumWidth(LIST_WIDTH)
    return combo
