"""The viewer window opens wholly on its parent's screen, Esc and Ctrl+W close it, and a
search or Go to line that lands at the end does not turn Follow on."""

from __future__ import annotations

from pathlib import Path

import pytest
import shiboken6
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from desktop.placement import fit_on_screen
from desktop.viewer.window import OutputViewer, show_output

SCREEN = QRect(0, 0, 1920, 1080)
SECOND = QRect(1920, 0, 1280, 1024)  # a second monitor to the right


@pytest.mark.parametrize(("wanted", "available", "expected"), [
    (QRect(100, 100, 1000, 700), SCREEN, QRect(100, 100, 1000, 700)),  # fits: unchanged
    (QRect(1500, 100, 1000, 700), SCREEN, QRect(920, 100, 1000, 700)),  # off the right
    (QRect(-300, -50, 1000, 700), SCREEN, QRect(0, 0, 1000, 700)),  # off the top left
    (QRect(100, 900, 1000, 700), SCREEN, QRect(100, 380, 1000, 700)),  # off the bottom
    (QRect(0, 0, 1000, 700), QRect(0, 0, 900, 600), QRect(0, 0, 900, 600)),  # too big
    (QRect(-50, -50, 3000, 2000), SCREEN, SCREEN),  # bigger than the screen both ways
    (QRect(2900, 600, 1000, 700), SECOND, QRect(2200, 324, 1000, 700)),  # on the second
    (QRect(100, 100, 1000, 700), SECOND, QRect(1920, 100, 1000, 700)),  # pulled onto it
    (QRect(0, 0, 1000, 700), QRect(0, 40, 1920, 1000), QRect(0, 40, 1000, 700)),  # a panel
])
def test_fit_on_screen(wanted: QRect, available: QRect, expected: QRect) -> None:
    got = fit_on_screen(wanted, available)
    assert got == expected
    assert available.contains(got)


def write_lines(path: Path, count: int) -> Path:
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(1, count + 1)))
    return path


def open_window(qtbot: QtBot, path: Path, parent: QWidget | None,
                follow: bool = False) -> OutputViewer:
    viewer = show_output(path, parent, follow=follow)
    qtbot.waitExposed(viewer)
    qtbot.waitUntil(lambda: viewer.index is not None and viewer.index.done, timeout=5000)
    viewer.view.refresh()
    return viewer


def test_the_window_opens_wholly_on_the_parents_screen(qtbot: QtBot, tmp_path: Path) -> None:
    available = QGuiApplication.primaryScreen().availableGeometry()
    parent = QWidget()
    qtbot.addWidget(parent)
    parent.setGeometry(available.right() - 200, available.bottom() - 150, 300, 200)
    parent.show()
    qtbot.waitExposed(parent)
    viewer = open_window(qtbot, write_lines(tmp_path / "o.txt", 10), parent)
    try:
        assert available.contains(viewer.frameGeometry()), (
            viewer.frameGeometry(), available)
        assert viewer.width() <= 1000 and viewer.height() <= 700
        assert viewer.width() >= min(1000, available.width()) - 40
    finally:
        viewer.close()


@pytest.mark.parametrize("keys", ["Esc", "Ctrl+W"])
def test_esc_and_ctrl_w_close_the_window(qtbot: QtBot, tmp_path: Path, keys: str) -> None:
    viewer = open_window(qtbot, write_lines(tmp_path / "o.txt", 10), None)
    viewer.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is viewer, timeout=2000)
    viewer.search.setFocus()  # also from the search box
    index = viewer.index
    assert index is not None
    key, modifier = ((Qt.Key.Key_Escape, Qt.KeyboardModifier.NoModifier) if keys == "Esc"
                     else (Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier))
    qtbot.keyClick(viewer.search, key, modifier)
    qtbot.waitUntil(lambda: not shiboken6.isValid(viewer), timeout=2000)
    assert index.worker_pid is None, "the worker process was ended"


def test_a_search_or_go_to_line_at_the_end_does_not_start_following(qtbot: QtBot,
                                                                    tmp_path: Path) -> None:
    path = write_lines(tmp_path / "o.txt", 300)
    viewer = open_window(qtbot, path, None)
    try:
        view = viewer.view
        assert not viewer.follow.isChecked()
        viewer.search_for("line 300")
        qtbot.waitUntil(lambda: viewer.scan is not None and viewer.scan.done)
        for jump in (viewer.find_next, lambda: viewer.go_to_line(300), viewer.find_previous):
            viewer.go_to_line(1)
            jump()
            viewer._tick()
            assert view.top_row() == view.verticalScrollBar().maximum()  # at the end
            assert not viewer.follow.isChecked() and not view.follow
        top = view.top_row()
        with path.open("ab") as f:
            f.write(b"more\n" * 100)
        qtbot.waitUntil(lambda: view.row_count == 400, timeout=5000)
        assert view.top_row() == top, "the view stays where the search put it"
        # The user's own scrolling to the end (End, the scroll bar) still follows.
        view.setFocus()
        qtbot.keyClick(view, Qt.Key.Key_End)
        assert viewer.follow.isChecked()
        viewer.go_to_line(5)
        assert not viewer.follow.isChecked(), "a jump away stops following"
        view.verticalScrollBar().setValue(view.verticalScrollBar().maximum())
        assert viewer.follow.isChecked()
    finally:
        viewer.close()


def test_opened_to_follow_it_starts_at_the_end_and_stays_there(qtbot: QtBot,
                                                               tmp_path: Path) -> None:
    path = write_lines(tmp_path / "running.txt", 300)
    viewer = open_window(qtbot, path, None, follow=True)
    try:
        view = viewer.view
        assert viewer.follow.isChecked()
        assert view.top_row() == view.verticalScrollBar().maximum() > 0
        with path.open("ab") as f:
            f.write(b"more\n" * 100)
        qtbot.waitUntil(lambda: view.row_count == 400, timeout=5000)
        assert view.top_row() == view.verticalScrollBar().maximum()
    finally:
        viewer.close()
