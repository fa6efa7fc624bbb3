"""Markdown for untrusted model text, parsed by markdown-it-py (CommonMark + GFM tables, task
lists, strikethrough) and built into documents with a text cursor — never through HTML.

What a person expects from a chat: a single newline is a line break; fenced code is a block
of its own (background, language, Copy, highlighted by Pygments, scrolled sideways, never
clipped, two in a row stay two); quotes carry a bar; lists nest; tables are tables; `[ ]` and
`[x]` items show a box.

What the text cannot do: raw HTML is text (the parser's `html` is off, nothing is rendered);
an image is its alt text, never fetched; a link is a link only for `http(s)`/`mailto` and the
chat opens it only when clicked. Control, bidirectional and invisible characters are shown
escaped (`kernel.visible`): in the source before parsing (the parser would turn a CR into a
newline), and in what an entity makes (`&#x202e;`, `&#27;`): the entity rule is replaced by
one that escapes the character it names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QGuiApplication,
    QPalette,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextFormat,
    QTextFrameFormat,
    QTextLength,
    QTextList,
    QTextListFormat,
    QTextTable,
    QTextTableCellFormat,
    QTextTableFormat,
)

from desktop.chat.documents import CodeDocument, SafeDocument
from desktop.chat.highlight import fill_code
from desktop.theme import mix
from kernel.visible import one_line, visible

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_core import StateCore
    from markdown_it.rules_inline import StateInline
    from markdown_it.token import Token

LINK_SCHEMES = ("http:", "https:", "mailto:")
SCAN_BUDGET = 20_000
"""Characters the inline parser may scan to match one message's brackets (~20 ms)."""
SPECIALS_BUDGET = 16_000
"""Characters that start an inline rule in one message (a 2,000-line answer with bold and
code on each line has 12,000)."""
INLINE_SPECIALS = "!&*<>[\\]_`~"
_BRACKET = re.compile(r"\]\(|[\[\])]")
HEADING_SCALE = {"h1": 1.5, "h2": 1.3, "h3": 1.15}
LINE_HEIGHT = 145.0
"""Prose's line height, in percent of the font's: generous, as a reading face wants."""
READING_SPACING = 1  # QTextBlockFormat.LineHeightTypes.ProportionalHeight
QUOTE_BAR = 3.0
INDENT = 22.0
CHECKBOX = {True: "☑", False: "☐"}
_BULLETS = (QTextListFormat.Style.ListDisc, QTextListFormat.Style.ListCircle,
            QTextListFormat.Style.ListSquare)
_ALIGN = {"left": Qt.AlignmentFlag.AlignLeft, "center": Qt.AlignmentFlag.AlignHCenter,
          "right": Qt.AlignmentFlag.AlignRight}


def _visible_entity(state: StateInline, silent: bool) -> bool:
    """markdown-it's entity rule, except that the character an entity names is shown as
    `visible` shows it (the stock rule turns control codes into U+FFFD, which hides which)."""
    from markdown_it.common.entities import entities
    from markdown_it.rules_inline.entity import DIGITAL_RE, NAMED_RE

    pos = state.pos
    if state.src[pos] != "&" or pos + 1 >= state.posMax:
        return False
    match = DIGITAL_RE.match(state.src, pos) if state.src[pos + 1] == "#" else None
    if match is not None:
        digits = match.group(1)
        code = int(digits[1:], 16) if digits[0] in "xX" else int(digits)
        content = chr(code) if code <= 0x10FFFF else "\ufffd"
    else:
        match = NAMED_RE.match(state.src, pos)
        if match is None or match.group(1) not in entities:
            return False
        content = entities[match.group(1)]
    if not silent:
        token = state.push("text_special", "", 0)
        token.content = visible(content, keep="")
        token.markup = match.group(0)
        token.info = "entity"
    state.pos += len(match.group(0))
    return True


def _link_allowed(url: str) -> bool:
    return url.strip().lower().startswith(LINK_SCHEMES)


