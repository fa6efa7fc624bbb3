"""The interface's icons: one stroke set drawn for Reins (resources/icons/ui/*.svg, rendered
to PNG by `make icons`, so neither the app nor its bundle needs QtSvg), tinted to the colour
each place asks for and cached per name, colour, size and pixel ratio.

    icon_pixmap(name, colour, size, ratio) -> QPixmap    # painted by delegates
    icon(name, colour, size) -> QIcon                    # on buttons

A missing file (a broken install) gives an empty pixmap: an icon is never worth a crash.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QIcon, QImage, QPainter, QPixmap

from desktop.resources import ResourceMissing, resource_path

NAMES = frozenset({
    "arrow-down", "attach", "check", "chevron-down", "chevron-left", "chevron-right", "copy",
    "edit", "folder", "retry", "send", "shield", "sparkle", "status-denied", "status-error",
    "status-ok", "status-queued", "status-running", "status-stopped", "status-waiting", "stop",
    "timeline"})
"""Every icon shipped (tests check each has its SVG source and its PNG)."""

_SOURCES: dict[str, QImage] = {}
_TINTED: dict[tuple[str, int, int, float], QPixmap] = {}


def _source(name: str) -> QImage:
    image = _SOURCES.get(name)
    if image is None:
        try:
            image = QImage(str(resource_path("icons", "ui", f"{name}.png")))
        except ResourceMissing:
            image = QImage()
        _SOURCES[name] = image
    return image


def icon_pixmap(name: str, colour: QColor, size: int, ratio: float = 1.0) -> QPixmap:
    """`name` at `size` logical pixels in `colour` (its alpha kept)."""
    key = (name, colour.rgba(), size, ratio)
    pixmap = _TINTED.get(key)
    if pixmap is not None:
        return pixmap
    source = _source(name)
    pixels = max(1, round(size * ratio))
    image = QImage(pixels, pixels, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    if not source.isNull():
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        painter.drawImage(image.rect(), source)
        painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceIn)
        painter.fillRect(image.rect(), colour)
        painter.end()
    pixmap = QPixmap.fromImage(image)
    pixmap.setDevicePixelRatio(ratio)
    _TINTED[key] = pixmap
    return pixmap


def icon(name: str, colour: QColor, size: int = 18) -> QIcon:
    """A button's icon: `name` in `colour`, sharp on a screen of 1× and 2×."""
    out = QIcon()
    for ratio in (1.0, 2.0):
        out.addPixmap(icon_pixmap(name, colour, size, ratio))
    return out
