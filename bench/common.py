"""Timing helpers: every figure is printed beside the floor measured in the same run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Stats:
    median: float
    p99: float
    maximum: float
    n: int


def stats(samples: list[float]) -> Stats:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return Stats(statistics.median(ordered), p99, ordered[-1], len(ordered))


def time_calls(fn: Callable[[], object], n: int, warmup: int = 50) -> Stats:
    """Seconds per call of `fn`, measured one call at a time."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return stats(samples)


def fmt_seconds(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def report(label: str, value: str, *, ratio: float | None = None, goal: str = "",
           ok: bool | None = None) -> None:
    """One line: the figure, its ratio to the floor of the same run, and the goal."""
    parts = [f"   {label:<52} {value:>14}"]
    if ratio is not None:
        parts.append(f"  {ratio:6.2f}× floor")
    if goal:
        verdict = "" if ok is None else ("  ok" if ok else "  MISSED")
        parts.append(f"  (goal {goal}){verdict}")
    print("".join(parts))
