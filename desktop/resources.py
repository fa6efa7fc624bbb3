"""Where the app's own files (icons, the .desktop template) are, frozen or from source.

In a PyInstaller build they sit in `<bundle data dir>/resources` (`sys._MEIPASS`; next to
the executable in older one-folder layouts; `Contents/Resources` in a macOS .app, which
`_MEIPASS` reaches too). In a source checkout they sit in `resources/` at the top of the
tree. This module is the only one that knows that.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtGui import QIcon

ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
_CHECKOUT_ROOT = Path(__file__).resolve().parent.parent


class ResourceMissing(FileNotFoundError):
    """A file the app ships with is not where it should be (a broken install or bundle)."""


def candidate_roots() -> tuple[Path, ...]:
    """The folders that may hold `resources/`, most specific first."""
    roots: list[Path] = []
    bundle = getattr(sys, "_MEIPASS", None)
    if getattr(sys, "frozen", False):
        if bundle:
            roots.append(Path(bundle))
        roots.append(Path(sys.executable).resolve().parent)
    roots.append(_CHECKOUT_ROOT)
    return tuple(dict.fromkeys(root / "resources" for root in roots))


def resources_dir() -> Path:
    """The first candidate folder that holds the app icon; ResourceMissing if none does."""
    roots = candidate_roots()
    for root in roots:
        if (root / "icons" / "reins.svg").is_file():
            return root
    looked = ", ".join(str(r) for r in roots)
    raise ResourceMissing(f"Reins' resources folder is missing (looked in: {looked})")


def resource_path(*parts: str) -> Path:
    """The path of one shipped file, e.g. resource_path("icons", "reins-64.png")."""
    path = resources_dir().joinpath(*parts)
    if not path.is_file():
        raise ResourceMissing(f"Reins' resource {'/'.join(parts)} is missing ({path})")
    return path


def icon_png(size: int) -> Path:
    if size not in ICON_SIZES:
        raise ValueError(f"no {size}px icon; sizes are {ICON_SIZES}")
    return resource_path("icons", f"reins-{size}.png")


def app_icon() -> QIcon:
    """The window/taskbar icon with every rendered size (no SVG plugin needed)."""
    icon = QIcon()
    for size in ICON_SIZES:
        icon.addFile(str(icon_png(size)))
    return icon
