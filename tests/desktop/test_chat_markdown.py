"""Markdown as people expect it, from untrusted text: what the built documents hold (blocks,
lists, tables, quotes, code pieces, formats), and what the text can never do (HTML, images,
links to other schemes, hidden characters)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import (
    QFont,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextList,
    QTextTable,
)
from pytestqt.qtbot import QtBot

from desktop.chat.documents import CodeDocument, SafeDocument
from desktop.chat.markdown import render_markdown


def fragments(doc: QTextDocument) -> list[tuple[str, QTextCharFormat]]:
    """(text, char format) of every fragment, tables' cells included."""
    out = []
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            out.append((fragment.text(), fragment.charFormat()))
            it += 1
        block = block.next()
    return out


def fmt_of(doc: QTextDocument, text: str) -> QTextCharFormat:
    cursor = QTextCursor(doc)
    cursor.setPosition(doc.toPlainText().index(text) + 1)
    return cursor.charFormat()


def lists(doc: QTextDocument) -> list[QTextList]:
    found: list[QTextList] = []
    block = doc.begin()
    while block.isValid():
        current = block.textList()
        if current is not None and all(current is not seen for seen in found):
            found.append(current)
        block = block.next()
    return found


def tables(doc: QTextDocument) -> list[QTextTable]:
    return [f for f in doc.rootFrame().childFrames() if isinstance(f, QTextTable)]


@pytest.mark.parametrize("text, lines", [
    ("one\ntwo", ["one", "two"]),
    ("one\ntwo\nthree", ["one", "two", "three"]),
    ("trailing spaces  \nbreak", ["trailing spaces", "break"]),
    ("back slash\\\nbreak", ["back slash", "break"]),
    ("**bold**\n_it_", ["bold", "it"]),
])
def test_single_newlines_are_line_breaks_in_one_paragraph(qtbot: QtBot, text: str,
                                                          lines: list[str]) -> None:
    [doc] = render_markdown(text, 400)
    assert doc.blockCount() == 1
    assert doc.toPlainText() == "\n".join(lines)
    assert doc.size().height() > 0  # laid out
    assert doc.begin().layout().lineCount() == len(lines)


def test_a_two_thousand_line_answer_keeps_its_lines(qtbot: QtBot) -> None:
    text = "\n".join(f"line {i}" for i in range(2000))
    [doc] = render_markdown(text, 600)
    assert doc.toPlainText().split("\n") == [f"line {i}" for i in range(2000)]
    assert doc.size().height() > 2000 * 10
    assert doc.begin().layout().lineCount() == 2000


@pytest.mark.parametrize("text", [
    "```py\na = 1\n```\n```sh\nls\n```",
    "```py\na = 1\n```\n\n```sh\nls\n```",
    "~~~py\na = 1\n~~~\n~~~sh\nls\n~~~",
    "```py\na = 1\n```\n    indented = 2\n",
])
def test_two_code_blocks_in_a_row_stay_two(qtbot: QtBot, text: str) -> None:
    pieces = render_markdown(text, 400)
    code = [p for p in pieces if isinstance(p, CodeDocument)]
    assert len(code) == 2
    assert code[0].code() == "a = 1"
    assert code[1].code() in ("ls", "indented = 2")


def test_code_blocks_are_not_wrapped_or_clipped_but_scroll(qtbot: QtBot) -> None:
    long_line = "x = " + " + ".join(f"value_{i}" for i in range(60))
    [doc] = render_markdown(f"```python\n{long_line}\n```", 300)
    assert isinstance(doc, CodeDocument) and doc.size().height() > 0
    assert doc.begin().layout().lineCount() == 1, "a code line is never wrapped"
    assert doc.code() == long_line, "nothing clipped from the text"
    assert doc.overflows(300) and doc.max_scroll(300) > 1000
    doc.scroll_x = 10_000
    doc.clamp_scroll(300)
    assert doc.scroll_x == doc.max_scroll(300)
    assert doc.extent(300) > doc.extent(5000), "a wider block than the chat gets its bar"


@pytest.mark.parametrize("fence, language", [
    ("```python", "python"), ("```Python", "Python"), ("``` js", "js"),
    ("```rust {.line-numbers}", "rust {.line-numbers}"), ("```", ""), ("~~~bash", "bash"),
    ("```\x1b[31mred", "\\x1b[31mred"),
])
def test_the_language_label_is_the_fence_info_as_one_visible_line(
        qtbot: QtBot, fence: str, language: str) -> None:
    [doc] = render_markdown(f"{fence}\nprint(1)\n```" if fence.startswith("`")
                            else f"{fence}\nprint(1)\n~~~", 400)
    assert isinstance(doc, CodeDocument) and doc.language == language


def test_unknown_languages_and_streaming_code_stay_plain(qtbot: QtBot) -> None:
    for text, highlight in (("```nosuchlang\ndef f(): pass\n```", True),
                            ("```python\ndef f(): pass\n```", False)):
        [doc] = render_markdown(text, 400, highlight=highlight)
        colours = {f.foreground().color().name() for _, f in fragments(doc)}
        assert len(colours) == 1


def test_quotes_have_a_bar_and_nest(qtbot: QtBot) -> None:
    [doc] = render_markdown("before\n\n> quoted\n> > inner\n\nafter", 400)
    [outer] = tables(doc)
    cell = outer.cellAt(0, 0).format().toTableCellFormat()
    assert cell.leftBorder() > 0 and cell.rightBorder() == 0 and cell.topBorder() == 0
    assert cell.leftPadding() > 0
    inner = [f for f in outer.childFrames() if isinstance(f, QTextTable)]
    assert len(inner) == 1 and inner[0].cellAt(0, 0).format().toTableCellFormat().leftBorder()
    assert doc.toPlainText().split() == ["before", "quoted", "inner", "after"]


