"""Paints a chat row: a message (the user's in a soft bubble on the right, the answer's prose
unboxed on the page; code blocks with a header strip holding the language and a quiet Copy;
the selection, the streaming cursor) or a call's folded line (status icon, tool, what it is
about, a chevron; its details unfolded under it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QColor,
    QFont,
    QPainter,
    QPalette,
    QPixmap,
    QPixmapCache,
    QTextCharFormat,
)
from PySide6.QtWidgets import QAbstractItemView, QStyledItemDelegate

from desktop.call_status import STATUS_COLOURS, STATUS_ICONS
from desktop.chat.documents import CodeDocument, SafeDocument
from desktop.chat.geometry import (
    BODY_INDENT,
    BUBBLE_RADIUS,
    COPY_WIDTH,
    MARGIN,
    STEP_INDENT,
    PieceBox,
    card_box,
    card_height,
    content_width,
    message_frame,
    message_height,
    message_pieces,
    picture_boxes,
    scroll_thumb,
    turn_end,
)
from desktop.chat.model import ITEM_ROLE, ChatItem, ChatModel, MessageItem, Role, ToolCardItem
from desktop.chat.selection import TextSelection, selection_cursor
from desktop.chat.thumbs import draw_picture, shared_thumbnails
from desktop.icons import icon_pixmap
from desktop.theme import border_colour
from desktop.words import STATUS_WORDS
from kernel.visible import one_line

if TYPE_CHECKING:
    from PySide6.QtWidgets import QStyleOptionViewItem


CARET_WIDTH = 7.0
COPY_ROOM = COPY_WIDTH + 8


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


ICON = 16


def bubble_colour(palette: QPalette) -> QColor:
    """The user's bubble: the page a little towards the text (soft in light and dark)."""
    return shade(palette, 0.075 if is_dark_palette(palette) else 0.06)


def is_dark_palette(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Base).lightness() < 128


def muted(palette: QPalette) -> QColor:
    """Secondary text (a call's line, a notice): between the text and the page."""
    return shade(palette, 0.62)


