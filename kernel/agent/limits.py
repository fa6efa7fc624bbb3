"""Limits of a run, as pure decisions: budgets, repeated calls, per-tool rate limits.

Each limit that ends a run has its own stop reason. Nothing here does I/O or reads a clock:
times are passed in, so every decision is tested without waiting.
"""

from __future__ import annotations

import enum
import json
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kernel.tools.spec import ToolCall


class StopReason(enum.StrEnum):
    END_TURN = "end_turn"
    MAX_ROUNDS = "max_rounds"
    TOKEN_BUDGET = "token_budget"
    COST_BUDGET = "cost_budget"
    TIME_BUDGET = "time_budget"
    CANCELLED = "cancelled"
    LOOP_DETECTED = "loop_detected"
    MAX_TOKENS = "max_tokens"
    REFUSAL = "refusal"
    ERROR = "error"


LIMIT_REASONS = frozenset({
    StopReason.MAX_ROUNDS, StopReason.TOKEN_BUDGET, StopReason.COST_BUDGET,
    StopReason.TIME_BUDGET, StopReason.CANCELLED, StopReason.LOOP_DETECTED,
    StopReason.MAX_TOKENS,
})


@dataclass(frozen=True)
class LoopLimits:
    max_rounds: int = 50
    """Model requests per run."""
    max_tokens: int | None = None
    """Input + output tokens (cached included) per run."""
    max_cost_usd: float | None = None
    max_seconds: float | None = None
    """Wall-clock time per run; a resumed run goes on from the time it had used."""
    repeat_block: int = 3
    """The Nth consecutive identical call is not executed."""
    repeat_stop: int = 5
    """The Nth consecutive identical call ends the run with loop_detected."""
    rate_limits: Mapping[str, int] = field(default_factory=dict)
    """Calls per minute per tool name; "*" applies to every tool without its own entry."""


def total_tokens(usage: Mapping[str, int]) -> int:
    return sum(int(v) for v in usage.values())


def budget_stop(limits: LoopLimits, *, rounds: int, usage: Mapping[str, int],
                cost: float | None, elapsed_s: float) -> StopReason | None:
    """The limit that forbids another model request, if any."""
    if rounds >= limits.max_rounds:
        return StopReason.MAX_ROUNDS
    if limits.max_tokens is not None and total_tokens(usage) >= limits.max_tokens:
        return StopReason.TOKEN_BUDGET
    if limits.max_cost_usd is not None and cost is not None and cost >= limits.max_cost_usd:
        return StopReason.COST_BUDGET
    if limits.max_seconds is not None and elapsed_s >= limits.max_seconds:
        return StopReason.TIME_BUDGET
    return None


def canonical_call(name: str, args: Any) -> str:
    """Tool name + arguments with sorted keys: equal for calls that mean the same."""
    try:
        text = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(args)
    return f"{name}\x00{text}"


class Repeat(enum.Enum):
    RUN = "run"
    BLOCK = "block"
    STOP = "stop"


class RepeatDetector:
    """Counts consecutive calls with the same canonical form, across rounds."""

    def __init__(self, limits: LoopLimits) -> None:
        self._limits = limits
        self._key: str | None = None
        self.count = 0
        self.first_call_id: str | None = None

    def observe(self, call: ToolCall) -> Repeat:
        key = canonical_call(str(call.name), call.input)
        if key == self._key:
            self.count += 1
        else:
            self._key, self.count, self.first_call_id = key, 1, call.call_id
        if self.count >= self._limits.repeat_stop:
            return Repeat.STOP
        if self.count >= self._limits.repeat_block:
            return Repeat.BLOCK
        return Repeat.RUN


def repeat_message(name: str, count: int, first_result: str, *, stopping: bool) -> str:
    quote = first_result[:300] + ("…" if len(first_result) > 300 else "")
    end = ("The run is being stopped because the same call keeps being repeated."
           if stopping else
           "Do not call it again with the same arguments: use that result, change the "
           "arguments, or finish.")
    return (f"This exact call to {name!r} was already made ({count - 1} times in a row) and was "
            f"not run again. Its first result began:\n{quote}\n{end}")


class RateLimiter:
    """Per-tool calls per minute, over a sliding 60 s window."""

    WINDOW_S = 60.0

    def __init__(self, limits: Mapping[str, int]) -> None:
        self._limits = dict(limits)
        self._calls: dict[str, deque[float]] = {}

    def limit_for(self, name: str) -> int | None:
        return self._limits.get(name, self._limits.get("*"))

    def check(self, name: str, now: float) -> float | None:
        """None when the call may run (and it is counted), else seconds until it may."""
        limit = self.limit_for(name)
        if limit is None:
            return None
        calls = self._calls.setdefault(name, deque())
        while calls and now - calls[0] >= self.WINDOW_S:
            calls.popleft()
        if len(calls) >= limit:
            return self.WINDOW_S - (now - calls[0])
        calls.append(now)
        return None


def rate_message(name: str, limit: int, wait_s: float) -> str:
    return (f"{name!r} is limited to {limit} calls per minute and that limit is reached; the "
            f"call was not run. Try again in {wait_s:.0f} s, or do something else meanwhile.")
