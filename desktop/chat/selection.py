"""Selecting part of a message with the mouse: from one point of its pieces to another.

A point is (piece index, character position); the selection is the text between the two, in
the order of the message, pieces joined by a newline. It is the text as shown (escaped), so
what is copied is what was seen.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QTextCursor

from desktop.chat.documents import SafeDocument
from desktop.chat.geometry import PieceBox

Point = tuple[int, int]


@dataclass(frozen=True)
class TextSelection:
    row: int
    anchor: Point
    caret: Point

    @property
    def start(self) -> Point:
        return min(self.anchor, self.caret)

    @property
    def end(self) -> Point:
        return max(self.anchor, self.caret)

    @property
    def empty(self) -> bool:
        return self.anchor == self.caret

    def span(self, index: int, doc: SafeDocument) -> tuple[int, int] | None:
        """The selected characters of piece `index`, or None."""
        (first, start), (last, end) = self.start, self.end
        if not first <= index <= last:
            return None
        limit = doc.characterCount() - 1
        begin = min(start, limit) if index == first else 0
        stop = min(end, limit) if index == last else limit
        return (begin, stop) if stop > begin else None


def point_at(pieces: list[PieceBox], pos: QPointF) -> Point:
    """The character nearest to a view point (above the first piece: its start; below the
    last: its end)."""
    if not pieces:
        return (0, 0)
    if pos.y() < pieces[0].frame.top():
        return (0, 0)
    for piece in pieces:
        if pos.y() < piece.frame.bottom():
            local = piece.local(pos)
            if local.y() < 0:
                return (piece.index, 0)
            hit = piece.doc.documentLayout().hitTest(local, Qt.HitTestAccuracy.FuzzyHit)
            return (piece.index, max(0, hit))
    last = pieces[-1]
    return (last.index, last.doc.characterCount() - 1)


def selection_cursor(doc: SafeDocument, span: tuple[int, int]) -> QTextCursor:
    cursor = QTextCursor(doc)
    cursor.setPosition(span[0])
    cursor.setPosition(span[1], QTextCursor.MoveMode.KeepAnchor)
    return cursor


def selected_text(docs: list[SafeDocument], selection: TextSelection) -> str:
    parts = []
    for index, doc in enumerate(docs):
        span = selection.span(index, doc)
        if span is not None:
            parts.append(selection_cursor(doc, span).selection().toPlainText())
    return "\n".join(parts)


def word_at(doc: SafeDocument, position: int) -> tuple[int, int]:
    """The word around a position (a double-click selects it)."""
    cursor = QTextCursor(doc)
    cursor.setPosition(position)
    cursor.select(QTextCursor.SelectionType.WordUnderCursor)
    return cursor.selectionStart(), cursor.selectionEnd()
