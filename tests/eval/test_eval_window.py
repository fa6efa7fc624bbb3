"""The Evaluations window (pytest-qt, offscreen): a real `reins eval --scripted` child
process runs a small suite, the window follows its progress and shows the table and the
charts; two saved runs are compared; the chart geometry is a table test."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import psutil
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QAction, QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QLineEdit,
    QListWidget,
    QPushButton,
    QTableWidget,
)
from pytestqt.qtbot import QtBot

from desktop.evaluations.charts import (
    LABEL_WIDTH,
    SERIES_COLORS,
    VALUE_WIDTH,
    MetricChart,
    MetricRow,
    bar_layout,
)
from desktop.evaluations.process import EvalProcess
from desktop.evaluations.runs import averages_text, chart_rows, progress_of, task_cells
from desktop.evaluations.window import EvaluationsWindow
from desktop.main_window import MainWindow
from kernel.eval.scoring import TaskResult, metrics, results_dict
from kernel.paths import AppPaths

ROOT = Path(__file__).resolve().parents[2]
FAILING = Path(__file__).parent / "failing"


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """Two built-in tasks and two that fail on purpose."""
    folder = tmp_path / "suite"
    for source in (ROOT / "eval" / "tasks" / "lookup-read-file",
                   ROOT / "eval" / "tasks" / "none-greeting", FAILING / "wrong-tool",
                   FAILING / "tool-when-none"):
        shutil.copytree(source, folder / source.name)
    return folder


@pytest.fixture(autouse=True)
def no_api_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith("ANTHROPIC_")]:
        monkeypatch.delenv(name)


def save(path: Path, results: list[TaskResult], **info: object) -> Path:
    path.write_text(json.dumps(results_dict(results, {"model": "m", "suite": "s", **info})))
    return path


def test_run_a_suite_watch_it_and_read_table_and_charts(qtbot: QtBot, tmp_path: Path,
                                                        suite: Path) -> None:
    window = EvaluationsWindow(tmp_path / "runs")
    qtbot.addWidget(window)
    window.show()
    window.tasks_edit.setText(str(suite))
    seen: list[tuple[int, int, str, bool]] = []
    window.process.progress.connect(lambda *a: seen.append(a))
    with qtbot.waitSignal(window.process.finished, timeout=240_000):
        window.run_suite()
        assert not window.run_button.isEnabled() and window.stop_button.isEnabled()
    assert [s[0] for s in seen] == [1, 2, 3, 4] and {s[1] for s in seen} == {4}
    assert {(name, passed) for _, _, name, passed in seen} == {
        ("lookup-read-file", True), ("none-greeting", True), ("wrong-tool", False),
        ("tool-when-none", False)}
    assert window.progress_bar.value() == 4 and window.progress_bar.maximum() == 4
    assert window.run_button.isEnabled() and not window.stop_button.isEnabled()
    # the new run is saved, listed, selected and shown
    (saved,) = (tmp_path / "runs").glob("*.json")
    assert window.runs_list.count() == 1 and window.runs_list.item(0).isSelected()
    table = window.task_table
    rows = {table.item(r, 0).text(): [table.item(r, c).text() for c in range(table.columnCount())]
            for r in range(table.rowCount())}
    assert rows["wrong-tool"][1:3] == ["FAILED", "wrong_tool"]
    assert rows["tool-when-none"][1:3] == ["FAILED", "tool_when_none"]
    assert rows["lookup-read-file"][1] == "passed" and rows["lookup-read-file"][3] == "2"
    assert rows["lookup-read-file"][4] == "not measured"  # the fake server's tokens
    assert "tokens (avg) not measured" in window.summary.text()
    assert "cost $ (avg) not measured" in window.summary.text()
    assert "2/4 passed" in window.summary.text()
    assert "tool_when_none 1" in window.summary.text()
    by_label = {r.label: r for r in window.chart.rows}
    assert by_label["completion"].values == (0.5,) and by_label["completion"].text == ("50%",)
    assert by_label["tool selection"].values == (0.5,)
    assert by_label["failed: wrong_tool"].values == (1.0,)
    assert by_label["failed: wrong_tool"].scale == 4.0
    assert "rounds (avg)" in window.summary.text()
    # the chart is really painted: a completion bar of half the track in the series colour
    window.chart.resize(800, window.chart.minimumHeight())
    image = window.chart.grab().toImage()
    completion = next(b for b in bar_layout(window.chart.rows, 800)
                      if b.text == "50%" and b.rect.top() > 2 * 34)
    inside = completion.rect.center()
    assert image.pixelColor(int(inside.x()), int(inside.y())) == QColor(SERIES_COLORS[0])
    beyond = QRectF(completion.rect.right() + VALUE_WIDTH + 40, inside.y(), 1, 1)
    assert image.pixelColor(int(beyond.x()), int(beyond.y())) != QColor(SERIES_COLORS[0])
    assert json.loads(saved.read_text())["metrics"]["completion_rate"] == 0.5


def test_the_view_menu_opens_the_window_once(qtbot: QtBot, reins_home: AppPaths) -> None:
    window = MainWindow()
    qtbot.addWidget(window)
    action = window.findChild(QAction, "evaluations")
    assert isinstance(action, QAction) and action.text() == "&Evaluations…"
    action.trigger()
    (opened,) = window.findChildren(EvaluationsWindow)
    assert opened.isVisible() and opened.runs_dir == reins_home.data / "evals"
    action.trigger()
    assert window.findChildren(EvaluationsWindow) == [opened]


def test_every_control_has_an_accessible_name(qtbot: QtBot, tmp_path: Path) -> None:
    window = EvaluationsWindow(tmp_path / "runs")
    qtbot.addWidget(window)
    controls = [c for kind in (QPushButton, QCheckBox, QLineEdit, QListWidget, QTableWidget,
                               MetricChart)
                for c in window.findChildren(kind)]
    missing = [(c.metaObject().className(), c.objectName()) for c in controls
               if not c.accessibleName()]
    assert len(controls) >= 10 and missing == []


def test_two_saved_runs_are_compared(qtbot: QtBot, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    a = save(runs / "20260101-000000.json", [
        TaskResult("t1", True, rounds=2, selection_ok=True),
        TaskResult("t2", False, "wrong_tool", rounds=5, selection_ok=False)],
        settings={"tool_search_threshold": 1000})
    b = save(runs / "20260102-000000.json", [
        TaskResult("t1", True, rounds=2, selection_ok=True),
        TaskResult("t2", True, rounds=3, selection_ok=True)])
    window = EvaluationsWindow(runs)
    qtbot.addWidget(window)
    assert [window.runs_list.item(i).text() for i in range(2)] == [
        f"{b.stem} · m · 2/2 passed", f"{a.stem} · m · 1/2 passed"]
    window.runs_list.item(0).setSelected(True)
    window.runs_list.item(1).setSelected(True)
    assert window.tabs.currentIndex() == 1
    table = window.compare_table
    rows = [[table.item(r, c).text() for c in range(4)] for r in range(table.rowCount())]
    assert rows == [["t1", "passed", "passed", "+0.0"],
                    ["t2", "failed (wrong_tool)", "passed", "-2.0"]]
    text = window.compare_summary.text()
    assert "1 of 2 tasks changed" in text and "completion_rate 50% → 100%" in text
    assert "wrong_tool 1→0" in text
    assert "before (blue bars): 20260101-000000 · m · s · tool_search_threshold=1000" in text
    completion = next(r for r in window.compare_chart.rows if r.label == "completion")
    assert completion.values == (0.5, 1.0)  # before, after: two bars
    (broken := runs / "20260103-000000.json").write_text("{not json")
    window.reload_runs(select=broken)
    assert "20260103-000000.json" in window.status.text()
    assert window.runs_list.item(0).text() == "20260103-000000 (unreadable)"


def test_a_run_that_cannot_start_says_why(qtbot: QtBot, tmp_path: Path) -> None:
    window = EvaluationsWindow(tmp_path / "runs")
    qtbot.addWidget(window)
    window.tasks_edit.setText(str(tmp_path / "no-such-tasks"))
    with qtbot.waitSignal(window.process.failed, timeout=120_000) as blocker:
        window.run_suite()
    assert "exit code 2" in blocker.args[0] and "no tasks" in blocker.args[0]
    assert "no tasks" in window.status.text() and window.run_button.isEnabled()
    assert not list((tmp_path / "runs").glob("*.json"))


def test_a_run_stopped_midway_leaves_no_process(qtbot: QtBot, tmp_path: Path,
                                               suite: Path) -> None:
    process = EvalProcess()
    with qtbot.waitSignal(process.progress, timeout=240_000):
        process.start(["--scripted", "--tasks", str(suite), "--tasks",
                       str(ROOT / "eval" / "tasks" / "absorb-timeout")], tmp_path / "out.json")
    assert process._process is not None
    tree = psutil.Process(process._process.processId()).children(recursive=True)
    assert len(tree) >= 2  # the pool's workers (and what they run)
    with qtbot.waitSignal(process.failed, timeout=60_000) as blocker:
        process.stop()
    assert blocker.args == ["stopped"] and not process.running
    _, alive = psutil.wait_procs(tree, timeout=30)  # a loaded machine: the runs cancel first
    assert alive == []
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize(("line", "parsed"), [
    ("[1/35] lookup-read-file passed", (1, 35, "lookup-read-file", True)),
    ("[12/35] absorb-timeout failed api_error", (12, 35, "absorb-timeout", False)),
    ("  [3/4] a task with spaces passed\n", (3, 4, "a task with spaces", True)),
    ("[3/4] t failed", None),
    ("[x/4] t passed", None),
    ("task passed", None),
    ("", None),
])
def test_progress_lines(line: str, parsed: tuple[int, int, str, bool] | None) -> None:
    assert progress_of(line) == parsed


ROW = MetricRow("m", (0.5,), 1.0, ("50%",))
# (rows, width, expected bars as (left, width, series))
LAYOUT_TABLE = [
    ([ROW], 600, [(LABEL_WIDTH, 0.5 * (600 - LABEL_WIDTH - VALUE_WIDTH), 0)]),
    ([MetricRow("m", (1.0,), 1.0, ("100%",))], 600,
     [(LABEL_WIDTH, 600 - LABEL_WIDTH - VALUE_WIDTH, 0)]),
    ([MetricRow("m", (5.0,), 1.0, ("5",))], 600,  # clamped to the track
     [(LABEL_WIDTH, 600 - LABEL_WIDTH - VALUE_WIDTH, 0)]),
    ([MetricRow("m", (-1.0,), 1.0, ("-1",))], 600, [(LABEL_WIDTH, 1.0, 0)]),
    ([MetricRow("m", (0.0,), 1.0, ("0%",))], 600, [(LABEL_WIDTH, 1.0, 0)]),
    ([MetricRow("m", (None,), 1.0, ("—",))], 600, []),
    ([MetricRow("m", (3.0,), 0.0, ("3",))], 600, [(LABEL_WIDTH, 1.0, 0)]),
    ([MetricRow("m", (0.25, 0.75), 1.0, ("25%", "75%"))], 600,
     [(LABEL_WIDTH, 0.25 * 320, 0), (LABEL_WIDTH, 0.75 * 320, 1)]),
    ([MetricRow("m", (None, 0.5), 1.0, ("—", "50%"))], 600, [(LABEL_WIDTH, 160.0, 1)]),
]


@pytest.mark.parametrize(("rows", "width", "expected"), LAYOUT_TABLE)
def test_bar_layout(rows: list[MetricRow], width: int,
                    expected: list[tuple[float, float, int]]) -> None:
    bars = bar_layout(rows, width)
    assert [(b.rect.left(), pytest.approx(b.rect.width()), b.series) for b in bars] == expected


def test_two_bars_of_a_row_do_not_overlap_and_rows_stack() -> None:
    rows = [MetricRow("a", (0.5, 0.5), 1.0, ("", "")), MetricRow("b", (1.0, 1.0), 1.0, ("", ""))]
    bars = bar_layout(rows, 600)
    assert all(bars[i].rect.bottom() <= bars[i + 1].rect.top() for i in range(3))


def test_chart_rows_scale_rates_to_one_and_others_to_the_largest() -> None:
    a = metrics([TaskResult("x", True, rounds=2, tokens=100),
                 TaskResult("y", True, rounds=2, tokens=100)])
    b = metrics([TaskResult(n, False, c, rounds=8, tokens=50)
                 for n, c in (("x", "loop"), ("y", "loop"), ("z", "api_error"))])
    rows = {r.label: r for r in chart_rows([a, b])}
    assert rows["completion"].scale == 1.0 and rows["completion"].values == (1.0, 0.0)
    assert rows["rounds (avg)"].scale == 8.0 and rows["tokens (avg)"].scale == 100.0
    assert rows["largest request B (avg)"].values == (None, None)
    assert rows["largest request B (avg)"].scale == 1.0
    assert rows["completion"].text == ("100%", "0%")
    assert [r.label for r in chart_rows([a, b])][-2:] == ["failed: api_error", "failed: loop"]
    assert rows["failed: loop"].values == (0.0, 2.0) and rows["failed: loop"].scale == 3.0
    assert rows["failed: loop"].text == ("0", "2")
    alone = [r.label for r in chart_rows([b])]
    assert alone == ["tool selection", "argument validity", "completion", "failed: api_error",
                     "failed: loop"]
    assert [r.label for r in chart_rows([a])] == ["tool selection", "argument validity",
                                                   "completion"]


def test_scripted_tokens_and_cost_read_as_not_measured() -> None:
    fake = TaskResult("x", True, rounds=2, tokens=240, cost_usd=0.5, measured=False)
    real = TaskResult("x", True, rounds=2, tokens=240, cost_usd=0.5)
    assert task_cells(fake)[4] == "not measured" and task_cells(real)[4] == "240"
    assert "tokens (avg) not measured · cost $ (avg) not measured" in averages_text(
        metrics([fake]))
    assert "tokens (avg) 240.0 · cost $ (avg) 0.5000" in averages_text(metrics([fake, real]))
    assert "not measured" not in averages_text(metrics([]))
