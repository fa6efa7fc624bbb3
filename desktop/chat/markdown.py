"""Markdown for untrusted model text: one QTextDocument per message, code highlighted.

Qt's defaults render inline HTML and load `file://` images named in the text; here raw HTML
is shown as text (`MarkdownNoHTML`) and every resource load is refused, so a message can
neither style itself as something else nor make the app read a file. Links stay links: the
chat view opens them in the system browser only when clicked.

Control characters, bidirectional overrides and invisible characters are shown escaped
(`kernel.visible`): in the Markdown source, and again in the parsed document, because an
entity (`&#x202e;`, `&#27;`) makes such a character out of plain text.
"""

from __future__ import annotations

import itertools
from functools import lru_cache
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QObject, QUrl
from PySide6.QtGui import (
    QColor,
    QGuiApplication,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
)

from kernel.visible import visible

_SERIALS = itertools.count()

if TYPE_CHECKING:
    from pygments.lexer import Lexer
    from pygments.token import _TokenType

MARKDOWN_FEATURES = (
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub
    | QTextDocument.MarkdownFeature.MarkdownNoHTML
)

_LIGHT: dict[str, str] = {
    "Token.Keyword": "#8250df",
    "Token.Name.Builtin": "#0550ae",
    "Token.Name.Function": "#6639ba",
    "Token.Name.Class": "#953800",
    "Token.Literal.String": "#0a3069",
    "Token.Literal.Number": "#0550ae",
    "Token.Comment": "#6e7781",
    "Token.Operator": "#cf222e",
    "Token.Generic.Inserted": "#116329",
    "Token.Generic.Deleted": "#82071e",
}
_DARK: dict[str, str] = {
    "Token.Keyword": "#d2a8ff",
    "Token.Name.Builtin": "#79c0ff",
    "Token.Name.Function": "#d2a8ff",
    "Token.Name.Class": "#ffa657",
    "Token.Literal.String": "#a5d6ff",
    "Token.Literal.Number": "#79c0ff",
    "Token.Comment": "#8b949e",
    "Token.Operator": "#ff7b72",
    "Token.Generic.Inserted": "#7ee787",
    "Token.Generic.Deleted": "#ffa198",
}


def is_dark() -> bool:
    """Whether the system palette is dark (light/dark follow the system)."""
    app = QGuiApplication.instance()
    if app is None:
        return False
    return QGuiApplication.palette().window().color().lightness() < 128


@lru_cache(maxsize=64)
def _lexer(language: str) -> Lexer | None:
    # Pygments is loaded with the first code block, not with the app.
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(language.strip().lower() or "text", stripnl=False)
    except ClassNotFound:
        return None


def _colour_for(token: _TokenType, palette: dict[str, str]) -> str | None:
    """The colour of a token type or of its nearest parent that has one."""
    while token.parent is not None:
        colour = palette.get(str(token))
        if colour is not None:
            return colour
        token = token.parent
    return None


class CodeHighlighter(QSyntaxHighlighter):
    """Colours the lines of fenced code blocks, by the fence's language, with Pygments."""

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self._palette = _DARK if is_dark() else _LIGHT
        self._formats: dict[str, QTextCharFormat] = {}

    def _format(self, colour: str) -> QTextCharFormat:
        fmt = self._formats.get(colour)
        if fmt is None:
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(colour))
            self._formats[colour] = fmt
        return fmt

    def highlightBlock(self, text: str) -> None:
        block_format = self.currentBlock().blockFormat()
        if not block_format.hasProperty(QTextFormat.Property.BlockCodeFence):
            return
        lexer = _lexer(block_format.stringProperty(QTextFormat.Property.BlockCodeLanguage))
        if lexer is None:
            return
        position = 0
        for token, value in lexer.get_tokens(text):
            colour = _colour_for(token, self._palette)
            if colour is not None:
                self.setFormat(position, len(value), self._format(colour))
            position += len(value)


class SafeDocument(QTextDocument):
    """A document that never loads a resource (images, style sheets) named by its text."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setUndoRedoEnabled(False)
        self.setDocumentMargin(2)
        self.setDefaultFont(QGuiApplication.font())
        self.highlighter: CodeHighlighter | None = None
        self.serial = next(_SERIALS)
        """Unique for the app's lifetime: names this document's cached rendering."""

    def loadResource(self, kind: int, name: QUrl) -> object:
        return QByteArray()


def markdown_document(text: str, width: float, parent: QObject | None = None) -> SafeDocument:
    """A laid-out document for one piece of Markdown."""
    doc = SafeDocument(parent)
    doc.setMarkdown(visible(text), MARKDOWN_FEATURES)
    if "&" in text:
        _escape_made_characters(doc)
    if "](" in text or "://" in text:
        _recolour_links(doc)
    if "```" in text or "~~~" in text:
        # Highlight once the fences' block formats exist (they are set after the text).
        doc.highlighter = CodeHighlighter(doc)
        doc.highlighter.rehighlight()
    doc.setTextWidth(width)
    return doc


def _escape_made_characters(doc: QTextDocument) -> None:
    """Escape, in place and keeping their formats, the characters an entity made."""
    fixes: list[tuple[int, int, str, QTextCharFormat]] = []
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.isValid():
                shown = visible(fragment.text(), keep="\t")
                if shown != fragment.text():
                    fixes.append((fragment.position(), fragment.length(), shown,
                                  fragment.charFormat()))
            it += 1
        block = block.next()
    cursor = QTextCursor(doc)
    for position, length, shown, char_format in reversed(fixes):
        cursor.setPosition(position)
        cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(shown, char_format)


def _recolour_links(doc: QTextDocument) -> None:
    """Qt's Markdown import paints links pure blue; use the palette's link colour, which
    follows light and dark mode."""
    link = QTextCharFormat()
    link.setForeground(QGuiApplication.palette().link())
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.isValid() and fragment.charFormat().isAnchor():
                cursor = QTextCursor(doc)
                cursor.setPosition(fragment.position())
                cursor.setPosition(fragment.position() + fragment.length(),
                                   QTextCursor.MoveMode.KeepAnchor)
                cursor.mergeCharFormat(link)
            it += 1
        block = block.next()


def plain_document(text: str, width: float, parent: QObject | None = None) -> SafeDocument:
    """A laid-out document showing text as typed (the user's own messages), control and
    invisible characters escaped."""
    doc = SafeDocument(parent)
    doc.setPlainText(visible(text))
    doc.setTextWidth(width)
    return doc


def split_stable(text: str) -> int:
    """Where the finished part of streaming Markdown ends: after the last blank line that
    is outside a code fence. Everything before it will not change as more text arrives."""
    cut = 0
    in_fence = False
    offset = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not stripped and not in_fence and line.endswith("\n"):
            cut = offset + len(line)
        offset += len(line)
    return cut