@cache
def parser() -> MarkdownIt:
    """The one Markdown parser (imported with the first message, not with the app)."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.tasklists import tasklists_plugin

    md = MarkdownIt("commonmark", {"html": False, "breaks": True})
    md.enable(["table", "strikethrough"])
    md.use(tasklists_plugin)
    md.inline.ruler.at("entity", _visible_entity)
    md.core.ruler.after("block", "flatten_deep_nesting", _flatten_deep_nesting)
    md.core.ruler.at("inline", _bounded_inline)
    md.validateLink = _link_allowed  # type: ignore[method-assign]
    return md


def bracket_scan(content: str) -> int:
    """How many characters markdown-it scans to match the brackets of one block: each `[`
    is matched by scanning to its `]`, and a link's `](` to its `)`; one never closed is
    scanned to the end of the block. It grows with the square of the brackets left open
    (`[` × 40,000 or `[a](` × 10,000 took seconds); a link costs the length of its text."""
    scanned = 0
    opened: list[tuple[str, int]] = []
    for match in _BRACKET.finditer(content):
        mark, at = match.group(), match.start()
        if mark == "[":
            opened.append(("[", at))
        elif opened and (mark != ")" or opened[-1][0] == "("):
            scanned += at - opened.pop()[1]
            if mark == "](":
                opened.append(("(", at))
    return scanned + sum(len(content) - at for _, at in opened)


def plain_inline(content: str, spent: tuple[int, int]) -> bool:
    """Whether a paragraph (or heading, or table cell) is shown as plain text, unparsed:
    when parsing it would take the message over SCAN_BUDGET characters scanned to match
    brackets (`bracket_scan`) or over SPECIALS_BUDGET characters that start an inline
    rule (each costs tens of µs: `<` × 40,000 took 1.5 s); `spent` is what the message's
    earlier blocks took of both. (Block nesting is cut by `_flatten_deep_nesting`.)"""
    scanned, specials = spent
    return (scanned + bracket_scan(content) > SCAN_BUDGET
            or specials + inline_specials(content) > SPECIALS_BUDGET)


def inline_specials(content: str) -> int:
    return sum(map(content.count, INLINE_SPECIALS))


def _flatten_deep_nesting(state: StateCore) -> None:
    """Quotes and lists nested to the parser's maxNesting: the parser drops everything from
    there to the end, so the whole text is shown as one plain paragraph instead."""
    from markdown_it.token import Token

    if not any(token.level >= state.md.options.maxNesting - 1 for token in state.tokens):
        return
    whole = Token("inline", "", 0, content=state.src.strip("\n"), meta={"plain": True})
    state.tokens = [Token("paragraph_open", "p", 1), whole, Token("paragraph_close", "p", -1)]


def _bounded_inline(state: StateCore) -> None:
    """markdown-it's core inline rule, except that blocks `plain_inline` refuses (or that
    `_flatten_deep_nesting` made) become their text, line breaks kept, unparsed."""
    from markdown_it.token import Token

    scanned = specials = 0
    for token in state.tokens:
        if token.type != "inline":
            continue
        if token.meta.get("plain") or plain_inline(token.content, (scanned, specials)):
            text = token.content.replace("\n", "\u2028")
            token.children = [Token("text", "", 0, content=text)]
            continue
        scanned += bracket_scan(token.content)
        specials += inline_specials(token.content)
        token.children = token.children or []
        state.md.inline.parse(token.content, state.md, state.env, token.children)


def render_markdown(text: str, width: float, *, highlight: bool = True) -> list[SafeDocument]:
    """The pieces (prose and code documents) of one piece of Markdown, laid out at `width`.
    `highlight=False` (text still streaming) leaves code uncoloured."""
    pieces = _Builder(highlight).build(parser().parse(visible(text)))
    for piece in pieces:
        piece.fit(width)
    return pieces


@dataclass
class _List:
    format: QTextListFormat
    items: QTextList | None = None


@dataclass
class _Inline:
    bold: bool = False
    italic: bool = False
    strike: bool = False
    href: str = ""
    scale: float = 1.0


@dataclass
class _Builder:
    highlight: bool
    pieces: list[SafeDocument] = field(default_factory=list)
    cursor: QTextCursor | None = None
    fresh: bool = False
    """The cursor's block is empty and unused: the next block goes into it."""
    lists: list[_List] = field(default_factory=list)
    item_starts: bool = False
    quotes: list[QTextTable] = field(default_factory=list)
    cells: int = 0
    bold_cells: bool = False
    scale: float = 1.0
    edits: list[QTextCursor] = field(default_factory=list)
    """One open edit block per prose document: Qt lays a document out once, at the end,
    instead of after every insertion (quadratic in a long paragraph)."""

    def build(self, tokens: list[Token]) -> list[SafeDocument]:
        i = 0
        while i < len(tokens):
            i = self._token(tokens, i)
        if not self.pieces:
            self._prose()
        for edit in self.edits:
            edit.endEditBlock()
        return self.pieces

    # -- documents and blocks ----------------------------------------------------------------
    def _prose(self) -> QTextCursor:
        if self.cursor is None:
            doc = SafeDocument()
            doc.setIndentWidth(INDENT)
            self.pieces.append(doc)
            self.cursor = QTextCursor(doc)
            self.cursor.beginEditBlock()
            self.edits.append(QTextCursor(self.cursor))
            self.fresh = True
        return self.cursor

    def _block(self, fmt: QTextBlockFormat | None = None) -> QTextCursor:
        cursor = self._prose()
        fmt = fmt or QTextBlockFormat()
        fmt.setBottomMargin(2 if self.lists else 8)
        fmt.setLineHeight(LINE_HEIGHT, READING_SPACING)
        if self.lists and not self.item_starts:
            fmt.setIndent(len(self.lists))
        if self.fresh:
            cursor.setBlockFormat(fmt)
        else:
            cursor.insertBlock(fmt, QTextCharFormat())
        self.fresh = False
        if self.lists and self.item_starts:
            self.item_starts = False
            current = self.lists[-1]
            if current.items is None and len(self.lists) == 1:
                spaced = cursor.blockFormat()
                spaced.setTopMargin(4)
                cursor.setBlockFormat(spaced)
            if current.items is None:
                current.items = cursor.createList(current.format)
            else:
                current.items.add(cursor.block())
        return cursor

    def _nested(self) -> bool:
        return bool(self.lists or self.quotes or self.cells)

    # -- tokens --------------------------------------------------------------------------------
    def _token(self, tokens: list[Token], i: int) -> int:
        token = tokens[i]
        kind = token.type
        if kind == "inline":
            self._inline(token.children or [])
        elif kind == "paragraph_open":
            self._block()
        elif kind == "heading_open":
            self.scale = HEADING_SCALE.get(token.tag, 1.05)
            fmt = QTextBlockFormat()
            fmt.setTopMargin(6)
            fmt.setHeadingLevel(int(token.tag[1:]))
            self._block(fmt)
        elif kind == "heading_close":
            self.scale = 1.0
        elif kind in ("bullet_list_open", "ordered_list_open"):
            self._open_list(token)
        elif kind in ("bullet_list_close", "ordered_list_close"):
            self.lists.pop()
        elif kind == "list_item_open":
            self.item_starts = True
        elif kind == "blockquote_open":
            self._open_quote()
        elif kind == "blockquote_close":
            self._close_quote()
        elif kind in ("fence", "code_block"):
            self._code(token)
        elif kind == "hr":
            fmt = QTextBlockFormat()
            fmt.setProperty(QTextFormat.Property.BlockTrailingHorizontalRulerWidth,
                            QTextLength(QTextLength.Type.PercentageLength, 100))
            self._block(fmt)
        elif kind == "table_open":
            return self._table(tokens, i)
        return i + 1

    def _open_list(self, token: Token) -> None:
        fmt = QTextListFormat()
        depth = len(self.lists)
        if token.type == "ordered_list_open":
            fmt.setStyle(QTextListFormat.Style.ListDecimal)
            start = token.attrs.get("start", 1)
            fmt.setStart(int(start) if isinstance(start, int | str) else 1)
        else:
            fmt.setStyle(_BULLETS[depth % len(_BULLETS)])
        fmt.setIndent(depth + 1)
        self.lists.append(_List(fmt))

    def _open_quote(self) -> None:
        """A quote: a one-cell table whose cell has a bar on its left only."""
        cursor = self._block() if not self.fresh else self._prose()
        table_format = QTextTableFormat()
        table_format.setBorder(0)
        table_format.setBorderCollapse(True)
        table_format.setCellSpacing(0)
        table_format.setCellPadding(0)
        table_format.setWidth(QTextLength(QTextLength.Type.PercentageLength, 100))
        table_format.setTopMargin(4)
        table_format.setBottomMargin(6)
        table = cursor.insertTable(1, 1, table_format)
        cell = QTextTableCellFormat()
        palette = QGuiApplication.palette()
        cell.setLeftBorder(QUOTE_BAR)
        cell.setLeftBorderBrush(palette.color(QPalette.ColorRole.Mid))
        cell.setLeftBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
        for side in (cell.setTopBorder, cell.setRightBorder, cell.setBottomBorder):
            side(0)
        cell.setLeftPadding(10)
        cell.setForeground(palette.color(QPalette.ColorRole.PlaceholderText))
        table.cellAt(0, 0).setFormat(cell)
        self.quotes.append(table)
        self.cursor = table.cellAt(0, 0).firstCursorPosition()
        self.fresh = True

    def _close_quote(self) -> None:
        table = self.quotes.pop()
        cursor = self._prose()
        cursor.setPosition(table.lastPosition() + 1)
        self.fresh = not cursor.block().text()

    def _code(self, token: Token) -> None:
        code = token.content.removesuffix("\n")
        language = one_line(token.info.strip())
        if self._nested():
            self._nested_code(code)
            return
        doc = CodeDocument(language)
        fill_code(doc, code, highlight=self.highlight)
        self.pieces.append(doc)
        self.cursor = None

    def _nested_code(self, code: str) -> None:
        """Code inside a list, quote or table: shaded monospaced lines, wrapped."""
        shade = QGuiApplication.palette().color(QPalette.ColorRole.AlternateBase)
        fmt = QTextBlockFormat()
        fmt.setBackground(shade)
        char = _mono()
        for line in code.split("\n"):
            self._block(QTextBlockFormat(fmt)).insertText(line, char)

    def _table(self, tokens: list[Token], i: int) -> int:
        end, rows, columns = _table_shape(tokens, i)
        cursor = self._block() if not self.fresh else self._prose()
        fmt = QTextTableFormat()
        fmt.setBorder(1)
        fmt.setBorderBrush(_page_shade(0.16))
        fmt.setBorderCollapse(True)
        fmt.setCellPadding(6)
        fmt.setCellSpacing(0)
        fmt.setHeaderRowCount(1)
        fmt.setTopMargin(4)
        fmt.setBottomMargin(6)
        table = cursor.insertTable(max(rows, 1), max(columns, 1), fmt)
        row = -1
        column = 0
        self.cells += 1
        header = _page_shade(0.08)
        for token in tokens[i + 1:end]:
            if token.type == "tr_open":
                row, column = row + 1, 0
            elif token.type in ("th_open", "td_open"):
                cell = table.cellAt(row, column)
                if token.type == "th_open":
                    cell_format = cell.format().toTableCellFormat()
                    cell_format.setBackground(header)
                    cell.setFormat(cell_format)
                self.cursor = cell.firstCursorPosition()
                block = QTextBlockFormat()
                style = str(token.attrs.get("style", ""))
                block.setAlignment(_ALIGN.get(style.removeprefix("text-align:"),
                                              Qt.AlignmentFlag.AlignLeft))
                self.cursor.setBlockFormat(block)
                self.bold_cells = token.type == "th_open"
                column += 1
            elif token.type == "inline":
                self._inline(token.children or [], bold=self.bold_cells)
        self.cells -= 1
        self.cursor = self._prose()
        self.cursor.setPosition(table.lastPosition() + 1)
        self.fresh = not self.cursor.block().text()
        return end + 1

    # -- inline ---------------------------------------------------------------------------------
    def _inline(self, children: list[Token], *, bold: bool = False) -> None:
        cursor = self._prose()
        state = _Inline(bold=bold, scale=self.scale)
        for child in children:
            kind = child.type
            if kind in ("text", "text_special"):
                cursor.insertText(child.content, _char(state))
            elif kind in ("softbreak", "hardbreak"):
                cursor.insertText("\u2028", _char(state))
            elif kind == "code_inline":
                cursor.insertText(child.content, _mono(_char(state)))
            elif kind in ("strong_open", "strong_close"):
                state.bold = kind == "strong_open" or bold
            elif kind in ("em_open", "em_close"):
                state.italic = kind == "em_open"
            elif kind in ("s_open", "s_close"):
                state.strike = kind == "s_open"
            elif kind == "link_open":
                state.href = str(child.attrs.get("href", ""))
            elif kind == "link_close":
                state.href = ""
            elif kind == "image":
                alt = one_line(child.content) or "image"
                cursor.insertText(f"[image: {alt}]", _char(state))
            elif kind == "html_inline":
                cursor.insertText(_checkbox(child.content), _char(state))
            else:
                cursor.insertText(child.content, _char(state))


