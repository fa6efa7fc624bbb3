"""Metrics over task results, the results file, and the difference of two runs. Pure.

A `TaskResult` is one run of one task (with `--repeat N` a task has N). `metrics()` sums
them up; `results_dict` / `results_from_dict` are the `--json` file (docs/EVAL.md);
`compare()` says what changed between two such files, task by task and metric by metric.

The results file is what `reins eval` hands the app's Evaluations window (a child process
writes it), so this module is its format: it imports nothing but the standard library, and
the window reads and compares files with it (a pure leaf of tests/desktop/
test_desktop_imports.py). The failure causes (`CAUSES`) are the file's words, so they are
defined here; kernel.eval.checks decides which one explains a failure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

CAUSES = ("api_error", "harness_error", "loop", "limit", "tool_when_none", "no_tool",
          "wrong_tool", "bad_arguments", "approval_denied", "wrong_result")
"""Failure causes in order of precedence (the first that applies is the task's cause): what
stopped the run first, then the model's own mistake, then the harness' reaction to it (a
forbidden call that needed an approval nobody gave is the model's `tool_when_none` or
`wrong_tool`, not `approval_denied`).

api_error: the model API failed (after the SDK's retries); harness_error: the run crashed
or could not start; loop: stopped as a repeated call; limit: a round, token, cost or time
limit stopped it (or it needed more rounds than the task allows, or the output cap ended it:
those two rank after the model's own mistakes, since the extra round may be Reins' own
continuation after the cap, not what went wrong); tool_when_none: it called
a tool for a question that needs none; no_tool: it called no tool where one was needed;
wrong_tool: a needed tool not called, a forbidden one called, the wrong order, a tool
called too often or too rarely, or (scripted) a tool never offered; bad_arguments: no call
met the argument checks; approval_denied: a call it needed was denied; wrong_result: the
answer, the files, the tool results the model was sent, or the errors the harness had to
absorb are not what the task expects."""

RESULTS_VERSION = 1


class ResultsError(ValueError):
    """A results file cannot be read."""


@dataclass(frozen=True)
class TaskResult:
    name: str
    passed: bool
    failure_cause: str | None = None
    failures: tuple[str, ...] = ()
    category: str = ""
    rounds: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    measured: bool = True
    """`tokens` and `cost_usd` were measured: False in scripted runs, whose fake server
    reports made-up usage (they are left out of the averages and shown as not measured)."""
    seconds: float = 0.0
    tool_calls: int = 0
    tools_called: tuple[str, ...] = ()
    selection_ok: bool | None = None
    args_ok: bool | None = None
    """Every call's arguments were valid (None: the run made no call)."""
    valid_calls: int | None = None
    """How many of the `tool_calls` had valid arguments (None: not known, an older file)."""
    request_bytes: int | None = None
    """The largest model request of the run (scripted runs: measured at the fake server)."""
    tools_offered: int | None = None
    """The most tools any request offered (scripted runs)."""


@dataclass(frozen=True)
class Metrics:
    tasks: int
    passed: int
    tool_selection_accuracy: float | None
    argument_validity: float | None
    completion_rate: float | None
    avg_rounds: float | None
    avg_tokens: float | None
    avg_cost_usd: float | None
    avg_seconds: float | None
    avg_request_bytes: float | None
    failure_causes: Mapping[str, int] = field(default_factory=dict)


MEASURED_ONLY = ("avg_tokens", "avg_cost_usd")
"""The metrics averaged over measured runs only (None when no run was measured)."""

METRIC_NAMES = ("tool_selection_accuracy", "argument_validity", "completion_rate",
                "avg_rounds", "avg_tokens", "avg_cost_usd", "avg_seconds", "avg_request_bytes")
"""The numeric metrics, in the order tables and charts show them."""


def _rate(values: Sequence[bool | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _mean(values: Sequence[float | int | None]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return sum(known) / len(known) if known else None


def argument_validity(results: Sequence[TaskResult]) -> float | None:
    """Of the calls made, the share whose arguments were valid; None (n/a) when no call was
    made: a run without a call says nothing about arguments."""
    known = [r for r in results if r.valid_calls is not None]
    calls = sum(r.tool_calls for r in known)
    return sum(r.valid_calls or 0 for r in known) / calls if calls else None


def metrics(results: Sequence[TaskResult]) -> Metrics:
    """tool_selection_accuracy: of the results whose task says which tools (or none), the
    share that chose right; argument_validity: of the calls made, the share with valid
    arguments (`argument_validity`);
    completion_rate: the share passed; averages over all results (tokens and cost over the
    measured ones, request bytes over the scripted ones); failure_causes: how many failed
    results each cause explains."""
    causes = Counter(r.failure_cause for r in results if not r.passed and r.failure_cause)
    measured = [r for r in results if r.measured]
    return Metrics(
        tasks=len(results), passed=sum(r.passed for r in results),
        tool_selection_accuracy=_rate([r.selection_ok for r in results]),
        argument_validity=argument_validity(results),
        completion_rate=_rate([r.passed for r in results]),
        avg_rounds=_mean([r.rounds for r in results]),
        avg_tokens=_mean([r.tokens for r in measured]),
        avg_cost_usd=_mean([r.cost_usd for r in measured]),
        avg_seconds=_mean([r.seconds for r in results]),
        avg_request_bytes=_mean([r.request_bytes for r in results]),
        failure_causes={c: causes[c] for c in CAUSES if causes[c]},
    )


def results_dict(results: Sequence[TaskResult], info: Mapping[str, Any]) -> dict[str, Any]:
    """The `--json` file: `version`, the run's `info` (model, scripted, suite, started),
    `metrics` and one entry per task result."""
    return {"version": RESULTS_VERSION, **info, "metrics": asdict(metrics(results)),
            "tasks": [{**asdict(r), "failures": list(r.failures),
                       "tools_called": list(r.tools_called)} for r in results]}


_RESULT_FIELDS = set(TaskResult.__dataclass_fields__)


def results_from_dict(data: Any) -> list[TaskResult]:
    """The task results of a results file (fields it does not know are ignored, so a
    newer file still compares; an older scripted file's tokens count as not measured)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("tasks"), list):
        raise ResultsError("not a reins eval results file (no \"tasks\" list)")
    out = []
    measured = data.get("scripted") is not True
    for i, entry in enumerate(data["tasks"]):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) \
                or not isinstance(entry.get("passed"), bool):
            raise ResultsError(f"tasks[{i}]: needs a name and passed")
        known = {"measured": measured,
                 **{k: v for k, v in entry.items() if k in _RESULT_FIELDS}}
        known["failures"] = tuple(known.get("failures") or ())
        known["tools_called"] = tuple(known.get("tools_called") or ())
        try:
            out.append(TaskResult(**known))
        except TypeError as exc:
            raise ResultsError(f"tasks[{i}]: {exc}") from None
    return out


@dataclass(frozen=True)
class TaskChange:
    name: str
    before: str
    """"passed 2/2", "failed (wrong_tool)", "—" when the task was not in that run."""
    after: str
    changed: bool
    rounds_delta: float | None


@dataclass(frozen=True)
class MetricChange:
    name: str
    before: float | None
    after: float | None

    @property
    def delta(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before


@dataclass(frozen=True)
class Comparison:
    tasks: tuple[TaskChange, ...]
    metrics: tuple[MetricChange, ...]
    causes: tuple[tuple[str, int, int], ...]
    """(cause, count before, count after) for every cause seen in either run."""


def _state(results: Sequence[TaskResult]) -> str:
    if not results:
        return "—"
    passed = sum(r.passed for r in results)
    if passed == len(results):
        return "passed" if len(results) == 1 else f"passed {passed}/{len(results)}"
    causes = ", ".join(sorted({r.failure_cause or "?" for r in results if not r.passed}))
    count = "" if len(results) == 1 else f" {len(results) - passed}/{len(results)}"
    return f"failed{count} ({causes})"


def compare(before: Sequence[TaskResult], after: Sequence[TaskResult]) -> Comparison:
    names = list(dict.fromkeys([*(r.name for r in before), *(r.name for r in after)]))
    tasks = []
    for name in names:
        a = [r for r in before if r.name == name]
        b = [r for r in after if r.name == name]
        ra, rb = _mean([r.rounds for r in a]), _mean([r.rounds for r in b])
        sa, sb = _state(a), _state(b)
        tasks.append(TaskChange(name, sa, sb, sa != sb,
                                None if ra is None or rb is None else rb - ra))
    ma, mb = metrics(before), metrics(after)
    changes = tuple(MetricChange(n, getattr(ma, n), getattr(mb, n)) for n in METRIC_NAMES)
    causes = tuple((c, ma.failure_causes.get(c, 0), mb.failure_causes.get(c, 0))
                   for c in CAUSES if ma.failure_causes.get(c) or mb.failure_causes.get(c))
    return Comparison(tuple(tasks), changes, causes)
