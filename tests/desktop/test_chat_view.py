"""The chat view: safe Markdown, throttled streaming, tool cards, links, the prompt box."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QPoint, QRectF, Qt, QUrl
from PySide6.QtGui import QFont, QTextCursor
from pytestqt.qtbot import QtBot

from desktop.chat.documents import CodeDocument
from desktop.chat.geometry import message_pieces
from desktop.chat.markdown import render_markdown, split_stable
from desktop.chat.model import RENDER_INTERVAL_MS, ChatModel, MessageItem, Role, ToolCardItem
from desktop.chat.prompt import PromptBox
from desktop.chat.view import ChatView
from tests.desktop.chat_views import shown_view


def make_view(qtbot: QtBot) -> ChatView:
    return shown_view(qtbot)


def test_raw_html_is_shown_as_text_and_images_are_not_loaded(qtbot: QtBot, tmp_path: Path) -> None:
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"not an image")
    text = f'<b>bold?</b> <img src="file://{secret}">\n\n![x](file://{secret})'
    [doc] = render_markdown(text, 400)
    assert "<b>bold?</b>" in doc.toPlainText()
    assert doc.loadResource(2, QUrl.fromLocalFile(str(secret))).isEmpty()
    cursor = QTextCursor(doc)
    cursor.setPosition(doc.toPlainText().index("bold?") + 1)
    assert cursor.charFormat().fontWeight() == QFont.Weight.Normal
    assert not cursor.charFormat().isImageFormat()


def test_code_blocks_are_highlighted(qtbot: QtBot) -> None:
    [doc] = render_markdown("```python\ndef f(x):\n    return 1\n```", 400)
    assert isinstance(doc, CodeDocument) and doc.language == "python"
    assert doc.code() == "def f(x):\n    return 1"
    colours = set()
    block = doc.begin()
    it = block.begin()
    while not it.atEnd():
        colours.add(it.fragment().charFormat().foreground().color().name())
        it += 1
    assert len(colours) >= 3, "keyword, function name and the rest in different colours"


def test_split_stable_keeps_open_code_fences_in_the_tail() -> None:
    text = "para one\n\n```py\nx = 1\n\ny = 2\n"
    assert text[: split_stable(text)] == "para one\n\n"
    assert split_stable("no blank line yet") == 0
    closed = "a\n\n```\ncode\n```\n\nb"
    assert closed[split_stable(closed):] == "b"


def test_streaming_rerenders_only_the_tail_and_is_throttled(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    model = view.chat_model()
    model.add_message(Role.USER, "hello")
    for i in range(301):
        model.append_delta(f"word{i} ")
        if i % 100 == 99:
            model.append_delta("\n\n")
            qtbot.wait(RENDER_INTERVAL_MS * 3)
    item = model.items()[-1]
    assert isinstance(item, MessageItem) and item.streaming
    qtbot.wait(RENDER_INTERVAL_MS * 3)
    # 304 deltas, but only a handful of renders: the timer throttles, deltas don't.
    assert item.renders <= 15
    # Finished paragraphs are frozen segments; only the unfinished words are the tail.
    assert len(item.segments) == 3
    assert len(item.tail) == 1 and item.tail[0].toPlainText().startswith("word300")
    first_segment = item.segments[0]
    model.append_delta("more")
    qtbot.wait(RENDER_INTERVAL_MS * 3)
    assert item.segments[0] is first_segment
    assert item.tail[0].toPlainText().endswith("more")
    renders = item.renders
    model.finish_text(item.text)
    assert not item.streaming and item.tail == []
    assert item.segments[0] is first_segment and item.renders == renders + 1, (
        "finishing renders only the last unfinished piece")
    model.add_message(Role.ASSISTANT, "x")
    model.finish_text("a different final text")
    assert model.items()[-1].text == "a different final text"


def test_tool_cards_update_and_emit_their_call(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    model = view.chat_model()
    model.add_tool_card("call_1", "run_command", "ls -la", "running")
    model.update_tool_card("call_1", "ok", "12 ms")
    card = model.items()[0]
    assert isinstance(card, ToolCardItem) and card.status == "ok"
    assert "run_command" in model.data(model.index(0), Qt.ItemDataRole.AccessibleTextRole)
    with qtbot.waitSignal(view.tool_card_activated) as signal:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                         pos=view.visualRect(model.index(0)).center())
    assert signal.args == ["call_1"]
    assert view.scroll_to_card("call_1") and not view.scroll_to_card("nope")


def test_link_click_emits_but_never_navigates(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    model = view.chat_model()
    model.add_message(Role.ASSISTANT, "[docs](https://example.org/x)")
    qtbot.wait(10)
    item = model.items()[0]
    assert isinstance(item, MessageItem)
    [piece] = message_pieces(item, QRectF(view.visualRect(model.index(0))))
    hits = []
    view.link_activated.connect(hits.append)
    for x in range(int(piece.clip.left()) + 2, int(piece.clip.left()) + 60, 4):
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                         pos=QPoint(x, int(piece.clip.top()) + 10))
        if hits:
            break
    assert hits and hits[0].toString() == "https://example.org/x"
    assert model.items()[0].text == "[docs](https://example.org/x)"


def test_five_hundred_messages_build_and_scroll(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    model = view.chat_model()
    for i in range(500):
        model.add_message(Role.USER if i % 2 else Role.ASSISTANT, f"message **{i}**\n\n- a\n- b")
    # The view lays a long session out in batches, a few event-loop turns in all.
    qtbot.waitUntil(lambda: view.verticalScrollBar().maximum() > 500 * 40, timeout=10_000)
    view.scrollToBottom()
    qtbot.wait(20)
    def last() -> int:
        return view.indexAt(QPoint(view.viewport().width() // 2,
                                   view.viewport().height() - 20)).row()

    qtbot.waitUntil(lambda: last() == 499, timeout=5_000)


def test_prompt_enter_sends_shift_enter_newlines_esc_stops(qtbot: QtBot) -> None:
    box = PromptBox()
    qtbot.addWidget(box)
    sent: list[str] = []
    box.send.connect(sent.append)
    qtbot.keyClicks(box.edit, "line one")
    qtbot.keyClick(box.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(box.edit, "line two")
    qtbot.keyClick(box.edit, Qt.Key.Key_Return)
    assert sent == ["line one\nline two"] and box.edit.toPlainText() == ""
    box.set_running(True)
    with qtbot.waitSignal(box.escaped):  # the controller stops the run (or decides later)
        qtbot.keyClick(box.edit, Qt.Key.Key_Escape)
    qtbot.keyClicks(box.edit, "queued")
    qtbot.keyClick(box.edit, Qt.Key.Key_Return)
    assert sent == ["line one\nline two"], "no second run while one is running"


def test_dropping_a_folder_mentions_its_path_and_a_file_is_attached(
        qtbot: QtBot, tmp_path: Path) -> None:
    box = PromptBox()
    qtbot.addWidget(box)
    target = tmp_path / "my folder"
    target.mkdir()
    (tmp_path / "my file.txt").write_text("x")
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(target)),
                  QUrl.fromLocalFile(str(tmp_path / "my file.txt"))])
    assert box.edit.canInsertFromMimeData(data)
    box.edit.insertFromMimeData(data)
    assert box.edit.toPlainText() == f'"{target}"'
    assert [chip.name for chip in box.tray.chips()] == ["my file.txt"]


def test_switching_models_leaves_the_hidden_one_streaming(qtbot: QtBot) -> None:
    view = make_view(qtbot)
    first = view.chat_model()
    second = ChatModel(view)
    view.setModel(second)
    first.append_delta("still streaming in the background")
    qtbot.wait(RENDER_INTERVAL_MS * 3)
    assert view.model() is second and second.rowCount() == 0
    assert first.items()[0].text == "still streaming in the background"


def test_links_take_the_palette_link_colour(qtbot: QtBot) -> None:
    from PySide6.QtGui import QGuiApplication

    [doc] = render_markdown("see [the docs](https://example.org/x) now", 400)
    cursor = QTextCursor(doc)
    cursor.setPosition(doc.toPlainText().index("docs") + 1)
    fmt = cursor.charFormat()
    assert fmt.isAnchor() and fmt.anchorHref() == "https://example.org/x"
    assert fmt.foreground().color() == QGuiApplication.palette().link().color()