def _checkbox(html: str) -> str:
    """The task-list plugin's checkbox as a box character (it is the only inline HTML the
    parser makes: raw HTML in the text is text)."""
    if "task-list-item-checkbox" in html:
        return CHECKBOX['checked="checked"' in html]
    return html


def _table_shape(tokens: list[Token], start: int) -> tuple[int, int, int]:
    """The index of the table's closing token, its row and column counts."""
    rows = columns = cells = 0
    depth = 0
    for end in range(start, len(tokens)):
        kind = tokens[end].type
        if kind == "table_open":
            depth += 1
        elif kind == "table_close":
            depth -= 1
            if depth == 0:
                return end, rows, columns
        elif kind == "tr_open":
            rows, cells = rows + 1, 0
        elif kind in ("th_open", "td_open"):
            cells += 1
            columns = max(columns, cells)
    return len(tokens) - 1, rows, columns


def _char(state: _Inline) -> QTextCharFormat:
    fmt = QTextCharFormat()
    if state.bold or state.scale != 1.0:
        fmt.setFontWeight(QFont.Weight.Bold)
    if state.scale != 1.0:
        fmt.setFontPointSize(QGuiApplication.font().pointSizeF() * state.scale)
    if state.italic:
        fmt.setFontItalic(True)
    if state.strike:
        fmt.setFontStrikeOut(True)
    if state.href:
        fmt.setAnchor(True)
        fmt.setAnchorHref(state.href)
        fmt.setToolTip(one_line(state.href))
        fmt.setForeground(QGuiApplication.palette().link())
        fmt.setFontUnderline(True)
    return fmt


