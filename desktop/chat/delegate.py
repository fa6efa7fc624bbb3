"""Paints a chat row: a message (header, prose, code blocks with their header, Copy and scroll
bar, the selection, the streaming cursor) or a tool card (folded or expanded)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QColor,
    QPainter,
    QPalette,
    QPixmap,
    QPixmapCache,
    QTextCharFormat,
)
from PySide6.QtWidgets import QAbstractItemView, QStyledItemDelegate

from desktop.chat.documents import CodeDocument, SafeDocument
from desktop.chat.geometry import (
    HEADER,
    MARGIN,
    PAD,
    PieceBox,
    card_box,
    card_height,
    content_width,
    message_pieces,
    row_box,
    scroll_thumb,
)
from desktop.chat.model import ITEM_ROLE, ChatItem, ChatModel, MessageItem, Role, ToolCardItem
from desktop.chat.selection import TextSelection, selection_cursor
from desktop.theme import border_colour
from desktop.words import STATUS_WORDS
from kernel.visible import one_line

if TYPE_CHECKING:
    from PySide6.QtWidgets import QStyleOptionViewItem

    from kernel.events import CallStatus

STATUS_COLOURS: Mapping[CallStatus, str] = {
    "ok": "#2da44e",
    "error": "#cf222e",
    "denied": "#bf8700",
    "stopped": "#6e7781",
    "timeout": "#cf222e",
    "awaiting_approval": "#bf8700",
    "running": "#0969da",
    "queued": "#6e7781",
}
CARET_WIDTH = 7.0


class RowState(Protocol):
    """What the view tells the delegate about the user's interaction with rows."""

    def selection_in(self, row: int) -> TextSelection | None: ...

    def copied(self, doc: SafeDocument) -> bool: ...

    def approval_height(self, item: ToolCardItem, width: float) -> float:
        """The room of a call's pending approval card under its line."""
        ...


_SHADES: dict[tuple[int, float], QColor] = {}


def crisp(box: QRectF) -> QRectF:
    """`box` for a 1 px outline on whole pixels (on the pixel edges it is smeared over two
    pixels at half strength: a dim border)."""
    return box.adjusted(0.5, 0.5, -0.5, -0.5)


def shade(palette: QPalette, amount: float) -> QColor:
    """The base colour moved `amount` towards the text colour (code and header shades that
    work in light and dark mode); computed once per palette."""
    key = (palette.cacheKey(), amount)
    colour = _SHADES.get(key)
    if colour is None:
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        colour = _SHADES[key] = QColor.fromRgbF(
            base.redF() + (text.redF() - base.redF()) * amount,
            base.greenF() + (text.greenF() - base.greenF()) * amount,
            base.blueF() + (text.blueF() - base.blueF()) * amount)
    return colour


def label(item: MessageItem) -> str:
    return {Role.USER: "You", Role.ASSISTANT: "Assistant"}.get(item.role, item.role.title())


def _item(index: QModelIndex | QPersistentModelIndex) -> ChatItem:
    model = index.model()
    if isinstance(model, ChatModel):
        return model.item(index.row())
    item: ChatItem = index.data(ITEM_ROLE)
    return item


def draw_document(painter: QPainter, doc: SafeDocument, origin: QPointF, palette: QPalette,
                  clip: QRectF | None = None, selection: tuple[int, int] | None = None) -> None:
    context = QAbstractTextDocumentLayout.PaintContext()
    context.palette = palette
    if clip is not None:
        context.clip = clip.translated(-origin)
    if selection is not None:
        chosen = QAbstractTextDocumentLayout.Selection()
        chosen.cursor = selection_cursor(doc, selection)
        fmt = QTextCharFormat()
        fmt.setBackground(palette.color(QPalette.ColorRole.Highlight))
        fmt.setForeground(palette.color(QPalette.ColorRole.HighlightedText))
        chosen.format = fmt
        context.selections = [chosen]
    painter.save()
    if clip is not None:
        painter.setClipRect(clip, Qt.ClipOperation.IntersectClip)
    painter.translate(origin)
    doc.documentLayout().draw(painter, context)
    painter.restore()


