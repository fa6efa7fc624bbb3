"""Code blocks' text, coloured by Pygments for the fence's language (light or dark palette).

Pygments is imported with the first highlighted block, not with the app.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor

from desktop.chat.documents import CodeDocument, is_dark

if TYPE_CHECKING:
    from pygments.lexer import Lexer
    from pygments.token import _TokenType

LIGHT: dict[str, str] = {
    "Token.Keyword": "#8250df",
    "Token.Name.Builtin": "#0550ae",
    "Token.Name.Function": "#6639ba",
    "Token.Name.Class": "#953800",
    "Token.Name.Decorator": "#953800",
    "Token.Literal.String": "#0a3069",
    "Token.Literal.Number": "#0550ae",
    "Token.Comment": "#6e7781",
    "Token.Operator": "#cf222e",
    "Token.Generic.Inserted": "#116329",
    "Token.Generic.Deleted": "#82071e",
    "Token.Generic.Heading": "#0550ae",
}
DARK: dict[str, str] = {
    "Token.Keyword": "#d2a8ff",
    "Token.Name.Builtin": "#79c0ff",
    "Token.Name.Function": "#d2a8ff",
    "Token.Name.Class": "#ffa657",
    "Token.Name.Decorator": "#ffa657",
    "Token.Literal.String": "#a5d6ff",
    "Token.Literal.Number": "#79c0ff",
    "Token.Comment": "#8b949e",
    "Token.Operator": "#ff7b72",
    "Token.Generic.Inserted": "#7ee787",
    "Token.Generic.Deleted": "#ffa198",
    "Token.Generic.Heading": "#79c0ff",
}


@lru_cache(maxsize=64)
def lexer_for(language: str) -> Lexer | None:
    """The lexer of a fence's language (its first word), or None when Pygments has none."""
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    name = (language.split() or ["text"])[0].lower()
    try:
        return get_lexer_by_name(name, stripnl=False, ensurenl=False)
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


def fill_code(doc: CodeDocument, code: str, *, highlight: bool) -> None:
    """Put `code` (already made visible) into `doc`, coloured when `highlight` and the
    language is known. Streaming text is filled plain; a finished block is coloured once."""
    cursor = QTextCursor(doc)
    lexer = lexer_for(doc.language) if highlight else None
    if lexer is None:
        cursor.insertText(code)
        return
    cursor.beginEditBlock()
    palette = DARK if is_dark() else LIGHT
    formats: dict[str, QTextCharFormat] = {}
    plain = QTextCharFormat()
    for token, value in lexer.get_tokens(code):
        colour = _colour_for(token, palette)
        if colour is None:
            cursor.insertText(value, plain)
            continue
        fmt = formats.get(colour)
        if fmt is None:
            fmt = formats[colour] = QTextCharFormat()
            fmt.setForeground(QColor(colour))
        cursor.insertText(value, fmt)
    cursor.endEditBlock()
