"""Saved eval runs (the `reins eval --json` files) as the window shows them. Pure.

The file format, its failure causes and the arithmetic (metrics, comparison) are
kernel.eval.scoring's, a pure leaf that imports nothing of the kernel; this module only reads
a file and turns results into table cells and chart rows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from desktop.evaluations.charts import MetricRow
from kernel.eval.scoring import (
    CAUSES,
    MEASURED_ONLY,
    METRIC_NAMES,
    Metrics,
    TaskResult,
    metrics,
    results_from_dict,
)
from kernel.visible import one_line

RATES = ("tool_selection_accuracy", "argument_validity", "completion_rate")
LABELS = {
    "tool_selection_accuracy": "tool selection", "argument_validity": "argument validity",
    "completion_rate": "completion", "avg_rounds": "rounds (avg)",
    "avg_tokens": "tokens (avg)", "avg_cost_usd": "cost $ (avg)", "avg_seconds": "time s (avg)",
    "avg_request_bytes": "largest request B (avg)",
}
PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] (.+) (passed|failed \S+)$")


@dataclass(frozen=True)
class SavedRun:
    path: Path
    label: str
    model: str
    results: tuple[TaskResult, ...]
    metrics: Metrics


def load_run(path: Path) -> SavedRun:
    """A results file, or ValueError saying why it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    results = tuple(results_from_dict(data))
    model = one_line(str(data.get("model", "?")))
    overrides = data.get("settings") if isinstance(data.get("settings"), dict) else {}
    shown = "".join(f" · {k}={json.dumps(v)}" for k, v in overrides.items())
    label = one_line(f"{path.stem} · {model} · {data.get('suite', '?')}{shown}")
    return SavedRun(path, label, model, results, metrics(results))


def progress_of(line: str) -> tuple[int, int, str, bool] | None:
    """(done, total, task, passed) of one progress line of `reins eval`, else None."""
    match = PROGRESS.match(line.strip())
    if match is None:
        return None
    return int(match[1]), int(match[2]), match[3], match[4] == "passed"


def format_value(name: str, value: float | None) -> str:
    if value is None:
        return "—"
    if name in RATES:
        return f"{value * 100:.0f}%"
    if name == "avg_cost_usd":
        return f"{value:.4f}"
    return f"{value:.1f}"


def chart_rows(runs: Sequence[Metrics]) -> list[MetricRow]:
    """The bars for one run or several side by side: the rates on a 0–100% scale; with
    several runs also the averages, each scaled to its largest value among them (alone, an
    average has nothing to be long against: the summary gives it as a number); then each
    failure cause seen, as a count of the runs' tasks."""
    rows = []
    for name in METRIC_NAMES:
        if name not in RATES and len(runs) < 2:
            continue
        values = tuple(getattr(m, name) for m in runs)
        known = [v for v in values if v is not None]
        scale = 1.0 if name in RATES else max(known, default=0.0) or 1.0
        rows.append(MetricRow(LABELS[name], values, scale,
                              tuple(format_value(name, v) for v in values)))
    causes = [c for c in CAUSES if any(m.failure_causes.get(c) for m in runs)]
    tasks = max((m.tasks for m in runs), default=0) or 1
    for cause in causes:
        counts = tuple(float(m.failure_causes.get(cause, 0)) for m in runs)
        rows.append(MetricRow(f"failed: {cause}", counts, float(tasks),
                              tuple(str(int(c)) for c in counts)))
    return rows


def averages_text(m: Metrics) -> str:
    """The averages in words; tokens and cost of a run none of whose tasks measured them
    (a scripted run) are "not measured", never the fake server's numbers."""
    return " · ".join(
        f"{LABELS[n]} "
        + ("not measured" if n in MEASURED_ONLY and getattr(m, n) is None and m.tasks
           else format_value(n, getattr(m, n)))
        for n in METRIC_NAMES if n not in RATES)


def task_cells(result: TaskResult) -> list[str]:
    return [result.name, "passed" if result.passed else "FAILED", result.failure_cause or "",
            str(result.rounds), str(result.tokens) if result.measured else "not measured",
            f"{result.seconds:.2f}",
            "; ".join(result.failures)]


TASK_HEADERS = ["task", "result", "cause", "rounds", "tokens", "time s", "failures"]
