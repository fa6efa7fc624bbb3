"""The output viewer widget on small files: search, navigation, wrap, copy, colours, desktop."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import psutil
import pytest
import shiboken6
from PySide6.QtCore import QObject, QPointF, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QAbstractButton, QLineEdit, QSpinBox, QWidget
from pytestqt.qtbot import QtBot

from desktop.viewer.search import PatternError, compile_pattern
from desktop.viewer.window import OutputViewer, show_output


def write_log(path: Path) -> Path:
    lines = [b"%04d \x1b[32mINFO\x1b[0m step %d done" % (i, i) for i in range(1, 401)]
    lines[99] = b"0100 \x1b[31mERROR\x1b[0m disk full \xff\xfe"
    lines[299] = b"0300 \x1b[31mERROR\x1b[0m Timeout after 30 s"
    lines.append(b"L" * 10_000)  # one line longer than the cap: split into rows
    lines.append(b"last line")
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.fixture
def viewer(qtbot: QtBot, tmp_path: Path) -> OutputViewer:
    widget = OutputViewer()
    qtbot.addWidget(widget)
    widget.resize(900, 500)
    widget.show()
    assert widget.open(write_log(tmp_path / "out.txt"))
    qtbot.waitUntil(lambda: widget.index is not None and widget.index.done, timeout=5000)
    widget.view.refresh()
    yield widget
    widget.close_file()


def wait_search(qtbot: QtBot, viewer: OutputViewer) -> None:
    qtbot.waitUntil(lambda: viewer.scan is not None and viewer.scan.done, timeout=5000)
    viewer._tick()


def test_open_shows_rows_line_numbers_and_long_line_pieces(viewer: OutputViewer) -> None:
    index = viewer.index
    assert index is not None
    assert index.line_count() == 402
    assert viewer.view.row_count == 400 + 3 + 1  # the 10,000-byte line is 3 rows
    assert index.row(400).continuation is False
    assert index.row(401).continuation and index.row(402).continuation
    assert index.row(403).line == 401
    assert viewer.view.display_line(403).text == "last line"
    assert viewer.view.display_line(99).text == "0100 ERROR disk full \ufffd\ufffd"
    assert viewer.status.text() == f"402 lines, {index.size / 1024:.1f} KB"


def test_incremental_search_next_previous_and_count(qtbot: QtBot,
                                                    viewer: OutputViewer) -> None:
    qtbot.keyClicks(viewer.search, "error")  # typing starts the search after a short pause
    wait_search(qtbot, viewer)
    assert viewer.scan is not None and viewer.scan.count == 2
    assert viewer.matches.text() == "2 matches"
    qtbot.keyClick(viewer.search, Qt.Key.Key_Return)
    assert viewer.view.selection() == (99, 99)
    assert viewer.matches.text() == "1 of 2 matches"
    qtbot.keyClick(viewer.search, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert viewer.view.selection() == (299, 299)  # previous, wrapping to the last match
    qtbot.keyClick(viewer.search, Qt.Key.Key_Return)
    assert viewer.view.selection() == (99, 99)
    viewer.next_button.click()
    assert viewer.view.selection() == (299, 299)
    viewer.next_button.click()  # wraps around
    assert viewer.view.selection() == (99, 99)
    viewer.previous_button.click()
    assert viewer.view.selection() == (299, 299)
    assert viewer.matches.text() == "2 of 2 matches"

    viewer.case.setChecked(True)  # "error" with matching case: none
    wait_search(qtbot, viewer)
    assert viewer.scan.count == 0
    viewer.search_for(r"step \d*5 done", regex=True)
    wait_search(qtbot, viewer)
    assert viewer.scan.count == 40  # 5, 15, …, 395
    viewer.go_to_line(396)
    viewer.find_next()
    assert viewer.view.selection() == (4, 4)  # wrapped to "step 5 done"


def test_bad_patterns_get_a_clear_message(qtbot: QtBot, viewer: OutputViewer) -> None:
    viewer.search_for("(unclosed", regex=True)
    assert viewer.scan is None
    assert viewer.matches.text().startswith("invalid regular expression")
    viewer.search_for("x*", regex=True)
    assert "matches empty text" in viewer.matches.text()
    with pytest.raises(PatternError):
        compile_pattern("", regex=False, case=True)
    viewer.search_for("(unclosed", regex=False)  # the same text, plain: fine
    wait_search(qtbot, viewer)
    assert viewer.scan is not None and viewer.scan.count == 0


def test_go_to_line_wrap_and_copy(qtbot: QtBot, viewer: OutputViewer) -> None:
    assert viewer.go_to_line(300)
    assert viewer.view.selection() == (299, 299)
    top = viewer.view.top_row()
    assert top <= 299 < top + viewer.view.visible_rows()
    assert viewer.go_to_line(10**9)  # beyond the end: the last line
    assert viewer.view.selection() == (403, 403)

    viewer.view.select_rows(99, 101)
    viewer.view.setFocus()
    qtbot.keyClick(viewer.view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QGuiApplication.clipboard().text() == (
        "0100 ERROR disk full \ufffd\ufffd\n0101 INFO step 101 done\n0102 INFO step 102 done")
    assert viewer.status.text() == "Copied 3 rows"
    viewer.view.select_rows(400, 402)  # pieces of one line copy back as one line
    viewer.copy_button.click()
    assert QGuiApplication.clipboard().text() == "L" * 10_000

    viewer.go_to_line(401)
    viewer.wrap.setChecked(True)
    viewer.view.repaint()
    layout = viewer.view._layout
    heights = {row: bottom - top for row, top, bottom in layout}
    assert heights[400] > viewer.view.line_height()  # a 4,096-char row takes several lines
    row, top_y, _ = layout[-1]
    assert viewer.view.row_at(top_y + 1) == row
    viewer.wrap.setChecked(False)
    viewer.view.repaint()
    assert {b - t for _, t, b in viewer.view._layout} == {viewer.view.line_height()}


def test_colours_toggle_and_mouse_selection(qtbot: QtBot, viewer: OutputViewer) -> None:
    view = viewer.view
    assert view.display_line(0).spans  # INFO is green
    viewer.colours.setChecked(False)
    assert view.display_line(0).spans == ()
    assert view.display_line(0).text == "0001 INFO step 1 done"
    view.repaint()
    y0 = view._layout[2][1] + 2
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=QPointF(60, y0).toPoint())
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     Qt.KeyboardModifier.ShiftModifier,
                     pos=QPointF(60, view._layout[5][1] + 2).toPoint())
    assert view.selection() == (2, 5)


class UrlCatcher(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[QUrl] = []

    @Slot(QUrl)
    def handle(self, url: QUrl) -> None:
        self.urls.append(url)


def test_open_in_editor_and_show_in_folder(viewer: OutputViewer) -> None:
    catcher = UrlCatcher()
    QDesktopServices.setUrlHandler("file", catcher, "handle")
    try:
        viewer.editor_button.click()
        viewer.folder_button.click()
    finally:
        QDesktopServices.unsetUrlHandler("file")
    assert viewer.index is not None
    assert [u.toLocalFile() for u in catcher.urls] == [
        str(viewer.index.path), str(viewer.index.path.parent)]


def test_missing_file_is_reported(qtbot: QtBot, tmp_path: Path) -> None:
    widget = OutputViewer()
    qtbot.addWidget(widget)
    assert not widget.open(tmp_path / "nope.txt")
    assert widget.status.text().startswith("Cannot open")
    assert not widget.search.isEnabled()
    assert not widget.open(tmp_path)  # a folder
    assert widget.status.text() == "Cannot open: Is a directory"
    assert widget.index is None


def test_every_control_has_an_accessible_name(viewer: OutputViewer) -> None:
    controls = [w for w in viewer.findChildren(QWidget)
                if isinstance(w, QAbstractButton | QLineEdit | QSpinBox)
                and not isinstance(w.parent(), QSpinBox | QLineEdit)]
    assert len(controls) >= 12
    assert [w.text() if isinstance(w, QAbstractButton) else type(w).__name__
            for w in controls if not w.accessibleName()] == []
    assert viewer.view.accessibleName() == "Output text"



def test_worker_killed_is_reported_and_nothing_crashes(qtbot: QtBot,
                                                       viewer: OutputViewer) -> None:
    index = viewer.index
    assert index is not None and index.worker_pid is not None
    os.kill(index.worker_pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: not index.worker_alive, timeout=5000)
    viewer._tick()
    assert "indexing process ended" in viewer.status.text()
    viewer.search_for("ERROR")
    assert viewer.scan is not None and viewer.scan.done and viewer.scan.count == 0
    assert viewer.go_to_line(300)  # what was indexed stays usable


def test_worker_ends_when_the_viewer_is_deleted_with_its_parent(qtbot: QtBot,
                                                                tmp_path: Path) -> None:
    parent = QWidget()
    viewer = show_output(write_log(tmp_path / "o.txt"), parent)
    index = viewer.index
    assert index is not None and index.worker_pid is not None
    process = psutil.Process(index.worker_pid)
    shiboken6.delete(parent)  # as when the main window goes: no closeEvent for the viewer
    process.wait(timeout=10)
    assert not process.is_running()