class ChatDelegate(QStyledItemDelegate):
    """Paints a message (a bubble, or prose on the page) or a call's folded line."""

    def __init__(self, view: QAbstractItemView, state: RowState) -> None:
        super().__init__(view)
        self._view = view
        self._state = state

    def sizeHint(self, option: QStyleOptionViewItem,
                 index: QModelIndex | QPersistentModelIndex) -> QSize:
        item = _item(index)
        width = self._view.viewport().width()
        column = content_width(width)
        if isinstance(item, ToolCardItem):
            return QSize(width, int(card_height(item, column) + MARGIN + turn_end(item)
                                    + self._state.approval_height(item, column)))
        item.layout(column)
        return QSize(width, int(message_height(item)))

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        item = _item(index)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(option.rect)
        palette = option.palette
        from PySide6.QtWidgets import QStyle  # made when a row is first painted: its Python
        # enums cost ~10 ms, which the window's first paint (an empty chat) need not wait for

        hovered = bool(option.state & QStyle.StateFlag.State_MouseOver)
        if isinstance(item, ToolCardItem):
            self._paint_card(painter, rect, item, palette, hovered)
            focus = card_box(item, rect).header
        else:
            self._paint_message(painter, rect, item, palette, index.row())
            focus = message_frame(item, rect)
        if option.state & QStyle.StateFlag.State_HasFocus:
            painter.setPen(palette.color(QPalette.ColorRole.Highlight))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(crisp(focus.adjusted(-4, 0, 4, 0)), 8, 8)
        painter.restore()

    # -- messages ----------------------------------------------------------------------------
    def _paint_message(self, painter: QPainter, rect: QRectF, item: MessageItem,
                       palette: QPalette, row: int) -> None:
        frame = message_frame(item, rect)
        if item.role is Role.USER:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(bubble_colour(palette))
            painter.drawRoundedRect(frame, BUBBLE_RADIUS, BUBBLE_RADIUS)
            if item.pictures:
                thumbs = shared_thumbnails()
                for key, box in zip(item.pictures, picture_boxes(item, rect), strict=True):
                    draw_picture(painter, box, thumbs.get(key), palette)
        elif item.role is Role.ERROR:
            fill = QColor(207, 34, 46, 34)
            painter.setPen(border_colour(palette, fill))
            painter.setBrush(fill)
            painter.drawRoundedRect(crisp(frame), 10, 10)
        if item.role is Role.NOTICE:
            palette = QPalette(palette)
            palette.setColor(QPalette.ColorRole.Text, muted(palette))
        selection = self._state.selection_in(row)
        ratio = painter.device().devicePixelRatioF()
        pieces = message_pieces(item, rect)
        for piece in pieces:
            span = selection.span(piece.index, piece.doc) if selection is not None else None
            if isinstance(piece.doc, CodeDocument):
                self._paint_code(painter, piece, palette, span, ratio)
            elif span is not None or piece.index >= len(item.segments):
                draw_document(painter, piece.doc, piece.origin, palette, selection=span)
            else:
                painter.drawPixmap(piece.origin, _document_pixmap(piece.doc, palette, ratio))
        if item.streaming:
            self._paint_caret(painter, pieces, frame, palette)

    def _paint_code(self, painter: QPainter, piece: PieceBox, palette: QPalette,
                    span: tuple[int, int] | None, ratio: float) -> None:
        """A code block: a shaded box with a header strip (its language, a quiet Copy)."""
        doc = piece.doc
        assert isinstance(doc, CodeDocument)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(shade(palette, 0.045))
        painter.drawRoundedRect(piece.frame, 8, 8)
        strip = QRectF(piece.frame.left(), piece.frame.top(), piece.frame.width(),
                       piece.clip.top() - piece.frame.top())
        painter.save()
        painter.setClipRect(strip)
        painter.setBrush(shade(palette, 0.09))
        painter.drawRoundedRect(piece.frame, 8, 8)
        painter.restore()
        quiet = muted(palette)
        painter.setPen(quiet)
        font = painter.font()
        small = QFont(font)
        small.setPixelSize(max(10, font.pixelSize() - 2) if font.pixelSize() > 0 else 12)
        painter.setFont(small)
        painter.drawText(strip.adjusted(12, 0, -COPY_ROOM, 0), Qt.AlignmentFlag.AlignVCenter,
                         doc.language or "code")
        if piece.copy is not None:
            copied = self._state.copied(doc)
            icon = icon_pixmap("check" if copied else "copy", quiet, 14, ratio)
            painter.drawPixmap(QPointF(piece.copy.left() + 6,
                                       piece.copy.center().y() - 7), icon)
            painter.drawText(piece.copy.adjusted(24, 0, 0, 0), Qt.AlignmentFlag.AlignVCenter,
                             "Copied" if copied else "Copy")
        painter.setFont(font)
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

    # -- a call's line -------------------------------------------------------------------------
    def _paint_card(self, painter: QPainter, rect: QRectF, item: ToolCardItem,
                    palette: QPalette, hovered: bool) -> None:
        """One line: the status icon, the tool and what it is about, a chevron; how it went
        on the right. Unfolded, its arguments and result under it, behind a thin rule."""
        geometry = card_box(item, rect)
        header = geometry.header
        if item.depth:
            painter.setPen(shade(palette, 0.18))
            x = header.left() - STEP_INDENT + ICON / 2
            painter.drawLine(QPointF(x, rect.top()), QPointF(x, header.center().y()))
            painter.drawLine(QPointF(x, header.center().y()),
                             QPointF(header.left() - 4, header.center().y()))
        if hovered or item.expanded:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(shade(palette, 0.04))
            painter.drawRoundedRect(header.adjusted(-6, 1, 6, -1), 8, 8)
        ratio = painter.device().devicePixelRatioF()
        colour = QColor(STATUS_COLOURS[item.status])
        middle = header.center().y()
        painter.drawPixmap(QPointF(header.left(), middle - ICON / 2),
                           icon_pixmap(STATUS_ICONS[item.status], colour, ICON, ratio))
        quiet = muted(palette)
        words = STATUS_WORDS[item.status]
        status = one_line(item.detail if item.status == "ok" and item.detail
                          else words + (f" · {item.detail}" if item.detail else ""))
        if item.changes:
            status = f"{one_line(item.changes)}{' · undone' if item.undo == 'undone' else ''}" \
                     f" · {status}"
        metrics = painter.fontMetrics()
        right = geometry.undo.width() + 6 if geometry.undo is not None else 0.0
        text_box = header.adjusted(BODY_INDENT, 0, -right, 0)
        status_width = min(metrics.horizontalAdvance(status) + 8, int(text_box.width() / 2))
        room = int(text_box.width() - status_width - 24)
        name = one_line(item.name)
        summary = metrics.elidedText(one_line(item.summary), Qt.TextElideMode.ElideRight,
                                     max(0, room - metrics.horizontalAdvance(name + "  ")))
        painter.setPen(palette.color(QPalette.ColorRole.Text))
        painter.drawText(text_box, Qt.AlignmentFlag.AlignVCenter, name)
        used = min(metrics.horizontalAdvance(name + "  "), room)
        painter.setPen(quiet)
        painter.drawText(text_box.adjusted(used, 0, 0, 0), Qt.AlignmentFlag.AlignVCenter,
                         summary)
        used += metrics.horizontalAdvance(summary) + 6
        painter.drawPixmap(QPointF(text_box.left() + used, middle - 7),
                           icon_pixmap("chevron-down" if item.expanded else "chevron-right",
                                       quiet, 14, ratio))
        painter.setPen(colour if item.status in ("error", "timeout", "awaiting_approval")
                       else quiet)
        painter.drawText(text_box, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                         metrics.elidedText(status, Qt.TextElideMode.ElideRight, status_width))
        if geometry.undo is not None:
            painter.setPen(shade(palette, 0.25))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(crisp(geometry.undo), 6, 6)
            painter.setPen(palette.color(QPalette.ColorRole.Text))
            painter.drawPixmap(QPointF(geometry.undo.left() + 6, middle - 7),
                               icon_pixmap("retry", quiet, 14, ratio))
            painter.drawText(geometry.undo.adjusted(22, 0, 0, 0), Qt.AlignmentFlag.AlignVCenter,
                             "Undo")
        if geometry.body is not None and item.body is not None:
            painter.setPen(shade(palette, 0.18))
            x = header.left() + ICON / 2
            painter.drawLine(QPointF(x, header.bottom() + 2),
                             QPointF(x, geometry.body.bottom()))
            draw_document(painter, item.body, geometry.body.topLeft(), palette,
                          clip=geometry.body)
        if geometry.open_output is not None:
            painter.setPen(shade(palette, 0.3))
            painter.setBrush(palette.color(QPalette.ColorRole.Base))
            painter.drawRoundedRect(crisp(geometry.open_output), 6, 6)
            painter.setPen(palette.color(QPalette.ColorRole.Text))
            painter.drawText(geometry.open_output, Qt.AlignmentFlag.AlignCenter,
                             "Open full output")


def caret_rect(pieces: list[PieceBox], box: QRectF) -> QRectF:
    """Where the streaming cursor stands: just after the last character shown."""
    if not pieces:
        return QRectF(box.left() + 2, box.top() + 4, CARET_WIDTH, 14)
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
