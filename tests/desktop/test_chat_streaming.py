"""Streaming stays cheap with rich rendering: finished parts are frozen, a code block being
written grows in place (never rebuilt per delta), and is coloured once it is finished."""

from __future__ import annotations

import pytest
from pytestqt.qtbot import QtBot

from desktop.chat.documents import CodeDocument
from desktop.chat.markdown import open_fence
from desktop.chat.model import RENDER_INTERVAL_MS, MessageItem, Role
from tests.desktop.chat_views import shown_view


@pytest.mark.parametrize("text, expected", [
    ("```py\nx = 1\n", ("py", "x = 1")),
    ("```py\nx = 1\ny", ("py", "x = 1\ny")),
    ("~~~\nls", ("", "ls")),
    ("````md\n```\ninner\n", ("md", "```\ninner")),
    ("```py\nx\n```\n", None),
    ("```py\nx\n   ```\n", None),
    ("~~~\nx\n~~~~", None),
    ("``` a`b\nx\n", None),
    ("text\n```py\nx\n", None),
    ("```py", None),
])
def test_open_fence(text: str, expected: tuple[str, str] | None) -> None:
    assert open_fence(text) == expected


def test_a_long_code_block_grows_in_place_while_it_streams(qtbot: QtBot) -> None:
    view = shown_view(qtbot)
    model = view.chat_model()
    model.append_delta("Here it is:\n\n```python\n")
    qtbot.wait(RENDER_INTERVAL_MS * 3)
    item = model.item(0)
    assert isinstance(item, MessageItem)
    [block] = item.tail
    assert isinstance(block, CodeDocument)
    renders = item.renders
    for i in range(300):
        model.append_delta(f"value_{i} = {i}  # \x1b[2K\n")
        if i % 50 == 0:
            qtbot.wait(RENDER_INTERVAL_MS * 2)
    qtbot.wait(RENDER_INTERVAL_MS * 3)
    assert item.tail == [block], "the same document, grown"
    assert item.renders == renders, "no rebuild while the block grows"
    assert block.code().split("\n")[-1] == "value_299 = 299  # \\x1b[2K"
    assert len({f.foreground().color().name() for f in _formats(block)}) == 1, (
        "plain while streaming")
    model.append_delta("```\n\nDone.")
    model.finish_text(item.text)
    code = [d for d in item.documents() if isinstance(d, CodeDocument)]
    assert len(code) == 1 and code[0].code().count("\n") == 299
    assert len({f.foreground().color().name() for f in _formats(code[0])}) >= 3, (
        "coloured once finished")
    assert item.documents()[-1].toPlainText() == "Done."


def _formats(doc: CodeDocument) -> list:  # type: ignore[type-arg]
    out = []
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            out.append(it.fragment().charFormat())
            it += 1
        block = block.next()
    return out


def _lines(n: int, fmt: str = "line {i} of the log") -> str:
    return "".join(fmt.format(i=i) + "\n" for i in range(n))


@pytest.mark.parametrize("text, cut_after_line", [
    (_lines(250), 200),
    (_lines(99), 0),
    (_lines(150, "- item {i}"), 0),
    (_lines(150, "| {i} | x |"), 0),
    (_lines(150, "    indented {i}"), 0),
    (_lines(150, "> quoted {i}"), 0),
    (_lines(150, "{i}. step"), 0),
    ("`open code span\n" + _lines(150), 0),
    ("**bold starts\n" + _lines(150) + "ends**\n", 0),
    ("para\n\n" + _lines(150), 101),
])
def test_long_paragraphs_are_cut_only_where_nothing_can_change(
        text: str, cut_after_line: int) -> None:
    from desktop.chat.markdown import LONG_PARAGRAPH, split_stable

    cut = split_stable(text)
    assert text[:cut].count("\n") == (cut_after_line // LONG_PARAGRAPH * LONG_PARAGRAPH
                                      if cut_after_line != 101 else 2 + LONG_PARAGRAPH)
    assert split_stable(text + "more\n") >= cut, "a cut never moves back"


def test_a_two_thousand_line_paragraph_streams_in_small_pieces(qtbot: QtBot) -> None:
    view = shown_view(qtbot)
    model = view.chat_model()
    lines = [f"line {i} with **bold** and `code`" for i in range(2000)]
    for i, line in enumerate(lines):
        model.append_delta(line + "\n")
        if i % 200 == 0:
            qtbot.wait(RENDER_INTERVAL_MS * 2)
    qtbot.wait(RENDER_INTERVAL_MS * 3)
    item = model.item(0)
    assert isinstance(item, MessageItem)
    assert len(item.segments) >= 8
    assert all(doc.toPlainText().count("\n") < 300 for doc in item.documents())
    seams = [(a.rootFrame().frameFormat().bottomMargin(), b.rootFrame().frameFormat().topMargin())
             for a, b in zip(item.segments, item.segments[1:], strict=False)]
    assert seams and all(seam == (0, 0) for seam in seams), "the cut paragraph reads as one"
    model.finish_text(item.text)
    shown = "\n".join(doc.toPlainText() for doc in item.documents())
    assert shown.split("\n") == [line.replace("**", "").replace("`", "") for line in lines]



def test_pieces_cut_at_blank_lines_keep_their_space(qtbot: QtBot) -> None:
    item = MessageItem(Role.ASSISTANT, "first paragraph\n\nsecond\n\nthird", streaming=True)
    item.layout(400)
    assert len(item.segments) == 1 and len(item.tail) == 1
    margins = [(d.rootFrame().frameFormat().topMargin(), d.rootFrame().frameFormat()
                .bottomMargin()) for d in item.documents()]
    assert margins == [(2, 2)] * 2
