"""The body of an expanded tool card: its arguments and the start of its result, as text.

Both are model or tool text: shown escaped (`kernel.visible`), monospaced, cut to a few lines
with how many were left out (the full output opens in the viewer).
"""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontDatabase, QTextBlockFormat, QTextCharFormat, QTextCursor

from desktop.chat.documents import SafeDocument
from desktop.words import arguments_json, count
from kernel.events import RESULT_PREVIEW_CHARS
from kernel.visible import visible

MAX_LINES = 16
MAX_LINE_CHARS = 300


def shorten(text: str, max_lines: int = MAX_LINES, whole: bool = True) -> str:
    """At most `max_lines` lines of at most MAX_LINE_CHARS, saying how much was left out.
    `whole`: `text` is all there is, so the lines left out can be counted; otherwise (only
    the start of a longer output) no count is made up: the rest is said to be in the file."""
    lines = text.split("\n")
    shown = [line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"
             for line in lines[:max_lines]]
    if not whole:
        shown.append("… more: the whole output is in the full output")
    elif len(lines) > max_lines:
        shown.append(f"… {count(len(lines) - max_lines, 'more line')}")
    return "\n".join(shown)


def card_document(arguments: object, preview: str, output_path: str | None) -> SafeDocument:
    doc = SafeDocument()
    cursor = QTextCursor(doc)
    cursor.beginEditBlock()
    heading = QTextCharFormat()
    heading.setFontWeight(QFont.Weight.Bold)
    mono = QTextCharFormat()
    mono.setFontFamilies(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).families())
    sections = [("Arguments", shorten(visible(arguments_json(arguments))))]
    if preview:
        whole = output_path is None and len(preview) < RESULT_PREVIEW_CHARS
        sections.append(("Result", shorten(visible(preview), whole=whole)))
    first = True
    for title, body in sections:
        if not first:
            cursor.insertBlock(QTextBlockFormat(), heading)
        first = False
        cursor.insertText(title, heading)
        for line in body.split("\n"):
            cursor.insertBlock(QTextBlockFormat(), mono)
            cursor.insertText(line, mono)
    if output_path:
        cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
        cursor.insertText(f"Full output kept on disk: {visible(output_path, keep='')}",
                          QTextCharFormat())
    cursor.endEditBlock()
    return doc
