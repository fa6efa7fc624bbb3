"""The Evaluations window: run a suite, watch it, read the table and the charts, and see
what changed between two saved runs.

The suite runs as `reins eval --json` in a child process (desktop.evaluations.process);
each run is saved in `runs_dir` and listed on the left. One selected run shows its tasks
and a bar chart per metric; two selected runs show the task-by-task difference and both
runs' bars side by side, with each metric's change.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from desktop.evaluations.charts import ROW_HEIGHT, MetricChart
from desktop.evaluations.process import EvalProcess
from desktop.evaluations.runs import (
    TASK_HEADERS,
    SavedRun,
    averages_text,
    chart_rows,
    format_value,
    load_run,
    task_cells,
)
from kernel.eval.scoring import compare
from kernel.visible import one_line

PATH_ROLE = Qt.ItemDataRole.UserRole
CHART_MIN_HEIGHT = 8 * ROW_HEIGHT + 8
"""Every metric's bars visible without scrolling."""


def _fill(table: QTableWidget, headers: list[str], rows: list[list[str]]) -> None:
    table.clear()
    table.setColumnCount(len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            item = QTableWidgetItem(one_line(text))
            item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
            table.setItem(r, c, item)
    table.resizeColumnsToContents()
    table.resizeRowsToContents()


def _run_title(file: Path) -> str:
    """A saved run in the list: when, which model, how many passed."""
    try:
        run = load_run(file)
    except ValueError:
        return f"{file.stem} (unreadable)"
    return f"{file.stem} · {run.model} · {run.metrics.passed}/{run.metrics.tasks} passed"


def _page(summary: QLabel, table: QTableWidget, chart: MetricChart) -> QWidget:
    """A tab: the summary line, then the table above the (scrollable) chart."""
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setWidget(chart)
    area.setMinimumHeight(CHART_MIN_HEIGHT)
    split = QSplitter(Qt.Orientation.Vertical)
    split.addWidget(table)
    split.addWidget(area)
    split.setStretchFactor(0, 1)
    split.setStretchFactor(1, 1)
    page = QWidget()
    layout = QVBoxLayout(page)
    layout.addWidget(summary)
    layout.addWidget(split, 1)
    return page


class EvaluationsWindow(QWidget):
    def __init__(self, runs_dir: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setWindowTitle("Evaluations")
        self.resize(1100, 700)
        self.runs_dir = runs_dir
        self.process = EvalProcess(self)
        self.process.progress.connect(self._progress)
        self.process.finished.connect(self._finished)
        self.process.failed.connect(self._failed)

        self.tasks_edit = QLineEdit()
        self.tasks_edit.setPlaceholderText("built-in suite (or a folder of tasks, or a glob)")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        self.scripted_box = QCheckBox("Scripted (fake model, no key)")
        self.scripted_box.setChecked(True)
        self.model_edit = QLineEdit()
        self.model_edit.setPlaceholderText("model (default: settings)")
        self.run_button = QPushButton("Run")
        self.run_button.clicked.connect(lambda: self.run_suite())
        self.stop_button = QPushButton("Stop")
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(self.process.stop)
        for widget, name in ((self.tasks_edit, "Tasks to run"), (browse, "Browse for tasks"),
                             (self.scripted_box, "Scripted model"),
                             (self.model_edit, "Model"), (self.run_button, "Run the suite"),
                             (self.stop_button, "Stop the run")):
            widget.setAccessibleName(name)
        controls = QHBoxLayout()
        for control in (QLabel("Tasks:"), self.tasks_edit, browse, self.scripted_box,
                        QLabel("Model:"), self.model_edit, self.run_button, self.stop_button):
            controls.addWidget(control)

        self.progress_bar = QProgressBar()
        self.progress_bar.setFormat("%v/%m")
        self.status = QLabel("")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        status_row = QHBoxLayout()
        status_row.addWidget(self.progress_bar, 1)
        status_row.addWidget(self.status, 2)

        self.runs_list = QListWidget()
        self.runs_list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.runs_list.itemSelectionChanged.connect(self._selection_changed)
        self.runs_list.setAccessibleName("Saved runs (select one to show, two to compare)")

        self.task_table = QTableWidget()
        self.chart = MetricChart()
        self.summary = QLabel("")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)

        self.compare_table = QTableWidget()
        self.compare_chart = MetricChart()
        self.task_table.setAccessibleName("Tasks of the run")
        self.compare_table.setAccessibleName("Tasks, before and after")
        self.chart.setAccessibleName("Metrics of the run")
        self.compare_chart.setAccessibleName("Metrics, before and after")
        self.compare_summary = QLabel("Select two saved runs to compare them.")
        self.compare_summary.setTextFormat(Qt.TextFormat.PlainText)
        self.compare_summary.setWordWrap(True)

        self.tabs = QTabWidget()
        self.tabs.addTab(_page(self.summary, self.task_table, self.chart), "Results")
        self.tabs.addTab(_page(self.compare_summary, self.compare_table, self.compare_chart),
                         "Compare")
        split = QSplitter()
        split.addWidget(self.runs_list)
        split.addWidget(self.tabs)
        split.setStretchFactor(1, 4)

        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addLayout(status_row)
        layout.addWidget(split, 1)
        self.reload_runs()

    # ---- saved runs -------------------------------------------------------------------

    def reload_runs(self, select: Path | None = None) -> None:
        self.runs_list.clear()
        files = sorted(self.runs_dir.glob("*.json"), reverse=True) \
            if self.runs_dir.is_dir() else []
        for file in files:
            item = QListWidgetItem(_run_title(file))
            item.setData(PATH_ROLE, str(file))
            self.runs_list.addItem(item)
            if select is not None and file == select:
                item.setSelected(True)

    def _selected(self) -> list[Path]:
        return [Path(i.data(PATH_ROLE)) for i in self.runs_list.selectedItems()]

    def _selection_changed(self) -> None:
        chosen = sorted(self._selected())
        try:
            if len(chosen) == 1:
                self.show_run(load_run(chosen[0]))
            elif len(chosen) == 2:
                self.show_comparison(load_run(chosen[0]), load_run(chosen[1]))
        except ValueError as exc:
            self.status.setText(str(exc))

    def show_run(self, run: SavedRun) -> None:
        _fill(self.task_table, TASK_HEADERS, [task_cells(r) for r in run.results])
        m = run.metrics
        causes = ", ".join(f"{c} {n}" for c, n in m.failure_causes.items()) or "none"
        self.summary.setText(f"{run.label}: {m.passed}/{m.tasks} passed · failure causes: "
                             f"{causes}\n{averages_text(m)}")
        self.chart.set_rows(chart_rows([m]))
        self.tabs.setCurrentIndex(0)

    def show_comparison(self, before: SavedRun, after: SavedRun) -> None:
        diff = compare(before.results, after.results)
        _fill(self.compare_table, ["task", "before", "after", "rounds Δ"],
              [[t.name, t.before, t.after,
                "" if t.rounds_delta is None else f"{t.rounds_delta:+.1f}"]
               for t in diff.tasks])
        changes = [f"{m.name} {format_value(m.name, m.before)} → "
                   f"{format_value(m.name, m.after)}" for m in diff.metrics
                   if m.delta is not None and abs(m.delta) > 1e-9]
        causes = ", ".join(f"{c} {a}→{b}" for c, a, b in diff.causes)
        changed = sum(t.changed for t in diff.tasks)
        self.compare_summary.setText(
            f"before (blue bars): {before.label}\nafter (orange bars): {after.label}\n"
            f"{changed} of {len(diff.tasks)} tasks changed"
            + (f" · {'; '.join(changes)}" if changes else " · no metric changed")
            + (f" · failure causes: {causes}" if causes else ""))
        self.compare_chart.set_rows(chart_rows([before.metrics, after.metrics]))
        self.tabs.setCurrentIndex(1)

    # ---- running ----------------------------------------------------------------------

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "A folder of eval tasks")
        if folder:
            self.tasks_edit.setText(folder)

    def run_suite(self, extra: Sequence[str] = ()) -> None:
        """Run the suite set in the controls (`extra`: more `reins eval` arguments)."""
        if self.process.running:
            return
        args: list[str] = list(extra)
        if self.tasks_edit.text().strip():
            args += ["--tasks", self.tasks_edit.text().strip()]
        if self.scripted_box.isChecked():
            args.append("--scripted")
        if self.model_edit.text().strip():
            args += ["--model", self.model_edit.text().strip()]
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        out = self.runs_dir / f"{time.strftime('%Y%m%d-%H%M%S')}.json"
        self.progress_bar.setRange(0, 0)
        self.status.setText("starting…")
        self.run_button.setEnabled(False)
        self.stop_button.setEnabled(True)
        self.process.start(args, out)

    def _progress(self, done: int, total: int, task: str, passed: bool) -> None:
        self.progress_bar.setRange(0, total)
        self.progress_bar.setValue(done)
        self.status.setText(f"{task}: {'passed' if passed else 'FAILED'}")

    def _finished(self, path: str) -> None:
        self._idle()
        self.status.setText(f"saved {path}")
        self.reload_runs(select=Path(path))

    def _failed(self, message: str) -> None:
        self._idle()
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setValue(0)
        self.status.setText(message)

    def _idle(self) -> None:
        self.run_button.setEnabled(True)
        self.stop_button.setEnabled(False)
