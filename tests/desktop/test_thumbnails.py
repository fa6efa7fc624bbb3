"""Attached images as pictures, in the real widgets (offscreen): the composer's chips (the
picture, its keyboard-reachable remove button, a broken image's placeholder, one decode off
the UI thread) and a sent prompt's pictures in its bubble, asked of the kernel."""

from __future__ import annotations

import base64
import io
import threading
from pathlib import Path

import pytest
from PIL import Image
from PySide6.QtCore import QModelIndex, QPoint, Qt
from PySide6.QtGui import QColor, QImage, QPixmap
from pytestqt.qtbot import QtBot

from desktop.chat import thumbs
from desktop.chat.attach import PictureChip
from desktop.chat.geometry import picture_boxes
from desktop.chat.model import MessageItem
from desktop.chat.prompt import PromptBox
from desktop.chat.thumbs import BROKEN, CHIP, THUMB, PromptPicture, shared_thumbnails
from kernel import events as ev
from kernel import protocol as p
from kernel.paths import AppPaths
from kernel.worker.images import prompt_images
from tests.desktop.test_main_window import load, make

RED, BLUE = (220, 0, 0), (0, 0, 220)


def halves(size: tuple[int, int], kind: str = "PNG") -> bytes:
    image = Image.new("RGB", size, RED)
    image.paste(BLUE, (size[0] // 2, 0, size[0], size[1]))
    out = io.BytesIO()
    image.save(out, kind)
    return out.getvalue()


def near(colour: QColor, rgb: tuple[int, int, int]) -> bool:
    return all(abs(a - b) < 40 for a, b in zip(colour.getRgb()[:3], rgb, strict=True))


def box(qtbot: QtBot) -> PromptBox:
    prompt = PromptBox()
    qtbot.addWidget(prompt)
    prompt.resize(700, 200)
    prompt.show()
    return prompt


def loaded(qtbot: QtBot, key: object) -> QPixmap | str:
    qtbot.waitUntil(lambda: shared_thumbnails().get(key) not in (None, thumbs.LOADING))
    found = shared_thumbnails().get(key)
    assert found is not None
    return found


def test_an_image_is_a_picture_chip_removable_from_the_keyboard(
        qtbot: QtBot, tmp_path: Path) -> None:
    prompt = box(qtbot)
    (tmp_path / "wide.png").write_bytes(halves((900, 300)))
    (tmp_path / "notes.txt").write_text("hello")
    prompt.attach_files([str(tmp_path / "wide.png"), str(tmp_path / "notes.txt")])
    (chip,) = prompt.tray.findChildren(PictureChip)
    assert chip.accessibleName() == "Attachment wide.png"
    assert chip.toolTip().startswith("wide.png · ")
    picture = loaded(qtbot, chip.key)
    assert isinstance(picture, QPixmap)
    assert picture.deviceIndependentSize().toSize() == chip.size()
    assert chip.width() == chip.height() == CHIP
    shot = chip.grab().toImage()
    assert near(shot.pixelColor(8, CHIP // 2), RED)  # the middle of the image: both halves
    assert near(shot.pixelColor(CHIP - 8, CHIP - 8), BLUE)

    remove = chip.remove
    assert remove.accessibleName() == "Remove wide.png"
    assert remove.focusPolicy() & Qt.FocusPolicy.TabFocus
    remove.setFocus()
    qtbot.keyClick(remove, Qt.Key.Key_Space)
    assert [c.name for c in prompt.tray.chips()] == ["notes.txt"]


def test_a_broken_image_is_a_neutral_placeholder(qtbot: QtBot) -> None:
    prompt = box(qtbot)
    prompt.tray.add_image(b"\x89PNG\r\n\x1a\n" + b"\x00garbage" * 40, "bad.png")
    (chip,) = prompt.tray.findChildren(PictureChip)
    assert loaded(qtbot, chip.key) == BROKEN
    shot = chip.grab().toImage()
    middle = shot.pixelColor(CHIP // 2, 4)
    assert middle.alpha() == 255 and not near(middle, RED)
    assert [c.name for c in prompt.tray.chips()] == ["bad.png"]


def test_an_image_is_decoded_once_and_off_the_ui_thread(
        qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bool, int]] = []
    decode = thumbs.square_picture

    def counted(data: bytes, side: int) -> QImage:
        calls.append((threading.current_thread() is threading.main_thread(), side))
        return decode(data, side)

    monkeypatch.setattr(thumbs, "square_picture", counted)
    prompt = box(qtbot)
    (tmp_path / "photo.jpg").write_bytes(halves((2400, 1600), "JPEG"))
    prompt.attach_files([str(tmp_path / "photo.jpg")])
    (chip,) = prompt.tray.findChildren(PictureChip)
    assert isinstance(loaded(qtbot, chip.key), QPixmap)
    for n in range(3):  # each change builds the chips again: the picture is kept
        (tmp_path / f"{n}.txt").write_text("x")
        prompt.attach_files([str(tmp_path / f"{n}.txt")])
        prompt.tray.findChildren(PictureChip)[0].grab()
    assert calls == [(False, round(CHIP * chip.devicePixelRatioF()))]


def picture_summary(name: str, kind: str = "image", blocks: int = 1) -> dict[str, object]:
    return {"name": name, "kind": kind, "media_type": "image/png", "bytes": 10,
            "blocks": blocks}


def test_a_sent_prompts_pictures_come_from_the_kernel_into_its_bubble(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    w = controller.window
    w.resize(1000, 700)
    w.show()
    attachments = [picture_summary("wide.png"), picture_summary("n.txt", "text"),
                   picture_summary("gone.png", blocks=2)]
    load(controller, client, ev.UserMessage("s1", "what is this?", attachments, at_message=3,
                                            at_block=1))
    (asked,) = client.of(p.GetPromptImages)
    assert asked == p.GetPromptImages("s1", 3, 1, (1, 1, 2), 2 * THUMB)

    # The kernel's answer, made by the kernel's own function from a stored message.
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": base64.b64encode(halves((900, 300)))
                                         .decode()}}
    stored = {"role": "user", "content": [{"type": "text", "text": "earlier"},
                                          {"type": "text", "text": "what is this?"},
                                          image, {"type": "text", "text": "n"}]}
    images = prompt_images(stored, 1, [1, 1, 2], 2 * THUMB)
    assert images[0] and images[1:] == ("", "")
    client.batch.emit([p.PromptImages("s1", 3, 1, images)])
    first, third = PromptPicture("s1", 3, 1, 0), PromptPicture("s1", 3, 1, 2)
    assert isinstance(loaded(qtbot, first), QPixmap) and loaded(qtbot, third) == BROKEN

    view = w.chat
    model = view.model()
    row = next(r for r in range(model.rowCount())
               if isinstance(controller.views["s1"].chat.items()[r], MessageItem))
    item = controller.views["s1"].chat.items()[row]
    assert isinstance(item, MessageItem) and item.pictures == (first, third)
    rect = view.visualRect(model.index(row, 0, QModelIndex()))
    boxes = picture_boxes(item, rect.toRectF())
    assert [b.width() for b in boxes] == [THUMB, THUMB]
    shot = view.viewport().grab().toImage()

    def at(x: float, y: float) -> QColor:
        return shot.pixelColor(QPoint(int(x), int(y)))

    picture, placeholder = boxes
    assert near(at(picture.left() + 10, picture.center().y()), RED)
    assert near(at(picture.right() - 10, picture.center().y()), BLUE)
    assert not near(at(placeholder.left() + 10, placeholder.center().y()), RED)

    # Editing the message: its images are their pictures in the composer too.
    controller.begin_edit()
    chips = w.prompt.tray.findChildren(PictureChip)
    assert [c.key for c in chips] == [first, third]
    assert [c.accessibleName() for c in chips] == ["Attachment wide.png", "Attachment gone.png"]
    edit_shot = chips[0].grab().toImage()  # the whole picture, made smaller
    assert near(edit_shot.pixelColor(8, CHIP // 2), RED)
    assert near(edit_shot.pixelColor(CHIP // 2 + 6, CHIP // 2), BLUE)
    w.prompt.cancel_edit()

    # Shown again (a reload, a new kernel): nothing is asked twice.
    load(controller, client, ev.UserMessage("s1", "what is this?", attachments, at_message=3,
                                            at_block=1))
    assert len(client.of(p.GetPromptImages)) == 1


def test_a_prompt_from_before_places_were_recorded_shows_placeholders(
        qtbot: QtBot, reins_home: AppPaths) -> None:
    controller, client = make(qtbot, reins_home)
    load(controller, client, ev.UserMessage("s1", "old", [picture_summary("a.png")]))
    assert client.of(p.GetPromptImages) == []
    assert shared_thumbnails().get(PromptPicture("s1", -1, 0, 0)) == BROKEN
