"""The output viewer: `OutputViewer` and `show_output` (see desktop/viewer/window.py)."""

from desktop.viewer.window import OutputViewer, show_output

__all__ = ["OutputViewer", "show_output"]
