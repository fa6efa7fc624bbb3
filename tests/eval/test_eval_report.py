"""What `reins eval` prints: the table, the comparison and the progress (pure text)."""

from __future__ import annotations

import pytest

from kernel.eval.report import (
    BAR_WIDTH,
    comparison_text,
    progress_bar,
    progress_line,
    results_text,
)
from kernel.eval.scoring import TaskResult, compare

OK = TaskResult("read-one", True, rounds=2, tokens=240, cost_usd=0.0012, seconds=0.5,
                selection_ok=True, args_ok=True, tool_calls=2, valid_calls=2)
BAD = TaskResult("pick-\x1b[31mtool", False, "wrong_tool", ("not called: read_file",),
                 rounds=3, tokens=360, selection_ok=False, args_ok=None)


def test_the_table_has_every_run_the_failures_and_the_metrics() -> None:
    text = results_text([OK, BAD])
    lines = text.splitlines()
    assert lines[0].split() == ["task", "result", "cause", "rounds", "tokens", "cost", "$",
                                "time", "s", "right", "tools", "valid", "args"]
    assert lines[2].split() == ["read-one", "passed", "2", "240", "0.0012", "0.50", "yes",
                                "2/2"]
    assert lines[3].split()[-2:] == ["no", "n/a"]
    assert "FAILED  wrong_tool" in text and "\x1b" not in text and "\\x1b" in text
    assert "failures:" in text and "not called: read_file" in text
    assert "tool-selection accuracy 50% · argument validity 100% · completion 50% (1/2)" in text
    assert "failure causes: wrong_tool 1" in text


# (results, what the metrics line says of argument validity)
VALIDITY_TABLE = [
    ([BAD], "argument validity n/a (no calls)"),
    ([TaskResult("x", True)], "argument validity n/a (no calls)"),
    ([OK, BAD], "argument validity 100%"),
    ([TaskResult("x", False, tool_calls=4, valid_calls=1)], "argument validity 25%"),
]


@pytest.mark.parametrize(("results", "said"), VALIDITY_TABLE)
def test_argument_validity_is_over_calls_and_na_without_one(results: list[TaskResult],
                                                             said: str) -> None:
    assert said in results_text(results)


def test_a_table_without_failures_says_none() -> None:
    text = results_text([OK])
    assert "failures:" not in text and "failure causes: none" in text
    assert "largest request" not in text
    with_bytes = results_text([TaskResult("x", True, request_bytes=1234)])
    assert "largest request 1234 B" in with_bytes


def test_the_comparison_text() -> None:
    after = TaskResult("pick-\x1b[31mtool", True, rounds=2)
    text = comparison_text(compare([OK, BAD], [OK, after]), "a.json", "b.json")
    assert text.startswith("before: a.json\nafter:  b.json\n")
    assert "1 of 2 tasks changed" in text and "\x1b" not in text
    row = next(line for line in text.splitlines() if line.startswith("completion_rate"))
    assert row.split() == ["completion_rate", "50%", "100%", "+50", "pts"]
    cost = next(line for line in text.splitlines() if line.startswith("avg_cost_usd"))
    assert cost.split()[1:3] == ["0.0006", "0.0006"]
    assert "failure causes: wrong_tool 1→0" in text


@pytest.mark.parametrize(("done", "total", "filled"), [
    (0, 10, 0), (1, 10, 3), (5, 10, 15), (10, 10, BAR_WIDTH), (1, 1, BAR_WIDTH),
    (3, 0, BAR_WIDTH), (7, 5, BAR_WIDTH),
])
def test_progress_bar(done: int, total: int, filled: int) -> None:
    bar = progress_bar(done, total, OK)
    assert bar.startswith("\r[") and bar.endswith("\x1b[K")
    inside = bar[2:bar.index("]")]
    assert inside.count("#") == filled and len(inside) == BAR_WIDTH
    assert f"{done}/{total} read-one ok" in bar


@pytest.mark.parametrize(("result", "line"), [
    (OK, "[1/2] read-one passed\n"),
    (BAD, "[2/2] pick-\\x1b[31mtool failed wrong_tool\n"),
])
def test_progress_line(result: TaskResult, line: str) -> None:
    done = 1 if result.passed else 2
    assert progress_line(done, 2, result) == line


def test_scripted_tokens_and_cost_are_shown_as_not_measured() -> None:
    fake = TaskResult("read-one", True, rounds=2, tokens=240, cost_usd=0.0012, seconds=0.5,
                      measured=False)
    text = results_text([fake])
    assert text.splitlines()[2].split()[:6] == ["read-one", "passed", "2", "—", "—", "0.50"]
    assert "tokens and cost not measured (scripted)" in text
    assert "240" not in text and "0.0012" not in text
    assert "240 tokens" in results_text([OK])
