"""Timeline: inserting 10,000 calls, inserting at 10,000 rows, live updates, scroll frames.

Inserts are timed up to the end of endInsertRows (model, proxy and view bookkeeping); paint
cost is in the scroll frames (a synchronous repaint after each scroll step). The floor is a
bare QAbstractTableModel over a list of tuples, shown in a plain QTableView with the same
fixed row height, measured in the same run: every ratio is what the timeline's model, filter
proxy, delegate and details pane cost on top of Qt's own table.
"""

from __future__ import annotations

import statistics
import time

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import QApplication, QHeaderView, QTableView

from bench.common import fmt_seconds, report, stats
from desktop.timeline.panel import TimelinePanel
from kernel.events import ApprovalDecision, ToolCallStarted, ToolProgress, ToolResultEvent

N = 10_000
FRAMES = 200
S = "bench"


class BareModel(QAbstractTableModel):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, ...]] = []

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 7

    def data(self, index: QModelIndex | QPersistentModelIndex,
             role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if role == Qt.ItemDataRole.DisplayRole:
            return self.rows[index.row()][index.column()]
        return None

    def add(self, rows: list[tuple[str, ...]]) -> None:
        first = len(self.rows)
        self.beginInsertRows(QModelIndex(), first, first + len(rows) - 1)
        self.rows.extend(rows)
        self.endInsertRows()


def _events(start: int, n: int) -> list[ToolCallStarted]:
    return [ToolCallStarted(S, f"c{i}", ("bash", "read_file", "grep")[i % 3],
                            {"command": f"make test -j{i % 8}", "i": i}, summary=f"make {i}")
            for i in range(start, start + n)]


def _bare_rows(start: int, n: int) -> list[tuple[str, ...]]:
    return [("queued", "bash", f"make {i}", "", "", "", "") for i in range(start, start + n)]


def _scroll_frames(view: QTableView) -> list[float]:
    bar = view.verticalScrollBar()
    step = max(1, bar.maximum() // FRAMES)
    samples = []
    for k in range(FRAMES):
        bar.setValue((k * step * 7) % (bar.maximum() + 1))
        t0 = time.perf_counter()
        view.viewport().repaint()
        samples.append(time.perf_counter() - t0)
    return samples


def run() -> None:
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)

    bare = BareModel()
    table = QTableView()
    table.setModel(bare)
    table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    table.verticalHeader().setDefaultSectionSize(26)
    table.resize(900, 600)
    table.show()
    app.processEvents()
    t0 = time.perf_counter()
    bare.add(_bare_rows(0, N))
    table.viewport().repaint()
    bare_insert = time.perf_counter() - t0
    t0 = time.perf_counter()
    bare.add(_bare_rows(N, 50))
    bare_batch = time.perf_counter() - t0
    bare_scroll = stats(_scroll_frames(table))

    panel = TimelinePanel()
    panel.resize(1100, 800)
    panel.show()
    app.processEvents()
    events = _events(0, N)
    t0 = time.perf_counter()
    panel.apply_many(events)
    panel.model.flush()
    panel.view.viewport().repaint()
    insert = time.perf_counter() - t0
    report("bare QTableView: insert 10,000 rows + paint (floor)", fmt_seconds(bare_insert),
           ratio=1.0)
    report("timeline: 10,000 tool calls inserted + paint", fmt_seconds(insert),
           ratio=insert / bare_insert)

    more = _events(N, 50)
    t0 = time.perf_counter()
    panel.apply_many(more)
    panel.model.flush()
    batch = time.perf_counter() - t0
    report("bare: insert 50 rows at 10,000 rows, before paint (floor)", fmt_seconds(bare_batch),
           ratio=1.0)
    report("timeline: insert 50 calls at 10,000 rows, before paint", fmt_seconds(batch),
           ratio=batch / bare_batch, goal="≤ 16 ms", ok=batch <= 0.016)

    running = [ApprovalDecision(S, f"c{i}", "allow_once", "mode") for i in range(0, N, 50)]
    panel.apply_many(running)
    panel.model.flush()
    progress = [ToolProgress(S, f"c{(k % 200) * 50}", bytes_so_far=k * 64, elapsed_s=k / 100)
                for k in range(2_000)]
    t0 = time.perf_counter()
    panel.apply_many(progress)
    panel.model.flush()
    updates = time.perf_counter() - t0
    report("timeline: 2,000 progress events on 200 running rows", fmt_seconds(updates),
           goal="≥ 2,000 events/s", ok=updates <= 1.0)
    results = [ToolResultEvent(S, f"c{i}", "bash", i % 7 == 0, "timeout" if i % 7 == 0
                               else None, 12.0, 300, None, "ok") for i in range(0, N, 50)]
    panel.apply_many(results)
    panel.model.flush()

    scroll = stats(_scroll_frames(panel.view))
    report("bare: scroll frame, median (floor)", fmt_seconds(bare_scroll.median), ratio=1.0)
    report("timeline: scroll frame at 10,050 rows, median", fmt_seconds(scroll.median),
           ratio=scroll.median / bare_scroll.median)
    report("timeline: scroll frame at 10,050 rows, p99", fmt_seconds(scroll.p99),
           ratio=scroll.p99 / bare_scroll.p99, goal="≤ 2× floor",
           ok=scroll.p99 <= 2 * bare_scroll.p99)

    searches = []
    for text in ("make 99", "timeout", "nothing-matches", ""):
        t0 = time.perf_counter()
        panel.proxy.set_text(text)  # what the search box does after its typing pause
        searches.append(time.perf_counter() - t0)
    report("timeline: text filter over 10,050 rows, first (builds texts)",
           fmt_seconds(searches[0]))
    report("timeline: text filter over 10,050 rows, median of the others",
           fmt_seconds(statistics.median(searches[1:])), goal="≤ 100 ms",
           ok=statistics.median(searches[1:]) <= 0.1)
    panel.close()
    table.close()
