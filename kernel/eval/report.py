"""What `reins eval` prints: the results table, the comparison of two runs, the progress.

Every function returns text (pure); the command writes it. Task names and failure texts
come from task files and model output, so they go through `kernel.visible.one_line`.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernel.eval.scoring import Comparison, Metrics, TaskResult, metrics
from kernel.visible import one_line

BAR_WIDTH = 30


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _mark(value: bool | None) -> str:
    return "—" if value is None else ("yes" if value else "no")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(header)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line.rstrip(), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return out


def _calls_valid(r: TaskResult) -> str:
    if not r.tool_calls:
        return "n/a"
    return "—" if r.valid_calls is None else f"{r.valid_calls}/{r.tool_calls}"


def metric_lines(m: Metrics) -> list[str]:
    validity = ("n/a (no calls)" if m.argument_validity is None
                else _pct(m.argument_validity))
    return [
        f"tool-selection accuracy {_pct(m.tool_selection_accuracy)} · argument validity "
        f"{validity} · completion {_pct(m.completion_rate)} "
        f"({m.passed}/{m.tasks})",
        f"average per run: {_num(m.avg_rounds)} rounds · "
        + ("tokens and cost not measured (scripted)" if m.avg_tokens is None
           else f"{_num(m.avg_tokens, 0)} tokens · ${_num(m.avg_cost_usd, 4)}")
        + f" · {_num(m.avg_seconds, 2)} s"
        + ("" if m.avg_request_bytes is None
           else f" · largest request {_num(m.avg_request_bytes, 0)} B"),
        "failure causes: " + (", ".join(f"{c} {n}" for c, n in m.failure_causes.items())
                              or "none"),
    ]


def results_text(results: Sequence[TaskResult]) -> str:
    rows = [[one_line(r.name), "passed" if r.passed else "FAILED", r.failure_cause or "",
             str(r.rounds), str(r.tokens) if r.measured else "—",
             f"{r.cost_usd:.4f}" if r.measured else "—", f"{r.seconds:.2f}",
             _mark(r.selection_ok), _calls_valid(r)] for r in results]
    lines = _table(["task", "result", "cause", "rounds", "tokens", "cost $", "time s",
                    "right tools", "valid args"], rows)
    failed = [r for r in results if not r.passed]
    if failed:
        lines += ["", "failures:"]
        lines += [f"  {one_line(r.name)}: {one_line('; '.join(r.failures))}" for r in failed]
    lines += ["", *metric_lines(metrics(results))]
    return "\n".join(lines) + "\n"


def comparison_text(comparison: Comparison, before: str, after: str) -> str:
    changed = [t for t in comparison.tasks if t.changed]
    rows = [[one_line(t.name), t.before, t.after, "" if t.rounds_delta is None
             else f"{t.rounds_delta:+.1f}"] for t in comparison.tasks]
    lines = [f"before: {one_line(before)}", f"after:  {one_line(after)}", ""]
    lines += _table(["task", "before", "after", "rounds Δ"], rows)
    lines += ["", f"{len(changed)} of {len(comparison.tasks)} tasks changed", ""]
    metric_rows = []
    for m in comparison.metrics:
        rate = m.name in ("tool_selection_accuracy", "argument_validity", "completion_rate")
        digits = 4 if m.name == "avg_cost_usd" else 1
        delta = m.delta
        shown = "—" if delta is None else (f"{delta * 100:+.0f} pts" if rate
                                           else f"{delta:+.{max(2, digits)}f}")
        before, after = ((_pct(m.before), _pct(m.after)) if rate
                         else (_num(m.before, digits), _num(m.after, digits)))
        metric_rows.append([m.name, before, after, shown])
    lines += _table(["metric", "before", "after", "Δ"], metric_rows)
    if comparison.causes:
        lines += ["", "failure causes: " + ", ".join(
            f"{c} {a}→{b}" for c, a, b in comparison.causes)]
    return "\n".join(lines) + "\n"


def progress_bar(done: int, total: int, result: TaskResult) -> str:
    """One progress line for a terminal (rewritten in place with CR)."""
    filled = min(BAR_WIDTH, BAR_WIDTH * done // max(1, total))
    state = "ok" if result.passed else f"FAILED {result.failure_cause}"
    return (f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total} "
            f"{one_line(result.name)[:40]} {state}\x1b[K")


def progress_line(done: int, total: int, result: TaskResult) -> str:
    """One progress line for a pipe (the Evaluations window reads these)."""
    state = "passed" if result.passed else f"failed {result.failure_cause}"
    return f"[{done}/{total}] {one_line(result.name)} {state}\n"
