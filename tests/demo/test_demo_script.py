"""The demo model's script, as a table: what it answers to what is typed, and how the tour
goes on from each tool's result (read from the request alone)."""

from __future__ import annotations

from typing import Any

import pytest

from kernel.demo.script import NOTES_FILE, demo_turn, latest_prompt, notes, topic
from kernel.fakemodel.script import Reply, Text, ToolUse
from kernel.shared.demo import DEMO_LABEL, DEMO_MODEL, is_demo
from kernel.shared.model_names import friendly_name


@pytest.mark.parametrize(("prompt", "expected"), [
    ("How do I add my API key?", "key"),
    ("can I use claude for real", "key"),
    ("where do keys go", "key"),
    ("Thanks!", "bye"),
    ("ok", "bye"),
    ("bye now", "bye"),
    ("hello", "tour"),
    ("What can you do?", "tour"),
    ("Please tidy up my project folder", "tour"),
    ("okra recipes", "tour"),
    ("thanks, but now please write a long report about my whole project folder", "tour"),
    ("", "tour"),
])
def test_what_a_prompt_asks_the_demo_for(prompt: str, expected: str) -> None:
    assert topic(prompt) == expected


def _text(turn: Reply) -> str:
    return "".join(b.text for b in turn.content if isinstance(b, Text))


def _calls(turn: Reply) -> list[ToolUse]:
    return [b for b in turn.content if isinstance(b, ToolUse)]


def _answered(history: list[dict[str, Any]], turn: Reply, *, failed: bool
              ) -> list[dict[str, Any]]:
    """The history after `turn` and the results of its calls."""
    uses = [{"type": "tool_use", "id": f"t{len(history)}_{i}", "name": c.name, "input": c.input}
            for i, c in enumerate(_calls(turn))]
    results = [{"type": "tool_result", "tool_use_id": u["id"], "content": "done",
                "is_error": failed} for u in uses]
    return [*history, {"role": "assistant", "content": [{"type": "text", "text": _text(turn)},
                                                         *uses]},
            {"role": "user", "content": results}]


@pytest.mark.parametrize("allowed", [True, False])
def test_the_tour_lists_then_asks_to_write_then_explains(allowed: bool) -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "Sort my holiday photos"}]
    first = demo_turn({"messages": history})
    assert "demo model" in _text(first) and "not an AI" in _text(first)
    assert "Sort my holiday photos" in _text(first)
    assert [(c.name, c.input) for c in _calls(first)] == [("list_directory", {"path": "."})]
    history = _answered(history, first, failed=False)
    second = demo_turn({"messages": history})
    [write] = _calls(second)
    assert write.name == "write_file" and write.input["path"] == NOTES_FILE
    assert "Sort my holiday photos" in write.input["content"]
    assert "Allow" in _text(second) and "Deny" in _text(second)
    history = _answered(history, second, failed=not allowed)
    last = demo_turn({"messages": history})
    assert _calls(last) == [] and last.final_stop_reason == "end_turn"
    assert ("written only because you allowed" in _text(last)) is allowed
    assert ("Nothing was written" in _text(last)) is not allowed
    assert "Settings" in _text(last) and "API key" in _text(last)


def test_a_question_about_keys_is_answered_without_tools() -> None:
    turn = demo_turn({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "How do I use my Anthropic key?"}]}]})
    assert _calls(turn) == [] and "Settings" in _text(turn) and "Test connection" in _text(turn)


def test_a_later_prompt_starts_the_tour_again_with_its_own_words() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "first"}]
    history = _answered(history, demo_turn({"messages": history}), failed=False)
    history = _answered(history, demo_turn({"messages": history}), failed=False)
    history.append({"role": "assistant", "content": "That's the tour."})
    history.append({"role": "user", "content": "second go"})
    assert latest_prompt(history) == "second go"
    turn = demo_turn({"messages": history})
    assert "second go" in _text(turn) and _calls(turn)[0].name == "list_directory"
    assert "demo model" in _text(turn) and "short script" not in _text(turn), "introduced once"


def test_the_notes_quote_the_prompt_on_one_line_and_cut_a_long_one() -> None:
    assert "You wrote: “a b”" in notes("a\n\n  b")
    long = notes("x" * 500)
    assert "x" * 199 + "…" in long and "x" * 200 not in long


def test_the_demo_is_named_as_a_demo() -> None:
    assert is_demo(DEMO_MODEL) and not is_demo("claude-sonnet-4-6")
    assert "Demo" in DEMO_LABEL and "scripted" in friendly_name(DEMO_MODEL)
    assert friendly_name("claude-sonnet-4-6") == "Claude Sonnet 4.6"
