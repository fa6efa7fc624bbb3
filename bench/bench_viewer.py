"""Output viewer: open time for 1 GB vs 1 KB, UI stall while searching, memory with 1 GB open.

- open: `OutputViewer.open(path)` plus the synchronous paint of the first screen, median of
  repeated opens; the 1 KB file is the floor (goal: 1 GB ≤ 200 ms).
- stall: a 5 ms QTimer heartbeat runs while the 1 GB file is indexed and searched (plain,
  any case, and a regex); the longest gap between beats, against the gaps of an idle loop
  measured the same way (goal: ≤ 50 ms).
- memory: RSS of this process with the 1 GB file open, indexed, searched and shown at its
  last line, minus the RSS with an empty viewer window (goal: < 150 MB); the worker
  process that indexes and searches is shown on its own line.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import psutil
from PySide6.QtCore import QElapsedTimer, QTimer
from PySide6.QtWidgets import QApplication

from bench.common import fmt_seconds, report, stats
from desktop.viewer.window import OutputViewer

MB = 1 << 20
GB = 1 << 30
OPENS = 15


def _block(first: int) -> bytes:
    lines = []
    size, i = 0, first
    while size < MB - 200:
        line = b"%09d \x1b[32mINFO\x1b[0m worker=%d step=%d status=ok payload=%s" % (
            i, i % 16, i * 7, b"abcdefghij" * (i % 9))
        lines.append(line)
        size += len(line) + 1
        i += 1
    data = b"\n".join(lines) + b"\n"
    return data + b"#" * (MB - len(data) - 1) + b"\n"


def _write_files(folder: Path) -> tuple[Path, Path]:
    big, small = folder / "big.log", folder / "small.log"
    block = _block(0)
    with open(big, "wb") as f:
        for _ in range(GB // MB - 1):
            f.write(block)
        f.write(block[: MB // 2] + b"\nNEEDLE near the end\n" + b"x" * (MB // 2 - 21))
    small.write_bytes(block[:1024])
    return big, small


def _pump(app: QApplication, until: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not until() and time.monotonic() < deadline:  # type: ignore[operator]
        app.processEvents()
        time.sleep(0.001)


def _open_times(app: QApplication, viewer: OutputViewer, path: Path) -> list[float]:
    samples = []
    for _ in range(OPENS):
        t0 = time.perf_counter()
        viewer.open(path)
        viewer.view.repaint()
        samples.append(time.perf_counter() - t0)
        viewer.close_file()
        app.processEvents()
    return samples


def _heartbeat(app: QApplication, work: object, seconds_max: float) -> list[float]:
    """Gaps (s) between 5 ms timer beats while `work()` is False."""
    gaps: list[float] = []
    clock = QElapsedTimer()
    clock.start()
    last = [clock.nsecsElapsed()]

    def beat() -> None:
        now = clock.nsecsElapsed()
        gaps.append((now - last[0]) / 1e9)
        last[0] = now

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(beat)
    timer.start()
    deadline = time.monotonic() + seconds_max
    while not work() and time.monotonic() < deadline:  # type: ignore[operator]
        app.processEvents()
        time.sleep(0.0005)
    timer.stop()
    return gaps


def run() -> None:
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)
    process = psutil.Process()
    with tempfile.TemporaryDirectory(prefix="reins-bench-viewer-") as tmp:
        t0 = time.perf_counter()
        big, small = _write_files(Path(tmp))
        print(f"   (wrote a 1 GB test file in {time.perf_counter() - t0:.1f} s)")
        viewer = OutputViewer()
        viewer.resize(1000, 700)
        viewer.show()
        app.processEvents()
        empty_rss = process.memory_info().rss

        floor = statistics.median(_open_times(app, viewer, small))
        big_open = statistics.median(_open_times(app, viewer, big))
        report("open 1 KB file + first paint (floor)", fmt_seconds(floor), ratio=1.0)
        report("open 1 GB file + first paint", fmt_seconds(big_open),
               ratio=big_open / floor, goal="≤ 200 ms", ok=big_open <= 0.2)

        idle = _heartbeat(app, lambda: False, 2.0)
        idle_stats = stats(idle)
        report("event-loop gap, idle (floor), max", fmt_seconds(idle_stats.maximum), ratio=1.0)

        viewer.open(big)
        viewer.view.repaint()  # the first paint is the open time above, not a stall
        t_index = time.perf_counter()
        gaps = _heartbeat(app, lambda: viewer.index is not None and viewer.index.done, 120)
        index_s = time.perf_counter() - t_index
        report("index 1 GB in background (wall)", fmt_seconds(index_s))
        for label, text, regex, case in (("plain, any case", "needle", False, False),
                                         ("plain, match case", "NEEDLE", False, True),
                                         ("regex, match case", r"NEEDLE\s+near", True, True)):
            viewer.search_for(text, regex=regex, case=case)
            t_search = time.perf_counter()
            gaps += _heartbeat(app, lambda: viewer.scan is not None and viewer.scan.done, 300)
            search_s = time.perf_counter() - t_search
            count = viewer.scan.count if viewer.scan else 0
            report(f"search 1 GB, {label} ({count} match)", fmt_seconds(search_s),
                   goal="count fills in", ok=count == 1)
        busy = stats(gaps)
        report("event-loop gap while indexing/searching, p99", fmt_seconds(busy.p99),
               ratio=busy.p99 / idle_stats.p99)
        report("event-loop gap while indexing/searching, max", fmt_seconds(busy.maximum),
               ratio=busy.maximum / idle_stats.maximum, goal="≤ 50 ms",
               ok=busy.maximum <= 0.05)

        viewer.find_next()
        viewer.go_to_line(10**12)
        viewer.view.repaint()
        app.processEvents()
        grown = process.memory_info().rss - empty_rss
        report("UI RSS with 1 GB open − empty window", f"{grown / MB:.1f} MB",
               goal="< 150 MB", ok=grown < 150 * MB)
        index = viewer.index
        if index is not None and index.worker_pid is not None:
            worker_rss = psutil.Process(index.worker_pid).memory_info().rss
            report("worker process RSS (indexing/search, not the UI)", f"{worker_rss / MB:.1f} MB")
        viewer.close_file()
        viewer.close()
        os.sync()