def _mono(fmt: QTextCharFormat | None = None) -> QTextCharFormat:
    out = QTextCharFormat(fmt) if fmt is not None else QTextCharFormat()
    out.setFontFamilies(
        QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).families())
    out.setBackground(_page_shade(0.08))
    return out


def _page_shade(amount: float) -> QColor:
    """The page's colour moved `amount` towards the text's: a chip, a table's header row
    and lines that read in light and in dark mode."""
    palette = QGuiApplication.palette()
    return mix(palette.color(QPalette.ColorRole.Base), palette.color(QPalette.ColorRole.Text),
               amount)


_OPENING = re.compile(r"(`{3,}|~{3,})([^\n]*)\n")


def open_fence(text: str) -> tuple[str, str] | None:
    """For text that is one fenced code block still being written (fence at the start, no
    closing fence yet): its info string and the code so far. Otherwise None."""
    opening = _OPENING.match(text)
    if opening is None or (opening.group(1)[0] == "`" and "`" in opening.group(2)):
        return None
    fence = opening.group(1)
    closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
    code = text[opening.end():]
    if closing.search(code):
        return None
    return opening.group(2), code.removesuffix("\n")


LONG_PARAGRAPH = 100
"""Lines after which a paragraph still being written may be cut at a line break, so its
rendering stays small however long it grows (a 2,000-line answer without blank lines)."""
_NOT_PLAIN = re.compile(r"[\s>#|=*+\-`~]|\d+[.)]")
_SPANS = ("`", "**", "~~")


def _plain(line: str) -> bool:
    """A line that can only continue a paragraph: no block syntax starts it, no table."""
    return bool(line.strip()) and not _NOT_PLAIN.match(line) and "|" not in line


def split_stable(text: str) -> int:
    """Where the finished part of streaming Markdown ends: after the last blank line that
    is outside a code fence, or inside a long paragraph after a line that plain lines
    surround and that closes every code and emphasis span it opened. Everything before it
    will not change as more text arrives."""
    cut = 0
    in_fence = False
    offset = 0
    run = 0
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        stripped = line.strip()
        end = offset + len(line)
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            run = 0
        elif not stripped and not in_fence and line.endswith("\n"):
            cut, run = end, 0
        elif not in_fence and _plain(line):
            run += 1
            following = lines[index + 1] if index + 1 < len(lines) else ""
            if (run >= LONG_PARAGRAPH and following.endswith("\n") and _plain(following)
                    and all(text.count(span, cut, end) % 2 == 0 for span in _SPANS)):
                cut, run = end, 0
        else:
            run = 0
        offset = end
    return cut
