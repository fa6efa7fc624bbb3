"""The viewer on a 1 GB file (memory stays bounded) and on a file still being written."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from desktop.viewer.window import OutputViewer

GB = 1 << 30
MB = 1 << 20
NEEDLE = b"NEEDLE-7f3a wanted here"


def make_block(first_line: int) -> tuple[bytes, int]:
    """About 1 MB of log lines with ANSI colours; returns the bytes and the line count."""
    lines = []
    i = first_line
    size = 0
    while size < MB - 200:
        line = b"%09d \x1b[32mINFO\x1b[0m worker=%d step=%d status=ok payload=%s" % (
            i, i % 16, i * 7, b"abcdefghij" * (i % 9))
        lines.append(line)
        size += len(line) + 1
        i += 1
    data = b"\n".join(lines) + b"\n"
    return data + b"#" * (MB - len(data) - 1) + b"\n", len(lines) + 1


@pytest.fixture(scope="module")
def gigabyte_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    """A 1 GB file written fast: 16 MB of log lines, a sparse hole (NUL bytes, one huge
    line the viewer splits into rows), then 1 MB of log lines with the needle near the end."""
    path = tmp_path_factory.mktemp("big") / "huge.log"
    block, _ = make_block(0)
    head = block * 16
    half = block[: block.rindex(b"\n", 0, MB // 2) + 1]
    tail = b"\n" + half + NEEDLE + b"\n" + b"final line\n"
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(GB - len(tail))
        f.seek(GB - len(tail))
        f.write(tail)
    assert path.stat().st_size == GB
    yield path, (head + tail).count(b"\n")
    path.unlink()


def rss() -> int:
    return psutil.Process().memory_info().rss


def test_one_gigabyte_file_opens_searches_and_reaches_the_end(
    qtbot: QtBot, tmp_path: Path, gigabyte_file: tuple[Path, int]
) -> None:
    path, total_lines = gigabyte_file
    viewer = OutputViewer()
    qtbot.addWidget(viewer)
    viewer.resize(1000, 600)
    viewer.show()
    small = tmp_path / "small.txt"
    small.write_bytes(b"warm up\n" * 10)
    viewer.open(small)  # fonts, caches and threads exist before the baseline
    viewer.search_for("warm")
    qtbot.waitUntil(lambda: viewer.scan is not None and viewer.scan.done, timeout=5000)
    QApplication.processEvents()
    before = rss()

    assert viewer.open(path)
    assert viewer.view.row_count > 0  # the first screen is there at once
    assert viewer.view.display_line(0).text.startswith("000000000 INFO worker=0")
    viewer.search_for("NEEDLE-7f3a", case=True)
    qtbot.waitUntil(lambda: viewer.index is not None and viewer.index.done, timeout=60_000)
    qtbot.waitUntil(lambda: viewer.scan is not None and viewer.scan.done, timeout=60_000)
    viewer._tick()
    assert viewer.scan is not None and viewer.scan.count == 1
    viewer.find_next()
    index = viewer.index
    assert index is not None
    selected = viewer.view.selection()
    assert selected is not None
    assert viewer.view.display_line(selected[0]).text == NEEDLE.decode()
    assert index.row(selected[0]).line == total_lines - 2
    assert viewer.matches.text() == "1 of 1 matches"

    assert index.line_count() == total_lines
    assert viewer.go_to_line(total_lines)
    last = viewer.view.selection()
    assert last is not None and viewer.view.display_line(last[0]).text == "final line"
    viewer.view.repaint()
    assert viewer.view._layout[-1][0] == viewer.view.row_count - 1  # painted at the bottom
    grown = rss() - before
    assert grown < 150 * MB, f"RSS grew by {grown / MB:.0f} MB with a 1 GB file open"
    assert index.worker_pid is not None  # the worker that read the whole file stays small too
    assert psutil.Process(index.worker_pid).memory_info().rss < 150 * MB
    viewer.close_file()


def test_growing_file_shows_new_lines_while_open(qtbot: QtBot, tmp_path: Path) -> None:
    path = tmp_path / "running.log"
    path.write_bytes(b"starting\n")
    viewer = OutputViewer()
    qtbot.addWidget(viewer)
    viewer.resize(800, 400)
    viewer.show()
    assert viewer.open(path)
    viewer.search_for("tick 1")
    viewer.follow.setChecked(True)
    stop = threading.Event()

    def writer() -> None:
        with open(path, "ab") as f:
            for i in range(1, 401):
                if stop.is_set():
                    return
                f.write(b"tick %d\n" % i)
                f.flush()
                if i % 40 == 0:
                    time.sleep(0.05)
            f.write(b"partial, no newline yet")

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        qtbot.waitUntil(lambda: viewer.view.row_count == 402, timeout=20_000)
    finally:
        stop.set()
        thread.join()
    view = viewer.view
    assert view.display_line(400).text == "tick 400"
    assert view.display_line(401).text == "partial, no newline yet"
    assert view.top_row() == view.verticalScrollBar().maximum()  # followed the end
    assert viewer.follow.isChecked()
    # "tick 1", "tick 10".."tick 19", "tick 100".."tick 199": 1 + 10 + 100
    qtbot.waitUntil(lambda: viewer.scan is not None and viewer.scan.count == 111,
                    timeout=10_000)
    with open(path, "ab") as f:
        f.write(b" - now finished, tick 1 again\n")
    qtbot.waitUntil(lambda: view.display_line(401).text.endswith("tick 1 again"),
                    timeout=10_000)
    qtbot.waitUntil(lambda: viewer.scan is not None and viewer.scan.count == 112,
                    timeout=10_000)
    assert view.row_count == 402
    # Scrolling up stops following; new lines then do not move the view.
    view.verticalScrollBar().setValue(0)
    assert not viewer.follow.isChecked()
    with open(path, "ab") as f:
        f.write(b"more\n" * 50)
    qtbot.waitUntil(lambda: view.row_count == 452, timeout=10_000)
    assert view.top_row() == 0
    viewer.close_file()