def test_nested_lists_are_indented_by_depth(qtbot: QtBot) -> None:
    [doc] = render_markdown("- a\n  - b\n    - c\n- d\n\n3. three\n4. four", 400)
    found = lists(doc)
    assert [lst.format().indent() for lst in found] == [1, 2, 3, 1]
    assert [lst.count() for lst in found] == [2, 1, 1, 2]
    assert found[3].format().start() == 3
    assert found[0].format().style() != found[1].format().style()


def test_task_lists_show_boxes(qtbot: QtBot) -> None:
    [doc] = render_markdown("- [ ] open\n- [x] done\n- [X] also done\n- plain", 400)
    assert doc.toPlainText().split("\n") == ["☐ open", "☑ done", "☑ also done", "plain"]


def test_tables_are_tables_with_a_bold_header_and_alignment(qtbot: QtBot) -> None:
    text = "| Tool | Time |\n|:-----|-----:|\n| ls | 30 ms |\n| make **test** | 20.5 s |"
    [doc] = render_markdown(text, 400)
    [table] = tables(doc)
    assert (table.rows(), table.columns()) == (3, 2)
    cells = [[_cell_text(table, r, c) for c in range(2)] for r in range(3)]
    assert cells == [["Tool", "Time"], ["ls", "30 ms"], ["make test", "20.5 s"]]
    assert fmt_of(doc, "Tool").fontWeight() == QFont.Weight.Bold
    assert fmt_of(doc, "ls").fontWeight() == QFont.Weight.Normal
    assert fmt_of(doc, "est").fontWeight() == QFont.Weight.Bold
    right = table.cellAt(1, 1).firstCursorPosition().blockFormat().alignment()
    assert right & Qt.AlignmentFlag.AlignRight


def _cell_text(table: QTextTable, row: int, column: int) -> str:
    cell = table.cellAt(row, column)
    cursor = cell.firstCursorPosition()
    cursor.setPosition(cell.lastPosition(), QTextCursor.MoveMode.KeepAnchor)
    return cursor.selectedText()


@pytest.mark.parametrize("html", [
    "<b>bold</b>", "<img src=x onerror=alert(1)>", "<script>alert(1)</script>",
    '<a href="file:///etc/passwd">x</a>', "<div>\n<i>block</i>\n</div>", "<!-- hidden -->",
    "<style>*{color:red}</style>", '<span style="display:none">secret</span>',
    "<iframe src=https://evil.example></iframe>", "<?php echo 1; ?>", "<![CDATA[x]]>",
])
def test_raw_html_is_shown_as_text(qtbot: QtBot, html: str) -> None:
    pieces = render_markdown(f"before {html} after", 400)
    shown = "".join(p.toPlainText() for p in pieces)
    assert html.replace("\n", "") in shown.replace("\n", "")
    for _, fmt in fragments(pieces[0]):
        assert not fmt.isImageFormat() and not fmt.isAnchor()
        assert fmt.fontWeight() == QFont.Weight.Normal


@pytest.mark.parametrize("image", [
    "![alt](https://example.org/a.png)", "![alt](file:///etc/passwd)", "![alt](a.png)",
    '![alt](data:image/png;base64,iVBORw0KGgo=)', "[![alt](https://x/y.png)](https://x)",
])
def test_images_are_never_loaded(qtbot: QtBot, image: str) -> None:
    [doc] = render_markdown(image, 400)
    assert all(not fmt.isImageFormat() for _, fmt in fragments(doc))
    assert "\ufffc" not in doc.toPlainText()
    assert "alt" in doc.toPlainText()


@pytest.mark.parametrize("url, linked", [
    ("https://example.org", True), ("http://example.org/a?b=1", True),
    ("mailto:me@example.org", True), ("HTTPS://EXAMPLE.ORG", True),
    ("javascript:alert(1)", False), ("JavaScript:alert(1)", False), ("file:///etc/passwd", False),
    ("data:text/html,<b>x</b>", False), ("vbscript:msgbox", False), ("reins://settings", False),
    ("/relative/path", False), ("ftp://example.org", False),
])
def test_only_web_and_mail_links_are_links(qtbot: QtBot, url: str, linked: bool) -> None:
    [doc] = render_markdown(f"see [here]({url}) now", 400)
    anchors = [fmt for text, fmt in fragments(doc) if fmt.isAnchor()]
    assert bool(anchors) is linked
    if linked:
        assert anchors[0].anchorHref().lower().startswith(url.split(":")[0].lower())


@pytest.mark.parametrize("entity, shown", [
    ("&#27;", "\\x1b"), ("&#x1B;", "\\x1b"), ("&#13;", "\\x0d"), ("&#x202e;", "\\u202e"),
    ("&#8206;", "\\u200e"), ("&#x200b;", "\\u200b"), ("&#0;", "\\x00"), ("&#x85;", "\\x85"),
    ("&nbsp;", "\\xa0"), ("&amp;", "&"), ("&lt;b&gt;", "<b>"), ("&#x110000;", "\ufffd"),
])
def test_characters_made_by_entities_are_shown_escaped(qtbot: QtBot, entity: str,
                                                        shown: str) -> None:
    [doc] = render_markdown(f"a {entity} b", 400)
    assert doc.toPlainText() == f"a {shown} b"


def test_every_piece_refuses_resources(qtbot: QtBot) -> None:
    from PySide6.QtCore import QByteArray, QUrl

    for piece in render_markdown("text\n\n```sh\nls\n```", 400):
        assert isinstance(piece, SafeDocument)
        loaded = piece.loadResource(2, QUrl("file:///etc/passwd"))
        assert isinstance(loaded, QByteArray) and loaded.isEmpty()