def _document_pixmap(doc: SafeDocument, palette: QPalette, ratio: float) -> QPixmap:
    """A finished piece of prose, drawn once and then blitted: drawing text layouts is the
    costliest part of a repaint, and these no longer change (LRU in QPixmapCache)."""
    size = doc.size()
    key = f"reins-doc-{doc.serial}-{size.width():.0f}x{size.height():.0f}-" \
          f"{palette.cacheKey()}-{ratio}"
    pixmap = QPixmap()
    if not QPixmapCache.find(key, pixmap) or pixmap.isNull():
        pixmap = QPixmap((size * ratio).toSize())
        pixmap.setDevicePixelRatio(ratio)
        pixmap.fill(Qt.GlobalColor.transparent)
        canvas = QPainter(pixmap)
        draw_document(canvas, doc, QPointF(0, 0), palette)
        canvas.end()
        QPixmapCache.insert(key, pixmap)
    return pixmap


class ChatDelegate(QStyledItemDelegate):
    """Paints a message (header + its pieces) or a tool card."""

    def __init__(self, view: QAbstractItemView, state: RowState) -> None:
        super().__init__(view)
        self._view = view
        self._state = state

    def sizeHint(self, option: QStyleOptionViewItem,
                 index: QModelIndex | QPersistentModelIndex) -> QSize:
        item = _item(index)
        width = self._view.viewport().width()
        if isinstance(item, ToolCardItem):
            column = content_width(width)
            return QSize(width, int(card_height(item, column) + MARGIN
                                    + self._state.approval_height(item, column + 2 * PAD)))
        item.layout(content_width(width))
        return QSize(width, int(item.height() + HEADER + 2 * PAD + MARGIN))

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        item = _item(index)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(option.rect)
        box = row_box(rect)
        palette = option.palette
        if isinstance(item, ToolCardItem):
            self._paint_card(painter, rect, item, palette)
        else:
            self._paint_message(painter, rect, item, palette, index.row())
        from PySide6.QtWidgets import QStyle  # made when a row is first painted: its Python
        # enums cost ~10 ms, which the window's first paint (an empty chat) need not wait for

        if option.state & QStyle.StateFlag.State_HasFocus:
            painter.setPen(palette.color(QPalette.ColorRole.Highlight))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(box, 6, 6)
        painter.restore()

    # -- messages ----------------------------------------------------------------------------
    def _paint_message(self, painter: QPainter, rect: QRectF, item: MessageItem,
                       palette: QPalette, row: int) -> None:
        box = row_box(rect)
        background = {
            Role.USER: palette.color(QPalette.ColorRole.AlternateBase),
            Role.ERROR: QColor(207, 34, 46, 40),
            Role.NOTICE: shade(palette, 0.04),
        }.get(item.role, palette.color(QPalette.ColorRole.Base))
        painter.setPen(border_colour(palette, background, palette.color(QPalette.ColorRole.Base)))
        painter.setBrush(background)
        painter.drawRoundedRect(crisp(box), 6, 6)
        painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
        header = QRectF(box.left() + PAD, box.top() + 2, box.width() - 2 * PAD, HEADER)
        font = painter.font()
        font.setBold(True)
        painter.setFont(font)
        painter.drawText(header, Qt.AlignmentFlag.AlignVCenter, label(item))
        font.setBold(False)
        painter.setFont(font)
        selection = self._state.selection_in(row)
        ratio = painter.device().devicePixelRatioF()
        pieces = message_pieces(item, rect)
        for piece in pieces:
            span = selection.span(piece.index, piece.doc) if selection is not None else None
            if isinstance(piece.doc, CodeDocument):
                self._paint_code(painter, piece, palette, span)
            elif span is not None or piece.index >= len(item.segments):
                draw_document(painter, piece.doc, piece.origin, palette, selection=span)
            else:
                painter.drawPixmap(piece.origin, _document_pixmap(piece.doc, palette, ratio))
        if item.streaming:
            self._paint_caret(painter, pieces, box, palette)

    def _paint_code(self, painter: QPainter, piece: PieceBox, palette: QPalette,
                    span: tuple[int, int] | None) -> None:
        doc = piece.doc
        assert isinstance(doc, CodeDocument)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(shade(palette, 0.06))
        painter.drawRoundedRect(piece.frame, 5, 5)
        strip = QRectF(piece.frame.left(), piece.frame.top(), piece.frame.width(),
                       piece.clip.top() - piece.frame.top())
        painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
        painter.drawText(strip.adjusted(8, 0, -70, 0), Qt.AlignmentFlag.AlignVCenter,
                         doc.language or "code")
        if piece.copy is not None:
            painter.setPen(shade(palette, 0.35))
            painter.setBrush(shade(palette, 0.02))
            painter.drawRoundedRect(piece.copy, 4, 4)
            painter.setPen(palette.color(QPalette.ColorRole.Text))
            painter.drawText(piece.copy, Qt.AlignmentFlag.AlignCenter,
                             "Copied" if self._state.copied(doc) else "Copy")
        draw_document(painter, doc, piece.origin, palette, clip=piece.clip, selection=span)
        if piece.bar is not None:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(shade(palette, 0.35))
            painter.drawRoundedRect(scroll_thumb(piece), 3, 3)

    def _paint_caret(self, painter: QPainter, pieces: list[PieceBox], box: QRectF,
                     palette: QPalette) -> None:
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(palette.color(QPalette.ColorRole.Text))
        painter.drawRect(caret_rect(pieces, box))

    # -- tool cards ----------------------------------------------------------------------------
    def _paint_card(self, painter: QPainter, rect: QRectF, item: ToolCardItem,
                    palette: QPalette) -> None:
        box = row_box(rect)
        geometry = card_box(item, rect)
        painter.setPen(border_colour(palette, palette.color(QPalette.ColorRole.Button),
                                     palette.color(QPalette.ColorRole.Base)))
        painter.setBrush(palette.color(QPalette.ColorRole.Button))
        painter.drawRoundedRect(crisp(box), 6, 6)
        header = geometry.header
        colour = QColor(STATUS_COLOURS[item.status])
        painter.setBrush(colour)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.drawEllipse(QPointF(header.left() + 12, header.center().y()), 4, 4)
        painter.setPen(palette.color(QPalette.ColorRole.ButtonText))
        text_box = header.adjusted(24, 0, -PAD, 0)
        words = STATUS_WORDS[item.status]
        status = one_line(item.detail if item.status == "ok" and item.detail
                          else words + (f" · {item.detail}" if item.detail else ""))
        arrow = "▾" if item.expanded else "▸"
        text = one_line(f"{item.name}  {item.summary}")
        metrics = painter.fontMetrics()
        status_width = min(metrics.horizontalAdvance(status) + 8, int(text_box.width() / 2))
        painter.drawText(text_box.adjusted(0, 0, -status_width, 0),
                         Qt.AlignmentFlag.AlignVCenter,
                         metrics.elidedText(f"{arrow} {text}", Qt.TextElideMode.ElideRight,
                                            int(text_box.width() - status_width)))
        painter.setPen(colour)
        painter.drawText(text_box, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                         metrics.elidedText(status, Qt.TextElideMode.ElideRight, status_width))
        if geometry.body is not None and item.body is not None:
            draw_document(painter, item.body, geometry.body.topLeft(), palette,
                          clip=geometry.body)
        if geometry.open_output is not None:
            painter.setPen(shade(palette, 0.35))
            painter.setBrush(palette.color(QPalette.ColorRole.Base))
            painter.drawRoundedRect(geometry.open_output, 4, 4)
            painter.setPen(palette.color(QPalette.ColorRole.Text))
            painter.drawText(geometry.open_output, Qt.AlignmentFlag.AlignCenter,
                             "Open full output")


def caret_rect(pieces: list[PieceBox], box: QRectF) -> QRectF:
    """Where the streaming cursor stands: just after the last character shown."""
    if not pieces:
        return QRectF(box.left() + PAD, box.top() + HEADER + PAD / 2 + 2, CARET_WIDTH, 14)
    piece = pieces[-1]
    block = piece.doc.lastBlock()
    layout = block.layout()
    rect = piece.doc.documentLayout().blockBoundingRect(block)
    if layout is None or layout.lineCount() == 0:
        return QRectF(piece.origin + rect.topLeft() + QPointF(2, 2), QSize(7, 14).toSizeF())
    line = layout.lineAt(layout.lineCount() - 1)
    x = rect.left() + line.x() + line.naturalTextWidth() + 1
    top = rect.top() + line.y() + 2
    return QRectF(piece.origin.x() + x, piece.origin.y() + top, CARET_WIDTH,
                  max(4.0, line.height() - 4))
