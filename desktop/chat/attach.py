"""The prompt's attachments: removable chips above the prompt, filled by the Attach button,
by files dropped on the prompt or the chat, and by files or an image pasted from the
clipboard. Each file is checked when it is added (kernel.shared.attachments decides what it is: an
image, a PDF, text within the size cap); one that cannot be attached is refused with the
reason under the chips, and nothing else changes.

An image is a small rounded picture (`PictureChip`, decoded once off the UI thread by
desktop.chat.thumbs) with its remove button on it; other files are a name and a size.
Editing the last message shows its attachments as chips too (`Kept`): removing one leaves
it out of the edited message.
"""

from __future__ import annotations

import base64
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMimeData, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QImage, QPainter, QPaintEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from desktop.chat.thumbs import CHIP, draw_picture, shared_thumbnails
from kernel.shared.attachments import (
    MAX_ATTACHMENTS,
    Attachment,
    AttachmentError,
    format_size,
    load_attachment,
    read_attachment,
)

if TYPE_CHECKING:
    from kernel.protocol import AttachmentData

PASTED_IMAGE = "pasted image.png"


@dataclass(frozen=True)
class Kept:
    """An attachment of the message being edited (by its position there)."""

    index: int
    name: str
    kind: str
    size: int
    picture: Hashable | None = None
    """An image's picture in the history (its key in desktop.chat.thumbs)."""


Chip = Attachment | Kept


def for_kernel(chips: list[Chip]) -> tuple[tuple[AttachmentData, ...], tuple[int, ...]]:
    """The chips as a command carries them: the new files (base64) and, for an edit, the
    positions of the edited message's attachments that stay. (The protocol is loaded
    here, not with the prompt box: the first window paints without it.)"""
    from kernel import protocol as p

    files = tuple(p.AttachmentData(c.name, base64.b64encode(c.data).decode("ascii"))
                  for c in chips if isinstance(c, Attachment))
    return files, tuple(c.index for c in chips if isinstance(c, Kept))


def kept_chips(summaries: list[dict[str, Any]],
               pictures: Sequence[Hashable] = ()) -> list[Kept]:
    """The chips of a sent message's attachments (its user_message summaries), its images
    with their pictures in the history (`pictures`: one per image, in order)."""
    shown = iter(pictures)
    return [Kept(i, str(a.get("name", "?")), str(a.get("kind", "")), int(a.get("bytes", 0)),
                 next(shown, None) if a.get("kind") == "image" else None)
            for i, a in enumerate(summaries)]


def chip_text(chip: Chip) -> str:
    size = len(chip.data) if isinstance(chip, Attachment) else chip.size
    return f"{chip.name} · {format_size(size)}"


def attached_line(summaries: list[dict[str, Any]]) -> str:
    """The line under a user message naming its attachments (user_message summaries)."""
    return "Attached: " + ", ".join(
        f"{a.get('name', '?')} ({format_size(int(a.get('bytes', 0)))})" for a in summaries)


def image_bytes(image: QImage) -> bytes:
    """A pasted image as PNG bytes."""
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    # The stubs say the format is bytes; PySide6 takes only str.
    image.save(buffer, "PNG")  # type: ignore[call-overload]
    buffer.close()
    return bytes(data.data())


def local_files(source: QMimeData) -> list[str]:
    return [url.toLocalFile() for url in source.urls() if url.isLocalFile()]


class PictureChip(QWidget):
    """An attached image as a small rounded picture, its remove button in the corner."""

    def __init__(self, chip: Chip, key: Hashable, tray: AttachmentTray) -> None:
        super().__init__(tray)
        self.key = key
        self.setFixedSize(QSize(CHIP, CHIP))
        self.setAccessibleName(f"Attachment {chip.name}")
        self.setToolTip(chip_text(chip))
        self.remove = QToolButton(self)
        self.remove.setObjectName("removePicture")
        self.remove.setText("✕")
        self.remove.setAccessibleName(f"Remove {chip.name}")
        self.remove.setToolTip(f"Remove {chip.name}")
        self.remove.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.remove.setFixedSize(QSize(18, 18))
        self.remove.move(CHIP - 20, 2)
        self.remove.setStyleSheet(
            "#removePicture { background: rgba(0, 0, 0, 150); color: white; border: none;"
            " border-radius: 9px; font-size: 10px; }"
            " #removePicture:focus { border: 2px solid palette(highlight); }")
        self.remove.clicked.connect(lambda: tray.remove(chip))
        thumbs = shared_thumbnails()
        thumbs.ready.connect(self._ready)
        if isinstance(chip, Attachment):  # (a kept one's picture is the history's)
            thumbs.request(key, chip.data, CHIP, self.devicePixelRatioF())

    def _ready(self, key: Hashable) -> None:
        if key == self.key:
            self.update()

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        draw_picture(painter, QRectF(self.rect()), shared_thumbnails().get(self.key),
                     self.palette())


