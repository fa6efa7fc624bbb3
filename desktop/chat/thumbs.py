"""Pictures of attached images: the composer's chips and the history's user bubbles.

An image is decoded once, in a thread (`QImageReader` scaled while it reads, so a large
JPEG never comes whole into memory; Qt's allocation limit refuses absurd sizes), cropped to
a square of the size it is shown at in device pixels, and kept as a QPixmap by key
(`Thumbnails`); painting only draws that pixmap. One that cannot be read is `BROKEN` and
painted as a neutral placeholder (`draw_picture`), never an error.

    thumbs.request(key, data, side)     # bytes → a picture, later `ready(key)`
    thumbs.get(key)                     # QPixmap | LOADING | BROKEN | None (never asked)

A sent prompt's images are the kernel's (its history holds them): the chat names each by
`PromptPicture` (the prompt's place and the attachment's position) and the controller asks
the kernel for them (GetPromptImages), which answers with small square PNGs.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, Literal

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QObject, QRect, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QImage, QImageReader, QPainter, QPainterPath, QPalette, QPixmap

CHIP: Final = 56
"""A composer chip's picture: a square this many logical pixels wide."""
THUMB: Final = 96
"""A history picture: a square this many logical pixels wide."""
GAP: Final = 6
"""Between two pictures."""
RADIUS: Final = 10.0
KEPT: Final = 256
"""Pictures kept (the least recently used go first): a few megabytes at most."""

State = Literal["loading", "broken"]
LOADING: Final[State] = "loading"
BROKEN: Final[State] = "broken"


@dataclass(frozen=True)
class PromptPicture:
    """The key of a sent prompt's image: its user_message's session and place, and the
    attachment's position among the prompt's attachments."""

    session_id: str
    at_message: int
    at_block: int
    position: int


def prompt_pictures(session_id: str, at_message: int, at_block: int,
                    attachments: Sequence[Mapping[str, Any]]) -> tuple[PromptPicture, ...]:
    """The pictures of a user_message's image attachments, in order."""
    return tuple(PromptPicture(session_id, at_message, at_block, position)
                 for position, summary in enumerate(attachments)
                 if summary.get("kind") == "image")


def square_picture(data: bytes, side: int) -> QImage:
    """`data`'s image scaled to cover a `side`×`side` square and cropped to it (a null
    image when it cannot be read). Safe in any thread: QImage, not QPixmap."""
    payload = QByteArray(data)
    buffer = QBuffer(payload)
    buffer.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buffer)
    reader.setAutoTransform(True)
    size = reader.size()
    if size.isValid() and not size.isEmpty():
        reader.setScaledSize(size.scaled(QSize(side, side),
                                         Qt.AspectRatioMode.KeepAspectRatioByExpanding))
    image = reader.read()
    buffer.close()
    if image.isNull():
        return image
    if image.width() < side or image.height() < side or not size.isValid():
        image = image.scaled(side, side, Qt.AspectRatioMode.KeepAspectRatioByExpanding,
                             Qt.TransformationMode.SmoothTransformation)
    left, top = (image.width() - side) // 2, (image.height() - side) // 2
    return image.copy(QRect(left, top, side, side))


class Thumbnails(QObject):
    """Pictures by key, each decoded once off the UI thread and kept as a QPixmap."""

    ready = Signal(object)
    """A key's picture (or its BROKEN state) is there."""
    changed = Signal()
    """Any picture is there (for a view that repaints what it shows)."""
    _decoded = Signal(object, object, float)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._kept: OrderedDict[Hashable, QPixmap | State] = OrderedDict()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="thumbnails")
        self._decoded.connect(self._store)

    def get(self, key: Hashable) -> QPixmap | State | None:
        found = self._kept.get(key)
        if found is not None:
            self._kept.move_to_end(key)
        return found

    def request(self, key: Hashable, data: bytes, side: int, ratio: float = 1.0) -> None:
        """Make `key`'s picture from `data`: a `side`-pixel square at this pixel ratio (no
        new work when it is there or on its way)."""
        if key in self._kept:
            return
        self._kept[key] = LOADING
        pixels = max(1, round(side * ratio))
        self._pool.submit(lambda: self._decoded.emit(key, square_picture(data, pixels), ratio))

    def broken(self, key: Hashable) -> None:
        """`key` has no picture to decode (the kernel could not read it)."""
        self._kept[key] = BROKEN
        self.ready.emit(key)
        self.changed.emit()

    def _store(self, key: Hashable, image: QImage, ratio: float) -> None:
        if image.isNull():
            self._kept[key] = BROKEN
        else:
            pixmap = QPixmap.fromImage(image)
            pixmap.setDevicePixelRatio(ratio)
            self._kept[key] = pixmap
        while len(self._kept) > KEPT:
            self._kept.popitem(last=False)
        self.ready.emit(key)
        self.changed.emit()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


_SHARED: list[Thumbnails] = []


def shared_thumbnails() -> Thumbnails:
    """The app's one set of pictures (the composer and every chat view use it)."""
    if not _SHARED:
        _SHARED.append(Thumbnails())
    return _SHARED[0]


def draw_picture(painter: QPainter, rect: QRectF, picture: QPixmap | State | None,
                 palette: QPalette) -> None:
    """A picture in a rounded square; a neutral tile while it loads, with a sign when it
    cannot be shown."""
    from desktop.icons import icon_pixmap
    from desktop.theme import mix

    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    path = QPainterPath()
    path.addRoundedRect(rect, RADIUS, RADIUS)
    painter.setClipPath(path)
    base = palette.color(QPalette.ColorRole.Base)
    text = palette.color(QPalette.ColorRole.Text)
    if isinstance(picture, QPixmap) and picture.deviceIndependentSize() == rect.size():
        painter.drawPixmap(rect.topLeft(), picture)
    elif isinstance(picture, QPixmap):  # a history picture in a chip (editing): rare
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        painter.drawPixmap(rect, picture, QRectF(picture.rect()))
    else:
        painter.fillRect(rect, mix(base, text, 0.1))
        if picture == BROKEN:
            size = int(min(rect.width(), rect.height()) * 0.4)
            glyph = icon_pixmap("attach", QColor(mix(base, text, 0.45)), size,
                                painter.device().devicePixelRatioF())
            painter.drawPixmap(rect.center() - QRectF(0, 0, size, size).center(), glyph)
    painter.restore()
