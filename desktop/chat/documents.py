"""The documents a message is drawn from: prose (wrapped to the width) and code blocks (never
wrapped: wider ones scroll sideways), neither of which ever loads a resource named by its text.

A message is a list of these pieces, stacked; `extent(width)` is the height a piece takes in
the message, its chrome included (a code block's header with the language and Copy, and its
horizontal scroll bar when the code is wider than the message).
"""

from __future__ import annotations

import itertools

from PySide6.QtCore import QByteArray, QObject, QUrl
from PySide6.QtGui import (
    QFont,
    QFontDatabase,
    QFontMetricsF,
    QGuiApplication,
    QTextCursor,
    QTextDocument,
    QTextOption,
)

from kernel.visible import visible

_SERIALS = itertools.count()

CODE_HEADER = 22.0
"""The strip above a code block: its language on the left, Copy on the right."""
CODE_BAR = 8.0
"""The horizontal scroll bar under a code block wider than the message."""
CODE_GAP = 10.0
PLAIN_LINE_HEIGHT = 140.0
"""A typed message's line height, in percent of the font's."""
"""Space under a code block, so two blocks in a row stay two."""


READING_PX = 15
"""The conversation's reading face, in pixels (the interface's own font stays as it is)."""


def reading_font() -> QFont:
    font = QFont(QGuiApplication.font())
    font.setPixelSize(READING_PX)
    return font


def is_dark() -> bool:
    """Whether the system palette is dark (light/dark follow the system)."""
    if QGuiApplication.instance() is None:
        return False
    return QGuiApplication.palette().window().color().lightness() < 128


class SafeDocument(QTextDocument):
    """A prose document that never loads a resource (images, style sheets) named by its text."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setUndoRedoEnabled(False)
        self.setDocumentMargin(2)
        self.setDefaultFont(reading_font())
        self.serial = next(_SERIALS)
        """Unique for the app's lifetime: names this document's cached rendering."""

    def loadResource(self, kind: int, name: QUrl | str) -> object:
        return QByteArray()

    def fit(self, width: float) -> None:
        """Lay out for a message this wide."""
        self.setTextWidth(width)

    def join(self, *, above: bool = False, below: bool = False) -> None:
        """No space at the seam with the piece above or below: a paragraph cut in two while
        it streamed reads as one."""
        if not (above or below):
            return
        frame = self.rootFrame().frameFormat()
        if above:
            frame.setTopMargin(0)
        if below:
            frame.setBottomMargin(0)
            cursor = QTextCursor(self)
            cursor.movePosition(QTextCursor.MoveOperation.End)
            block = cursor.blockFormat()
            block.setBottomMargin(0)
            cursor.setBlockFormat(block)
        self.rootFrame().setFrameFormat(frame)

    def extent(self, width: float) -> float:
        """The height this piece takes in a message `width` wide."""
        return self.size().height()


class CodeDocument(SafeDocument):
    """One code block: monospaced, lines never wrapped, scrolled sideways by `scroll_x`."""

    def __init__(self, language: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.language = language
        """The fence's language as shown (one line, escaped); may be empty."""
        self.scroll_x = 0.0
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.setDefaultFont(font)
        option = QTextOption()
        option.setWrapMode(QTextOption.WrapMode.NoWrap)
        option.setTabStopDistance(4 * QFontMetricsF(font).horizontalAdvance(" "))
        self.setDefaultTextOption(option)
        self.setDocumentMargin(6)

    def fit(self, width: float) -> None:
        """Code keeps its lines whatever the width: it scrolls instead."""
        self.clamp_scroll(width)

    def overflows(self, width: float) -> bool:
        return self.size().width() > width + 0.5

    def max_scroll(self, width: float) -> float:
        return max(0.0, self.size().width() - width)

    def clamp_scroll(self, width: float) -> None:
        self.scroll_x = min(max(0.0, self.scroll_x), self.max_scroll(width))

    def extent(self, width: float) -> float:
        bar = CODE_BAR if self.overflows(width) else 0.0
        return CODE_HEADER + self.size().height() + bar + CODE_GAP

    def code(self) -> str:
        """The code as shown (what Copy puts on the clipboard)."""
        return self.toPlainText()


def plain_document(text: str, width: float, parent: QObject | None = None) -> SafeDocument:
    """A laid-out document showing text as typed (the user's own messages), control and
    invisible characters escaped."""
    from PySide6.QtGui import QTextBlockFormat  # (not needed by the first window)

    doc = SafeDocument(parent)
    doc.setPlainText(visible(text))
    cursor = QTextCursor(doc)
    cursor.select(QTextCursor.SelectionType.Document)
    spaced = QTextBlockFormat()
    spaced.setLineHeight(PLAIN_LINE_HEIGHT, 1)  # proportional
    cursor.mergeBlockFormat(spaced)
    doc.fit(width)
    return doc
