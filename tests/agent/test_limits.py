"""Pure decisions: budgets, repeated calls, rate limits, prices, context trimming."""

from __future__ import annotations

import pytest

from kernel.agent.context import pointer_text, trim_tool_results, with_cache_breakpoint
from kernel.agent.limits import (
    LoopLimits,
    RateLimiter,
    Repeat,
    RepeatDetector,
    StopReason,
    budget_stop,
    canonical_call,
)
from kernel.model.pricing import cost_usd, price_for
from kernel.tools.spec import ToolCall


def test_budget_stop_names_the_limit_that_was_hit():
    limits = LoopLimits(max_rounds=5, max_tokens=1000, max_cost_usd=1.0, max_seconds=60)
    fine = {"rounds": 4, "usage": {"input_tokens": 900}, "cost": 0.5, "elapsed_s": 59.0}
    assert budget_stop(limits, **fine) is None
    assert budget_stop(limits, **{**fine, "rounds": 5}) is StopReason.MAX_ROUNDS
    assert budget_stop(limits, **{**fine, "usage": {"input_tokens": 900,
                                                     "output_tokens": 100}}
                       ) is StopReason.TOKEN_BUDGET
    assert budget_stop(limits, **{**fine, "cost": 1.0}) is StopReason.COST_BUDGET
    assert budget_stop(limits, **{**fine, "elapsed_s": 60.0}) is StopReason.TIME_BUDGET
    assert budget_stop(LoopLimits(), rounds=49, usage={"input_tokens": 10**9}, cost=None,
                       elapsed_s=10**6) is None


def test_canonical_form_ignores_key_order():
    assert canonical_call("t", {"a": 1, "b": [1, 2]}) == canonical_call("t", {"b": [1, 2], "a": 1})
    assert canonical_call("t", {"a": 1}) != canonical_call("u", {"a": 1})
    assert canonical_call("t", {"a": 1}) != canonical_call("t", {"a": 2})


def test_repeat_detector_blocks_the_third_and_stops_at_the_fifth():
    detector = RepeatDetector(LoopLimits())
    same = [ToolCall(f"c{i}", "read_file", {"path": "x", "limit": 5}) for i in range(5)]
    assert [detector.observe(c) for c in same] == [
        Repeat.RUN, Repeat.RUN, Repeat.BLOCK, Repeat.BLOCK, Repeat.STOP]
    assert detector.first_call_id == "c0"
    detector = RepeatDetector(LoopLimits())
    calls = [ToolCall("a", "t", {"x": 1}), ToolCall("b", "t", {"x": 1}),
             ToolCall("c", "t", {"x": 2}), ToolCall("d", "t", {"x": 1}),
             ToolCall("e", "t", {"x": 1})]
    assert [detector.observe(c) for c in calls] == [Repeat.RUN] * 5


def test_rate_limiter_sliding_window():
    limiter = RateLimiter({"grep": 2, "*": 3})
    assert limiter.check("grep", 0.0) is None
    assert limiter.check("grep", 10.0) is None
    assert limiter.check("grep", 20.0) == pytest.approx(40.0)
    assert limiter.check("grep", 60.0) is None
    assert [limiter.check("other", t) for t in (0, 1, 2)] == [None, None, None]
    assert limiter.check("other", 3) == pytest.approx(57.0)
    assert RateLimiter({}).check("anything", 0.0) is None


def test_prices_by_longest_prefix_and_unknown_models_cost_nothing_known():
    sonnet = price_for("claude-sonnet-4-6")
    assert sonnet is not None and (sonnet.input, sonnet.output) == (3.0, 15.0)
    assert price_for("claude-opus-4-1-20250805").input == 15.0
    assert price_for("claude-opus-4-5").input == 5.0
    assert price_for("llama-3-local") is None
    usage = {"input_tokens": 1_000_000, "output_tokens": 100_000,
             "cache_creation_input_tokens": 1_000_000, "cache_read_input_tokens": 1_000_000}
    assert cost_usd(usage, sonnet) == pytest.approx(3.0 + 1.5 + 3.75 + 0.3)
    assert cost_usd(usage, None) is None


def _history(n: int, size: int) -> list[dict]:
    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    for i in range(n):
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{i}", "name": "read_file", "input": {}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": "y" * size}]})
    return messages


def test_trimming_replaces_oldest_results_with_pointers_and_keeps_pairs():
    stored: dict[str, str] = {}

    def store_full(call_id: str, text: str) -> str:
        stored[call_id] = text
        return f"/data/{call_id}.txt"

    history = _history(6, 4000)
    out, trimmed = trim_tool_results(history, budget_tokens=6000, fixed_tokens=500,
                                     store_full=store_full)
    assert trimmed and trimmed == [f"t{i}" for i in range(len(trimmed))]
    assert stored["t0"] == "y" * 4000
    assert out[2]["content"][0] == {"type": "tool_result", "tool_use_id": "t0",
                                    "content": pointer_text("t0", "/data/t0.txt", 4000)}
    assert out[-1] == history[-1]
    assert [m["role"] for m in out] == [m["role"] for m in history]
    assert history[2]["content"][0]["content"] == "y" * 4000
    untouched, none = trim_tool_results(history, budget_tokens=10**6, fixed_tokens=0,
                                        store_full=store_full)
    assert none == [] and untouched == history


def test_cache_breakpoint_on_the_newest_user_turn_only_in_the_request():
    history = [{"role": "user", "content": "hello"}]
    marked = with_cache_breakpoint(history)
    assert marked[-1]["content"] == [{"type": "text", "text": "hello",
                                      "cache_control": {"type": "ephemeral"}}]
    assert history == [{"role": "user", "content": "hello"}]
    assistant_last = [*history, {"role": "assistant", "content": [{"type": "text",
                                                                    "text": "x"}]}]
    assert with_cache_breakpoint(assistant_last) == assistant_last