class AttachmentTray(QWidget):
    """The chips of the prompt's attachments, and why the last file given was refused."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Attachments")
        self._chips: list[Chip] = []
        self._keys: dict[int, Hashable] = {}
        """Each image chip's picture key while it is in the tray (made once)."""
        self._row = QHBoxLayout()
        self._row.setContentsMargins(0, 0, 0, 0)
        self._row.addStretch(1)
        self.problem = QLabel(self)
        self.problem.setWordWrap(True)
        self.problem.setAccessibleName("Attachment problem")
        self.problem.setStyleSheet("color: #c0392b;")
        self.problem.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(self._row)
        layout.addWidget(self.problem)
        self._refresh()

    def chips(self) -> list[Chip]:
        return list(self._chips)

    def add_files(self, paths: list[str]) -> list[str]:
        """Attach these files; those that cannot be attached are refused (the reason is
        shown). Returns the paths that are folders (mentioned by path instead)."""
        folders: list[str] = []
        problems: list[str] = []
        for path in paths:
            try:
                self._add(load_attachment(path))
            except AttachmentError as exc:
                if "is a folder" in str(exc):
                    folders.append(path)
                else:
                    problems.append(str(exc))
        self._show(problems)
        return folders

    def add_image(self, data: bytes, name: str = PASTED_IMAGE) -> None:
        try:
            self._add(read_attachment(name, data))
        except AttachmentError as exc:
            self._show([str(exc)])
            return
        self._show([])

    def _add(self, attachment: Attachment) -> None:
        if len(self._chips) >= MAX_ATTACHMENTS:
            raise AttachmentError(f"at most {MAX_ATTACHMENTS} files can be attached to one "
                                  f"prompt: {attachment.name} was not added")
        self._chips.append(attachment)
        self._refresh()

    def set_kept(self, kept: list[Kept]) -> None:
        """Show the attachments of the message being edited (and nothing else)."""
        self._chips = list(kept)
        self._show([])
        self._refresh()

    def restore(self, chip: Chip) -> None:
        """Put back a chip that was taken (the edit it made way for was left)."""
        self._chips.append(chip)
        self._refresh()

    def remove(self, chip: Chip) -> None:
        self._chips = [c for c in self._chips if c is not chip]
        self._refresh()

    def take(self) -> list[Chip]:
        """The chips, emptied (they go with the prompt being sent)."""
        chips, self._chips = self._chips, []
        self._show([])
        self._refresh()
        return chips

    def _show(self, problems: list[str]) -> None:
        self.problem.setText("\n".join(problems))
        self.problem.setVisible(bool(problems))
        self._update_visibility()

    def _refresh(self) -> None:
        while self._row.count() > 1:
            item = self._row.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.setParent(None)
                widget.deleteLater()
        self._keys = {id(c): self._keys.get(id(c)) or object() for c in self._chips
                      if isinstance(c, Attachment) and c.kind == "image"}
        self._keys.update((id(c), c.picture) for c in self._chips
                          if isinstance(c, Kept) and c.picture is not None)
        for position, chip in enumerate(self._chips):
            key = self._keys.get(id(chip))
            self._row.insertWidget(position, self._chip_widget(chip) if key is None
                                   else PictureChip(chip, key, self))
        self._update_visibility()
        self.changed.emit()

    def _update_visibility(self) -> None:
        self.setVisible(bool(self._chips) or not self.problem.isHidden())

    def _chip_widget(self, chip: Chip) -> QWidget:
        frame = QFrame(self)
        frame.setFrameShape(QFrame.Shape.StyledPanel)
        frame.setAccessibleName(f"Attachment {chip.name}")
        row = QHBoxLayout(frame)
        row.setContentsMargins(6, 1, 2, 1)
        label = QLabel(chip_text(chip), frame)
        label.setTextFormat(Qt.TextFormat.PlainText)
        row.addWidget(label)
        close = QToolButton(frame)
        close.setText("✕")
        close.setAutoRaise(True)
        close.setAccessibleName(f"Remove {chip.name}")
        close.setToolTip(f"Remove {chip.name}")
        close.clicked.connect(lambda: self.remove(chip))
        row.addWidget(close)
        return frame
