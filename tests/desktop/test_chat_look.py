"""The conversation as a person uses it, on real widgets (offscreen): a call folded into one
line with its status icon that a click unfolds, its Undo once it changed files; the empty
chat's suggestions filling the composer; the jump to latest; a turn's Copy and Retry;
sending scrolling to your message; Send becoming Stop; the timeline out of the way until the
first call; and the icon set shipped whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QRectF, Qt
from PySide6.QtGui import QColor, QGuiApplication, QImage
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from desktop.call_status import STATUS_COLOURS
from desktop.chat.geometry import CARD_HEIGHT, MARGIN, card_box, row_box
from desktop.chat.model import ChatModel, Role, ToolCardItem
from desktop.chat.prompt import PromptBox
from desktop.chat.view import ChatView
from desktop.icons import NAMES, icon_pixmap
from desktop.resources import resources_dir
from kernel import events as ev
from kernel import protocol as p
from kernel.paths import AppPaths
from tests.desktop.chat_views import shown_view
from tests.desktop.test_main_window import load, make

CHANGE = {"path": "notes.txt", "kind": "created", "entry": "file", "added": 3, "removed": 0}


def _grab(view: ChatView) -> QImage:
    return view.viewport().grab().toImage()


def _card(model: ChatModel, call_id: str) -> ToolCardItem:
    row = model.card_row(call_id)
    assert row is not None
    item = model.item(row)
    assert isinstance(item, ToolCardItem)
    return item


def test_a_call_is_one_folded_line_with_its_status_icon_and_a_click_unfolds_it(
        qtbot: QtBot) -> None:
    view = shown_view(qtbot, 700, 400)
    model = view.chat_model()
    model.add_tool_card("c1", "run_command", "pytest -q", "running")
    model.update_tool_card("c1", "ok", "1.2 s", preview="3 passed")
    view.executeDelayedItemsLayout()
    index = model.index(0, 0)
    rect = QRectF(view.visualRect(index))
    assert rect.height() == pytest.approx(CARD_HEIGHT + MARGIN, abs=1), "one line"
    image = _grab(view)
    header = card_box(_card(model, "c1"), rect).header
    base = view.palette().color(view.palette().ColorRole.Base)
    green = QColor(STATUS_COLOURS["ok"])
    icon = [image.pixelColor(QPoint(x, y)) for x in range(int(header.left()),
                                                         int(header.left()) + 16)
            for y in range(int(header.top()), int(header.bottom()))]
    assert any(abs(c.hue() - green.hue()) < 12 and c.saturation() > 80 for c in icon)
    column = row_box(rect)
    assert all(image.pixelColor(QPoint(x, int(header.center().y()))).rgb() == base.rgb()
               for x in range(0, int(column.left()) - 8)), "no box drawn around it"
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=header.center().toPoint())
    assert _card(model, "c1").expanded
    qtbot.waitUntil(lambda: view.visualRect(index).height() > rect.height() + 20)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=header.center().toPoint())
    assert not _card(model, "c1").expanded


def test_a_call_that_changed_files_says_so_and_offers_undo_on_its_line(qtbot: QtBot) -> None:
    view = shown_view(qtbot, 700, 400)
    model = view.chat_model()
    model.add_tool_card("c1", "run_command", "make notes", "running")
    from desktop.chat.feed import apply_event

    apply_event(model, ev.ToolResultEvent("s", "c1", "run_command", False, None, 12.0, 4,
                                          changes=[CHANGE]))
    card = _card(model, "c1")
    assert card.changes == "1 file changed, +3 \u22120" and card.undo == "undoable"
    view.executeDelayedItemsLayout()
    undo = card_box(card, QRectF(view.visualRect(model.index(0, 0)))).undo
    assert undo is not None
    asked: list[str] = []
    view.undo_requested.connect(asked.append)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=undo.center().toPoint())
    assert asked == ["c1"] and not card.expanded, "Undo is not a click on the line"
    model.set_undo("c1", "undone")
    assert card_box(card, QRectF(view.visualRect(model.index(0, 0)))).undo is None


def test_the_empty_chat_offers_suggestions_that_fill_the_composer(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client)
    w = controller.window
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow)
    empty = w.chat.empty_state
    qtbot.waitUntil(empty.isVisible)
    assert empty.workspace.text() == "Working in /tmp/ws"
    assert empty.mode.text().startswith("Ask mode: ") and "asks before" in empty.mode.text()
    button = empty.buttons[1]
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert w.prompt.edit.toPlainText() == button.text()
    assert QApplication.focusWidget() is w.prompt.edit
    assert client.of(p.StartRun) == [], "a suggestion is only a start: the user sends it"
    client.batch.emit([p.EventMessage(ev.UserMessage("s1", "hello"))])
    assert not empty.isVisible()


def test_jump_to_latest_shows_while_reading_above_and_takes_you_down(qtbot: QtBot) -> None:
    view = shown_view(qtbot, 600, 400)
    model = view.chat_model()
    for n in range(40):
        model.add_message(Role.ASSISTANT, f"answer {n}\n\nwith a second paragraph")
    qtbot.waitUntil(lambda: view.verticalScrollBar().maximum() > 1000)
    view.scrollToBottom()
    qtbot.waitUntil(view.at_bottom)
    assert not view.jump.isVisible()
    view.verticalScrollBar().setValue(0)
    qtbot.waitUntil(view.jump.isVisible)
    qtbot.mouseClick(view.jump, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.at_bottom() and not view.jump.isVisible())


def test_a_turn_has_copy_and_the_last_answer_retry_and_your_messages_copy_and_edit(
        qtbot: QtBot) -> None:
    view = shown_view(qtbot, 700, 500)
    model = view.chat_model()
    model.add_message(Role.USER, "first question")
    model.add_message(Role.ASSISTANT, "Looking.")
    model.add_tool_card("c1", "read_file", "a.txt", "ok")
    model.add_message(Role.ASSISTANT, "It says **hi**.")
    model.end_turn()
    model.add_message(Role.USER, "second question")
    model.add_message(Role.ASSISTANT, "Second answer.")
    model.end_turn()
    view.executeDelayedItemsLayout()
    actions = view.turn_actions
    qtbot.waitUntil(actions.isVisible)
    copy, retry = actions.buttons
    assert actions.row == model.rowCount() - 1 and retry.isVisible()
    retried: list[bool] = []
    view.regenerate_requested.connect(lambda: retried.append(True))
    qtbot.mouseClick(retry, Qt.MouseButton.LeftButton)
    assert retried == [True]
    # The pointer over the first turn's answer: its own Copy, no Retry (not the last).
    first_end = 3
    rect = view.visualRect(model.index(first_end, 0))
    qtbot.mouseMove(view.viewport(), rect.center())
    qtbot.waitUntil(lambda: actions.row == first_end)
    assert not retry.isVisible()
    qtbot.mouseClick(copy, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == "Looking.\n\nIt says **hi**."
    # Over the user's messages: Copy, and Edit only on the last one.
    mine = view.message_actions
    copy_mine, edit = mine.buttons
    edits: list[bool] = []
    view.edit_requested.connect(lambda: edits.append(True))
    for row, editable in ((0, False), (model.last_user_row(), True)):
        assert row is not None
        qtbot.mouseMove(view.viewport(), view.visualRect(model.index(row, 0)).center())
        qtbot.waitUntil(lambda row=row: mine.row == row and mine.isVisible())
        assert edit.isVisibleTo(mine) is editable
    qtbot.mouseClick(edit, Qt.MouseButton.LeftButton)
    assert edits == [True]
    qtbot.mouseClick(copy_mine, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == "second question"


def test_sending_scrolls_to_your_message_and_send_becomes_stop(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client, *[ev.AssistantText("s1", f"old answer {n}\n\n" * 3)
                               for n in range(30)])
    w = controller.window
    chat = w.chat
    qtbot.waitUntil(lambda: chat.verticalScrollBar().maximum() > 500)
    chat.verticalScrollBar().setValue(0)
    assert not chat.at_bottom()
    assert w.prompt.send_button.isVisible() and not w.prompt.stop_button.isVisible()
    qtbot.keyClicks(w.prompt.edit, "new question")
    qtbot.keyClick(w.prompt.edit, Qt.Key.Key_Return)
    assert client.of(p.StartRun) == [p.StartRun("s1", "new question")]
    client.batch.emit([p.RunStatus("s1", "running"),
                       p.EventMessage(ev.UserMessage("s1", "new question"))])
    def last() -> int:
        return chat.indexAt(QPoint(chat.viewport().width() // 2,
                                   chat.viewport().height() - 12)).row()

    qtbot.waitUntil(lambda: last() == chat.model().rowCount() - 1)  # your message, in view
    assert w.prompt.stop_button.isVisible() and not w.prompt.send_button.isVisible()
    qtbot.mouseClick(w.prompt.stop_button, Qt.MouseButton.LeftButton)
    assert client.of(p.CancelRun) == [p.CancelRun("s1")]


def test_the_timeline_waits_for_the_first_tool_call_and_a_chord_opens_it(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client, ev.UserMessage("s1", "hi"), ev.AssistantText("s1", "hello"))
    dock = controller.window.timeline_dock
    assert not dock.isVisibleTo(controller.window)
    client.batch.emit([p.EventMessage(ev.ToolCallStarted("s1", "c1", "read_file",
                                                         {"path": "a"}, "a"))])
    assert dock.isVisibleTo(controller.window)
    toggle = dock.toggleViewAction()
    assert toggle.shortcut().toString() == "Ctrl+Shift+T"
    toggle.trigger()  # the user closes it: that choice holds for the next calls
    client.batch.emit([p.EventMessage(ev.ToolCallStarted("s1", "c2", "read_file",
                                                         {"path": "b"}, "b"))])
    assert not dock.isVisibleTo(controller.window)


def test_the_composer_holds_attach_model_mode_and_send() -> None:
    box = PromptBox()
    names = [box.controls.itemAt(i).widget() for i in range(box.controls.count())]
    assert box.attach_button in names and box.send_button in names
    assert box.frame.isAncestorOf(box.edit) and not box.send_button.icon().isNull()


@pytest.mark.parametrize("name", sorted(NAMES))
def test_every_icon_ships_as_svg_and_png_and_takes_its_colour(name: str) -> None:
    folder = Path(resources_dir()) / "icons" / "ui"
    assert (folder / f"{name}.svg").read_text().startswith("<svg")
    assert (folder / f"{name}.png").stat().st_size > 100
    pixmap = icon_pixmap(name, QColor("#cf222e"), 24)
    image = pixmap.toImage()
    inked = [image.pixelColor(x, y) for x in range(24) for y in range(24)
             if image.pixelColor(x, y).alpha() > 200]
    assert inked and all(c.red() > 150 and c.green() < 80 for c in inked)
    assert {path.stem for path in folder.glob("*.svg")} == NAMES


def test_the_mode_picker_says_what_each_mode_allows(qtbot: QtBot) -> None:
    from PySide6.QtGui import QPainter
    from PySide6.QtWidgets import QStyleOptionViewItem

    from desktop.main_window import MainWindow
    from desktop.words import MODE_ALLOWS
    from kernel.modes import MODES

    window = MainWindow()
    qtbot.addWidget(window)
    combo = window.mode_combo
    assert [combo.itemText(row) for row in range(combo.count())] == list(MODES)
    delegate = combo.itemDelegate()
    for row, mode in enumerate(MODES):
        assert combo.itemData(row, Qt.ItemDataRole.ToolTipRole) == MODE_ALLOWS[mode]
        option = QStyleOptionViewItem()
        option.initFrom(combo.view())
        index = combo.model().index(row, 0)
        size = delegate.sizeHint(option, index)
        assert size.height() >= 2 * option.fontMetrics.height(), "a name and a line under it"
        option.rect = QRectF(0, 0, size.width(), size.height()).toRect()
        image = QImage(size, QImage.Format.Format_RGB32)
        image.fill(QColor("white"))
        painter = QPainter(image)
        delegate.paint(painter, option, index)
        painter.end()
        lower = [image.pixelColor(x, y) for x in range(size.width())
                 for y in range(size.height() // 2 + 2, size.height())]
        assert any(c.lightness() < 200 for c in lower), f"{mode}: its line is drawn"
    window.set_mode("auto-edit")
    assert combo.toolTip() == f"Auto-edit mode: {MODE_ALLOWS['auto-edit']}"
