"""Where everything of a chat row is, in the view's coordinates: a message's pieces (and a code
block's header, Copy button and scroll bar), a user message's pictures, a tool card's header,
body and Open button.

Painting, clicks, selection, scrolling and find all ask here, so they always agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF

from desktop.chat.documents import CODE_BAR, CODE_GAP, CODE_HEADER, CodeDocument, SafeDocument
from desktop.chat.model import (
    BUBBLE_PAD,
    BUBBLE_SHARE,
    ChatItem,
    MessageItem,
    Role,
    ToolCardItem,
)
from desktop.chat.thumbs import GAP, THUMB

MARGIN = 6.0
"""A row's own space above and below it: between the rows of one turn."""
SIDE = 24.0
"""The page's margin left and right of the column."""
PAD = 10.0
"""The room above and below the text in a bubble or an error's box."""
BUBBLE_RADIUS = 18.0
ACTIONS = 30.0
"""The strip under a turn's last row for its actions (copy, retry)."""
TURN_GAP = 22.0
"""Under the actions, before the next turn: 24–32 px between turns in all."""
CARD_HEIGHT = 30.0
"""A call's folded line."""
BUTTON_HEIGHT = 24.0
COPY_WIDTH = 64.0
UNDO_WIDTH = 64.0
BODY_INDENT = 26.0
STEP_INDENT = 22.0
"""A step's line (of a composite call, a fallback) is indented this much under the call."""
"""An unfolded call's arguments and result start under its name (after its icon)."""
READABLE_WIDTH = 760.0
"""The widest a message's text gets (about 100 characters): in a wide window the rows are
a column of this width in the middle."""
HEADER = 0.0
"""Messages carry no caption ("You"/"Assistant"): the bubble and the page say who speaks."""


def row_box(rect: QRectF) -> QRectF:
    """The column of a row inside its rect: centred, at most READABLE_WIDTH wide, MARGIN/2
    below the row's top."""
    box = rect.adjusted(SIDE, MARGIN / 2, -SIDE, -MARGIN / 2)
    spare = box.width() - READABLE_WIDTH
    left = float(int(spare / 2))  # on a whole pixel, so that an outline is crisp
    return box.adjusted(left, 0, left - spare, 0) if spare > 0 else box


def content_width(view_width: float) -> float:
    """The column's width in a view this wide."""
    return max(60.0, min(READABLE_WIDTH, view_width - 2 * SIDE))


def turn_end(item: ChatItem) -> float:
    return ACTIONS + TURN_GAP if item.ends_turn else 0.0


def picture_columns(item: MessageItem) -> int:
    """How many of a user message's pictures fit side by side in its bubble."""
    return max(1, int((item.text_width(item.width) + GAP) // (THUMB + GAP)))


def pictures_height(item: MessageItem) -> float:
    """The rows of pictures above a message's text (each with the gap under it)."""
    rows = math.ceil(len(item.pictures) / picture_columns(item))
    return rows * (THUMB + GAP)


def picture_boxes(item: MessageItem, rect: QRectF) -> list[QRectF]:
    """Where each picture of a user message is: rows from the bubble's top left."""
    frame = message_frame(item, rect)
    left, top, columns = frame.left() + BUBBLE_PAD, frame.top() + PAD, picture_columns(item)
    return [QRectF(left + (i % columns) * (THUMB + GAP), top + (i // columns) * (THUMB + GAP),
                   THUMB, THUMB) for i in range(len(item.pictures))]


def message_height(item: MessageItem) -> float:
    """A laid-out message's row height."""
    boxed = 2 * PAD if item.boxed else 0.0
    return item.height() + pictures_height(item) + boxed + MARGIN + turn_end(item)


def message_frame(item: MessageItem, rect: QRectF) -> QRectF:
    """The box a message is drawn in: the user's bubble on the right (as wide as its text
    needs, at most BUBBLE_SHARE of the column), an error's box, or the page's column."""
    box = row_box(rect)
    height = item.height() + pictures_height(item) + (2 * PAD if item.boxed else 0.0)
    if item.role is Role.USER:
        shown = min(len(item.pictures), picture_columns(item))
        ideal = max([doc.idealWidth() for doc in item.documents()]
                    + [shown * (THUMB + GAP) - GAP, 0.0])
        width = min(box.width() * BUBBLE_SHARE, ideal + 2 * BUBBLE_PAD + 2)
        return QRectF(box.right() - width, box.top(), width, height)
    return QRectF(box.left(), box.top(), box.width(), height)


def actions_box(item: ChatItem, rect: QRectF) -> QRectF:
    """Where a turn's last row shows its actions: the strip under it, on the left."""
    box = row_box(rect)
    bottom = rect.bottom() - MARGIN / 2 - TURN_GAP
    return QRectF(box.left(), bottom - ACTIONS + 2, box.width(), ACTIONS - 4)


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
    frame = message_frame(item, rect)
    inset = BUBBLE_PAD if item.boxed else 0.0
    x = frame.left() + inset
    width = item.text_width(row_box(rect).width())
    y = frame.top() + (PAD if item.boxed else 0.0) + pictures_height(item)
    out: list[PieceBox] = []
    for index, doc in enumerate(item.documents()):
        extent = doc.extent(width)
        if isinstance(doc, CodeDocument):
            frame_box = QRectF(x, y, width, extent - CODE_GAP)
            code_top = y + CODE_HEADER
            height = doc.size().height()
            clip = QRectF(x, code_top, width, height)
            copy = QRectF(x + width - COPY_WIDTH - 4, y + 3, COPY_WIDTH, CODE_HEADER - 6)
            bar = (QRectF(x, code_top + height, width, CODE_BAR) if doc.overflows(width)
                   else None)
            out.append(PieceBox(index, doc, QPointF(x - doc.scroll_x, code_top), clip,
                                frame_box, copy, bar))
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
    """A call's line, and its arguments and result when unfolded (not its approval)."""
    height = CARD_HEIGHT
    if card.expanded:
        inner = width - card.depth * STEP_INDENT
        height += card.body_document(inner - BODY_INDENT).extent(inner) + PAD
        if card.output_path:
            height += BUTTON_HEIGHT + PAD / 2
    return height


@dataclass(frozen=True)
class CardBox:
    header: QRectF
    body: QRectF | None = None
    open_output: QRectF | None = None
    undo: QRectF | None = None
    """The line's Undo (a call whose changes can still be undone)."""


def card_box(card: ToolCardItem, rect: QRectF) -> CardBox:
    box = row_box(rect).adjusted(card.depth * STEP_INDENT, 0, 0, 0)
    header = QRectF(box.left(), box.top(), box.width(), CARD_HEIGHT)
    undo = (QRectF(header.right() - UNDO_WIDTH, header.top() + 4, UNDO_WIDTH,
                   CARD_HEIGHT - 8) if card.undo == "undoable" else None)
    if not card.expanded or card.body is None:
        return CardBox(header, undo=undo)
    body_height = card.body.size().height()
    body = QRectF(box.left() + BODY_INDENT, header.bottom(), box.width() - BODY_INDENT,
                  body_height)
    button = None
    if card.output_path:
        button = QRectF(body.left(), body.bottom() + PAD / 2, 150, BUTTON_HEIGHT)
    return CardBox(header, body, button, undo)


def approval_top(card: ToolCardItem, rect: QRectF, width: float) -> float:
    """Where a call's approval card starts: under its line (and its unfolded details)."""
    return row_box(rect).top() + card_height(card, width)
