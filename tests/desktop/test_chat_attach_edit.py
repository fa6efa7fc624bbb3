"""Attachments and editing in the real widgets (pytest-qt, offscreen): the prompt's chips
(Attach, drop, paste a file or an image, remove, refusals with the reason), editing the last
message in the prompt box, the chat's Edit/Regenerate actions and drops, and the chat showing
the current branch when what was said is superseded."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QColor, QDropEvent, QImage
from PySide6.QtWidgets import QLabel, QMenu, QToolButton
from pytestqt.qtbot import QtBot

from desktop.chat.attach import Kept, for_kernel, kept_chips
from desktop.chat.feed import apply_event
from desktop.chat.model import ChatModel, MessageItem, Role, ToolCardItem, timestamp_text
from desktop.chat.prompt import PromptBox
from kernel import events as ev
from kernel.shared.attachments import Attachment
from tests.desktop.chat_views import shown_view


def png(size: tuple[int, int] = (4, 3)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (9, 9, 9)).save(out, format="PNG")
    return out.getvalue()


def box(qtbot: QtBot) -> PromptBox:
    prompt = PromptBox()
    qtbot.addWidget(prompt)
    prompt.show()
    return prompt


def chip_labels(prompt: PromptBox) -> list[str]:
    return [label.text() for label in prompt.tray.findChildren(QLabel)
            if label is not prompt.tray.problem and not label.isHidden()
            and " · " in label.text()]


def test_files_become_chips_and_bad_ones_are_refused_with_the_reason(
        qtbot: QtBot, tmp_path: Path) -> None:
    prompt = box(qtbot)
    assert prompt.tray.isHidden()
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "shot.png").write_bytes(png())
    (tmp_path / "prog").write_bytes(b"\x7fELF\x00\x00")
    (tmp_path / "big.log").write_bytes(b"x" * 300_000)
    prompt.attach_files([str(tmp_path / n) for n in ("notes.txt", "shot.png", "prog",
                                                     "big.log")])
    assert [c.name for c in prompt.tray.chips()] == ["notes.txt", "shot.png"]
    assert [c.kind for c in prompt.tray.chips()] == ["text", "image"]
    # The text file is its name and size; the image is a picture (test_thumbnails.py).
    assert prompt.tray.isVisible() and chip_labels(prompt) == ["notes.txt · 5 bytes"]
    problem = prompt.tray.problem.text()
    assert "prog is not a text file" in problem and "text files up to 256 KB" in problem
    assert prompt.edit.toPlainText() == ""
    remove = next(b for b in prompt.tray.findChildren(QToolButton)
                  if b.accessibleName() == "Remove notes.txt")
    qtbot.mouseClick(remove, Qt.MouseButton.LeftButton)
    assert [c.name for c in prompt.tray.chips()] == ["shot.png"]
    files, keep = for_kernel(prompt.take_attachments())
    assert [f.name for f in files] == ["shot.png"] and keep == ()
    assert prompt.tray.chips() == [] and prompt.tray.isHidden()


def test_a_dropped_file_is_attached_and_a_dropped_folder_is_mentioned(
        qtbot: QtBot, tmp_path: Path) -> None:
    prompt = box(qtbot)
    target = tmp_path / "my file.txt"
    target.write_text("x")
    folder = tmp_path / "a folder"
    folder.mkdir()
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(target)), QUrl.fromLocalFile(str(folder))])
    assert prompt.edit.canInsertFromMimeData(data)
    prompt.edit.insertFromMimeData(data)
    assert [c.name for c in prompt.tray.chips()] == ["my file.txt"]
    assert prompt.edit.toPlainText() == f'"{folder}"'


def test_a_pasted_image_is_attached_and_pasted_text_stays_text(qtbot: QtBot) -> None:
    prompt = box(qtbot)
    image = QImage(30, 20, QImage.Format.Format_RGB32)
    image.fill(QColor("red"))
    data = QMimeData()
    data.setImageData(image)
    assert prompt.edit.canInsertFromMimeData(data)
    prompt.edit.insertFromMimeData(data)
    (chip,) = prompt.tray.chips()
    assert isinstance(chip, Attachment)
    assert (chip.name, chip.kind, chip.media_type) == ("pasted image.png", "image",
                                                       "image/png")
    with Image.open(io.BytesIO(chip.data)) as pasted:
        assert pasted.size == (30, 20)
    words = QMimeData()
    words.setText("just words")
    prompt.edit.insertFromMimeData(words)
    assert prompt.edit.toPlainText() == "just words" and len(prompt.tray.chips()) == 1


def test_editing_the_last_message_in_the_prompt_box(qtbot: QtBot) -> None:
    prompt = box(qtbot)
    prompt.edit.setPlainText("a draft")
    prompt.tray.add_image(png())
    sent: list[str] = []
    edited: list[str] = []
    prompt.send.connect(sent.append)
    prompt.edit_submitted.connect(edited.append)
    prompt.begin_edit("the old message", kept_chips([
        {"name": "a.txt", "kind": "text", "bytes": 10, "blocks": 1},
        {"name": "b.png", "kind": "image", "bytes": 2048, "blocks": 2}]))
    assert prompt.editing and prompt.editing_label.isVisible()
    assert prompt.edit.toPlainText() == "the old message"
    assert chip_labels(prompt) == ["a.txt · 10 bytes", "b.png · 2 KB"]
    qtbot.keyClick(prompt.edit, Qt.Key.Key_Escape)
    assert not prompt.editing and prompt.edit.toPlainText() == "a draft"
    assert [c.name for c in prompt.tray.chips()] == ["pasted image.png"], "the draft is back"
    prompt.take_attachments()
    prompt.begin_edit("the old message", kept_chips([
        {"name": "a.txt", "kind": "text", "bytes": 10}, {"name": "b.png", "bytes": 2048}]))
    prompt.tray.remove(prompt.tray.chips()[0])
    prompt.edit.setPlainText("the new message")
    qtbot.keyClick(prompt.edit, Qt.Key.Key_Return)
    assert edited == ["the new message"] and sent == [] and not prompt.editing
    files, keep = for_kernel(prompt.take_attachments())
    assert files == () and keep == (1,)


def test_for_kernel_sends_new_files_as_base64_and_kept_ones_by_position() -> None:
    chips = [Kept(2, "old.txt", "text", 3), Attachment("n.txt", "text", "text/plain", b"hi")]
    files, keep = for_kernel(chips)
    assert [(f.name, f.data) for f in files] == [("n.txt", "aGk=")] and keep == (2,)


def _conversation(model: ChatModel) -> None:
    for event in [
        ev.UserMessage("s", "first", attachments=[{"name": "n.txt", "kind": "text",
                                                    "bytes": 4000, "blocks": 1}]),
        ev.AssistantText("s", "first answer"),
        ev.UserMessage("s", "second"),
        ev.ToolCallStarted("s", call_id="c1", name="read_file", input={"path": "a"}),
        ev.ToolResultEvent("s", call_id="c1", name="read_file", is_error=False),
        ev.AssistantText("s", "second answer"),
        ev.RunFinished("s", stop_reason="end_turn"),
    ]:
        apply_event(model, event, at=1_700_000_000.0)


def _shown(model: ChatModel) -> list[str]:
    return [i.text if isinstance(i, MessageItem) else f"card {i.call_id}"
            for i in model.items()]


def test_the_chat_shows_the_current_branch_after_an_edit_or_a_regeneration(
        qtbot: QtBot) -> None:
    model = ChatModel()
    _conversation(model)
    assert _shown(model) == ["first", "first answer", "second", "card c1", "second answer"]
    apply_event(model, ev.MessagesSuperseded("s", reason="regenerate", first_index=2))
    assert _shown(model) == ["first", "first answer", "second"]
    assert model.card_row("c1") is None
    apply_event(model, ev.AssistantText("s", "another answer"))
    apply_event(model, ev.MessagesSuperseded("s", reason="edit", first_index=2))
    assert _shown(model) == ["first", "first answer"]
    apply_event(model, ev.UserMessage("s", "second, edited"), at=1_700_000_000.0)
    assert model.last_user_row() == 2
    edited = model.items()[2]
    assert isinstance(edited, MessageItem) and edited.edited
    edited.layout(400)
    assert edited.documents()[-1].toPlainText() == "edited"
    assert (timestamp_text(edited) or "").endswith("(edited)")
    apply_event(model, ev.UserMessage("s", "third"))
    assert not model.items()[-1].edited, "only the message that replaced one"
    first = model.items()[0]
    assert isinstance(first, MessageItem) and first.attachments[0]["name"] == "n.txt"
    first.layout(400)
    assert first.documents()[-1].toPlainText() == "Attached: n.txt (4 KB)"
    assert timestamp_text(first) is not None


def _menu_actions(qtbot: QtBot, view, row: int) -> list[str]:
    rect = view.visualRect(view.model().index(row, 0))
    view._context_menu(QPoint(rect.left() + 20, rect.center().y()))
    menus = [m for m in view.findChildren(QMenu) if m.isVisible()]
    actions = [a.text() for a in menus[-1].actions()]
    for menu in menus:
        menu.close()
        menu.deleteLater()
    return actions


def test_edit_and_regenerate_are_offered_on_the_last_exchange_only(qtbot: QtBot) -> None:
    view = shown_view(qtbot, 600, 600)
    model = view.chat_model()
    _conversation(model)
    view.executeDelayedItemsLayout()
    rows = {text: r for r, text in enumerate(_shown(model))}
    assert "Edit message…" in _menu_actions(qtbot, view, rows["second"])
    assert "Edit message…" not in _menu_actions(qtbot, view, rows["first"])
    assert "Regenerate answer" in _menu_actions(qtbot, view, rows["second answer"])
    assert "Regenerate answer" not in _menu_actions(qtbot, view, rows["first answer"])
    with qtbot.waitSignal(view.edit_requested):
        rect = view.visualRect(model.index(rows["second"], 0))
        view._context_menu(QPoint(rect.left() + 20, rect.center().y()))
        menu = [m for m in view.findChildren(QMenu) if m.isVisible()][-1]
        next(a for a in menu.actions() if a.text() == "Edit message…").trigger()
        menu.close()
    assert isinstance(model.items()[rows["card c1"]], ToolCardItem)


def test_files_dropped_on_the_chat_go_to_the_prompt(qtbot: QtBot, tmp_path: Path) -> None:
    view = shown_view(qtbot)
    (tmp_path / "n.txt").write_text("x")
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(tmp_path / "n.txt"))])
    drop = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, data,
                      Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(view.files_dropped) as dropped:
        view.dropEvent(drop)
    assert dropped.args == [[str(tmp_path / "n.txt")]]
    image = QMimeData()
    picture = QImage(5, 5, QImage.Format.Format_RGB32)
    picture.fill(QColor("blue"))
    image.setImageData(picture)
    with qtbot.waitSignal(view.image_dropped) as pasted:
        view.dropEvent(QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, image,
                                  Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier))
    assert pasted.args[0].startswith(b"\x89PNG")
    assert isinstance(Role.USER, Role)
