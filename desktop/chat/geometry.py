"""Where everything of a chat row is, in the view's coordinates: a message's pieces (and a code
block's header, Copy button and scroll bar), a tool card's header, body and Open button.

Painting, clicks, selection, scrolling and find all ask here, so they always agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF

from desktop.chat.documents import CODE_BAR, CODE_GAP, CODE_HEADER, CodeDocument, SafeDocument
from desktop.chat.model import MessageItem, ToolCardItem

MARGIN = 8.0
PAD = 8.0
HEADER = 18.0
CARD_HEIGHT = 30.0
BUTTON_HEIGHT = 24.0
COPY_WIDTH = 58.0
READABLE_WIDTH = 800.0
"""The widest a message's text gets (about 100 characters): in a wide window the rows are
a column of this width in the middle."""


def row_box(rect: QRectF) -> QRectF:
    """The rounded box of a row inside its rect: centred, at most READABLE_WIDTH of text."""
    box = rect.adjusted(MARGIN, MARGIN / 2, -MARGIN, -MARGIN / 2)
    spare = box.width() - (READABLE_WIDTH + 2 * PAD)
    left = float(int(spare / 2))  # on a whole pixel, so that its outline is crisp
    return box.adjusted(left, 0, left - spare, 0) if spare > 0 else box


def content_width(view_width: float) -> float:
    return max(60.0, min(READABLE_WIDTH, view_width - 2 * (MARGIN + PAD)))


@dataclass(frozen=True)
class PieceBox:
    """One piece of a message: `origin` is where its document's (0, 0) is drawn (a code
    block's already shifted by its horizontal scroll), `clip` what of it shows."""

    index: int
    doc: SafeDocument
    origin: QPointF
    clip: QRectF
    frame: QRectF
    """A code block's whole box (header, code, bar); the clip for prose."""
    copy: QRectF | None = None
    bar: QRectF | None = None

    def local(self, pos: QPointF) -> QPointF:
        """A view point in the document's coordinates."""
        return pos - self.origin


def message_pieces(item: MessageItem, rect: QRectF) -> list[PieceBox]:
    box = row_box(rect)
    x = box.left() + PAD
    width = box.width() - 2 * PAD
    y = box.top() + HEADER + PAD / 2
    out: list[PieceBox] = []
    for index, doc in enumerate(item.documents()):
        extent = doc.extent(width)
        if isinstance(doc, CodeDocument):
            frame = QRectF(x, y, width, extent - CODE_GAP)
            code_top = y + CODE_HEADER
            height = doc.size().height()
            clip = QRectF(x, code_top, width, height)
            copy = QRectF(x + width - COPY_WIDTH - 4, y + 2, COPY_WIDTH, CODE_HEADER - 4)
            bar = (QRectF(x, code_top + height, width, CODE_BAR) if doc.overflows(width)
                   else None)
            out.append(PieceBox(index, doc, QPointF(x - doc.scroll_x, code_top), clip, frame,
                                copy, bar))
        else:
            clip = QRectF(x, y, width, extent)
            out.append(PieceBox(index, doc, QPointF(x, y), clip, clip))
        y += extent
    return out


def scroll_thumb(piece: PieceBox) -> QRectF:
    """The thumb of a code block's scroll bar (as long as the share of the code shown)."""
    doc = piece.doc
    assert isinstance(doc, CodeDocument) and piece.bar is not None
    bar = piece.bar
    width = max(24.0, bar.width() * piece.clip.width() / max(doc.size().width(), 1.0))
    share = doc.scroll_x / max(doc.max_scroll(piece.clip.width()), 1.0)
    return QRectF(bar.left() + (bar.width() - width) * share, bar.top() + 1, width,
                  bar.height() - 2)


def scroll_for(piece: PieceBox, x: float) -> float:
    """The scroll that centres the thumb under `x` (a click or drag on the bar)."""
    doc = piece.doc
    assert isinstance(doc, CodeDocument) and piece.bar is not None
    thumb = scroll_thumb(piece).width()
    travel = max(piece.bar.width() - thumb, 1.0)
    share = min(1.0, max(0.0, (x - piece.bar.left() - thumb / 2) / travel))
    return share * doc.max_scroll(piece.clip.width())


def piece_at(pieces: list[PieceBox], pos: QPointF) -> PieceBox | None:
    for piece in pieces:
        if piece.frame.top() <= pos.y() < piece.frame.bottom() + CODE_GAP:
            return piece
    return None


def card_height(card: ToolCardItem, width: float) -> float:
    height = CARD_HEIGHT
    if card.expanded:
        height += card.body_document(width).extent(width) + PAD
        if card.output_path:
            height += BUTTON_HEIGHT + PAD / 2
    return height


@dataclass(frozen=True)
class CardBox:
    header: QRectF
    body: QRectF | None = None
    open_output: QRectF | None = None


def card_box(card: ToolCardItem, rect: QRectF) -> CardBox:
    box = row_box(rect)
    header = QRectF(box.left(), box.top(), box.width(), CARD_HEIGHT - MARGIN / 2)
    if not card.expanded or card.body is None:
        return CardBox(header)
    body_height = card.body.size().height()
    body = QRectF(box.left() + PAD, header.bottom(), box.width() - 2 * PAD, body_height)
    button = None
    if card.output_path:
        button = QRectF(body.left(), body.bottom() + PAD / 2, 150, BUTTON_HEIGHT)
    return CardBox(header, body, button)
