"""Copying from the chat with the real view: drag-select part of a message and Ctrl+C, double
click a word, a code block's Copy button, "Copy message" without a role prefix; and scrolling
a wide code block sideways."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QGuiApplication, QWheelEvent
from PySide6.QtWidgets import QMenu
from pytestqt.qtbot import QtBot

from desktop.chat.documents import CodeDocument
from desktop.chat.geometry import message_pieces
from desktop.chat.model import MessageItem, Role, message_text
from desktop.chat.view import ChatView
from tests.desktop.chat_views import shown_view


def make_view(qtbot: QtBot, *messages: tuple[Role, str]) -> ChatView:
    view = shown_view(qtbot, 640, 600)
    model = view.chat_model()
    for role, text in messages:
        model.add_message(role, text)
    qtbot.waitUntil(lambda: view.visualRect(model.index(model.rowCount() - 1)).height() > 30)
    return view


def text_point(view: ChatView, row: int, piece: int, position: int) -> QPoint:
    """Where a character of a message is on screen."""
    item = view.chat_model().item(row)
    assert isinstance(item, MessageItem)
    box = message_pieces(item, QRectF(view.visualRect(view.model().index(row, 0))))[piece]
    block = box.doc.findBlock(position)
    line = block.layout().lineForTextPosition(position - block.position())
    x, _ = line.cursorToX(position - block.position())
    rect = box.doc.documentLayout().blockBoundingRect(block)
    local = QPointF(rect.left() + x, rect.top() + line.y() + line.height() / 2)
    return (box.origin + local).toPoint()


def drag(qtbot: QtBot, view: ChatView, start: QPoint, end: QPoint) -> None:
    viewport = view.viewport()
    qtbot.mousePress(viewport, Qt.MouseButton.LeftButton, pos=start)
    for step in range(1, 6):
        qtbot.mouseMove(viewport, start + (end - start) * step / 5)
    qtbot.mouseRelease(viewport, Qt.MouseButton.LeftButton, pos=end)


def test_drag_selects_part_of_a_message_and_ctrl_c_copies_it(qtbot: QtBot) -> None:
    text = "The quick brown fox\njumps over **the lazy** dog."
    view = make_view(qtbot, (Role.ASSISTANT, text))
    [doc] = view.chat_model().item(0).documents()  # type: ignore[union-attr]
    shown = doc.toPlainText()
    start, end = shown.index("brown"), shown.index("lazy") + len("lazy")
    drag(qtbot, view, text_point(view, 0, 0, start), text_point(view, 0, 0, end))
    assert view.selected_text() == "brown fox\njumps over the lazy"
    QGuiApplication.clipboard().clear()
    qtbot.keyClick(view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QGuiApplication.clipboard().text() == "brown fox\njumps over the lazy"
    # Dragging backwards selects the same text; a plain click clears the selection.
    drag(qtbot, view, text_point(view, 0, 0, end), text_point(view, 0, 0, start))
    assert view.selected_text() == "brown fox\njumps over the lazy"
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=text_point(view, 0, 0, 2))
    assert view.selected_text() == ""


def test_a_selection_can_span_prose_and_code_and_the_user_message(qtbot: QtBot) -> None:
    view = make_view(qtbot, (Role.USER, "please run\nit"),
                     (Role.ASSISTANT, "Run this:\n\n```sh\nmake test\n```\n\nthen tell me."))
    drag(qtbot, view, text_point(view, 0, 0, 0), text_point(view, 0, 0, 13))
    assert view.selected_text() == "please run\nit"
    item = view.chat_model().item(1)
    assert isinstance(item, MessageItem) and len(item.documents()) == 3
    drag(qtbot, view, text_point(view, 1, 0, 4), text_point(view, 1, 2, 4))
    assert view.selected_text() == "this:\nmake test\nthen"


def test_double_click_selects_a_word(qtbot: QtBot) -> None:
    view = make_view(qtbot, (Role.ASSISTANT, "alpha beta gamma"))
    qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton,
                      pos=text_point(view, 0, 0, 8))
    assert view.selected_text() == "beta"


def test_the_copy_button_copies_the_code_block_as_shown(qtbot: QtBot) -> None:
    code = "for f in *.txt; do\n\techo \"$f\" # \x1b[2K\ndone"
    view = make_view(qtbot, (Role.ASSISTANT, f"one\n\n```sh\n{code}\n```\n\n```py\nx = 1\n```"))
    item = view.chat_model().item(0)
    assert isinstance(item, MessageItem)
    boxes = message_pieces(item, QRectF(view.visualRect(view.model().index(0, 0))))
    first, second = (b for b in boxes if isinstance(b.doc, CodeDocument))
    assert first.copy is not None and second.copy is not None
    QGuiApplication.clipboard().clear()
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=first.copy.center().toPoint())
    assert QGuiApplication.clipboard().text() == code.replace("\x1b", "\\x1b")
    assert view.copied(first.doc) and not view.copied(second.doc)
    assert view.selected_text() == "", "the button does not start a selection"
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=second.copy.center().toPoint())
    assert QGuiApplication.clipboard().text() == "x = 1"


def test_copy_message_has_no_role_prefix(qtbot: QtBot) -> None:
    view = make_view(qtbot, (Role.USER, "my question"), (Role.ASSISTANT, "**the** answer\x1b"))
    model = view.chat_model()
    assert message_text(model.item(0)) == "my question"
    assert message_text(model.item(1)) == "**the** answer\\x1b"
    for row, expected in ((0, "my question"), (1, "**the** answer\\x1b")):
        QGuiApplication.clipboard().clear()
        view.customContextMenuRequested.emit(view.visualRect(model.index(row)).center())
        menu = [m for m in view.findChildren(QMenu) if m.isVisible()][-1]
        actions = {a.text(): a for a in menu.actions()}
        assert "Copy" not in actions, "nothing is selected"
        actions["Copy message"].trigger()
        menu.close()
        assert QGuiApplication.clipboard().text() == expected
    view.setCurrentIndex(model.index(1))
    qtbot.keyClick(view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QGuiApplication.clipboard().text() == "**the** answer\\x1b"


def test_a_wide_code_block_scrolls_sideways_and_a_narrow_one_does_not(qtbot: QtBot) -> None:
    wide = "echo " + "x" * 400
    view = make_view(qtbot, (Role.ASSISTANT, f"```sh\n{wide}\n```\n\n```sh\nls\n```"))
    item = view.chat_model().item(0)
    assert isinstance(item, MessageItem)
    boxes = message_pieces(item, QRectF(view.visualRect(view.model().index(0, 0))))
    wide_box, narrow_box = boxes
    assert wide_box.bar is not None and narrow_box.bar is None
    before = view.viewport().grab().toImage()

    def wheel(box_center: QPointF, dx: int) -> None:
        event = QWheelEvent(box_center, view.viewport().mapToGlobal(box_center), QPoint(0, 0),
                            QPoint(dx, 0), Qt.MouseButton.NoButton,
                            Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
        QGuiApplication.sendEvent(view.viewport(), event)

    assert isinstance(wide_box.doc, CodeDocument) and isinstance(narrow_box.doc, CodeDocument)
    wheel(wide_box.clip.center(), -240)
    assert wide_box.doc.scroll_x > 0
    wheel(narrow_box.clip.center(), -240)
    assert narrow_box.doc.scroll_x == 0
    assert view.viewport().grab().toImage() != before, "the block was drawn scrolled"
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=QPoint(int(wide_box.bar.right()) - 1, int(wide_box.bar.center().y())))
    assert wide_box.doc.scroll_x == wide_box.doc.max_scroll(wide_box.clip.width())
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=QPoint(int(wide_box.bar.left()), int(wide_box.bar.center().y())))
    assert wide_box.doc.scroll_x == 0
