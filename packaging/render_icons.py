"""Render the app icon's PNG sizes, the Windows .ico and the macOS .icns from the SVG source,
and the interface icons (resources/icons/ui/*.svg) as PNG.

Run from the checkout (`make icons`): `python packaging/render_icons.py`. (packaging/ is not
a Python package on purpose: the name would shadow the PyPI `packaging` library.) The outputs are
committed, so neither a build nor the app needs QtSvg or Pillow to use them.
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

ICON_DIR = Path(__file__).resolve().parent.parent / "resources" / "icons"
SOURCE = ICON_DIR / "reins.svg"
UI_DIR = ICON_DIR / "ui"
UI_SIZE = 48
"""The interface icons (ui/*.svg, black strokes) are rendered once at this size; the app
scales and tints them (`desktop.icons`)."""
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# Apple's PNG-payload icon types, by pixel size.
ICNS_TYPES = {16: b"icp4", 32: b"icp5", 64: b"icp6", 128: b"ic07", 256: b"ic08", 512: b"ic09"}


def png_name(size: int) -> str:
    return f"reins-{size}.png"


def render_pngs(source: Path, sizes: tuple[int, ...]) -> dict[int, bytes]:
    """PNG bytes of `source` at each size, antialiased on a transparent background."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication([])
    renderer = QSvgRenderer(str(source))
    if not renderer.isValid():
        raise ValueError(f"{source} is not a valid SVG")
    out: dict[int, bytes] = {}
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        renderer.render(painter)
        painter.end()
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        if not image.save(buffer, "PNG"):
            raise RuntimeError(f"could not encode the {size}px icon as PNG")
        buffer.close()
        out[size] = bytes(data.data())
    return out


def ico_bytes(pngs: dict[int, bytes]) -> bytes:
    """A Windows .ico holding each PNG as-is (PNG entries are valid since Windows Vista)."""
    sizes = sorted(pngs)
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = len(header) + 16 * len(sizes)
    entries, payload = b"", b""
    for size in sizes:
        data = pngs[size]
        side = 0 if size >= 256 else size  # 0 means 256 in the directory entry
        entries += struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(data), offset)
        offset += len(data)
        payload += data
    return header + entries + payload


def icns_bytes(pngs: dict[int, bytes]) -> bytes:
    """A macOS .icns holding each PNG under its Apple type code."""
    chunks = b"".join(
        ICNS_TYPES[size] + struct.pack(">I", 8 + len(pngs[size])) + pngs[size]
        for size in sorted(pngs)
    )
    return b"icns" + struct.pack(">I", 8 + len(chunks)) + chunks


def main() -> int:
    pngs = render_pngs(SOURCE, SIZES)
    for size, data in pngs.items():
        (ICON_DIR / png_name(size)).write_bytes(data)
    (ICON_DIR / "reins.ico").write_bytes(ico_bytes({s: pngs[s] for s in ICO_SIZES}))
    (ICON_DIR / "reins.icns").write_bytes(icns_bytes({s: pngs[s] for s in ICNS_TYPES}))
    for svg in sorted(UI_DIR.glob("*.svg")):
        svg.with_suffix(".png").write_bytes(render_pngs(svg, (UI_SIZE,))[UI_SIZE])
    print(f"rendered {len(pngs)} PNGs, reins.ico and reins.icns into {ICON_DIR}")  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
