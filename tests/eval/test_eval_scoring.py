"""Metrics, the results file and the comparison, over hand-made results."""

from __future__ import annotations

import json

import pytest

from kernel.eval.scoring import (
    ResultsError,
    TaskResult,
    compare,
    metrics,
    results_dict,
    results_from_dict,
)


def r(name: str, passed: bool = True, cause: str | None = None, *, rounds: int = 2,
      tokens: int = 100, selection: bool | None = True, calls: tuple[int, int] = (1, 1),
      request_bytes: int | None = None, cost: float = 0.0, seconds: float = 1.0) -> TaskResult:
    """`calls`: (calls with valid arguments, calls made)."""
    valid, made = calls
    return TaskResult(name, passed, cause, rounds=rounds, tokens=tokens, selection_ok=selection,
                      args_ok=(valid == made) if made else None, tool_calls=made,
                      valid_calls=valid, request_bytes=request_bytes, cost_usd=cost,
                      seconds=seconds)


SUITE = [
    r("a", calls=(2, 2)),
    r("b", False, "wrong_tool", rounds=4, tokens=300, selection=False),
    r("c", False, "bad_arguments", rounds=3, tokens=200, calls=(1, 3)),
    r("d", selection=None, calls=(0, 0), rounds=1, tokens=50),
    r("e", False, "wrong_tool", rounds=6, tokens=350, selection=False, calls=(0, 0)),
]

# (results, field, expected)
METRIC_TABLE = [
    (SUITE, "tasks", 5),
    (SUITE, "passed", 2),
    (SUITE, "completion_rate", 2 / 5),
    (SUITE, "tool_selection_accuracy", 2 / 4),
    # over the calls made (4 of 6), not the runs: a run without a call is not valid
    (SUITE, "argument_validity", 4 / 6),
    (SUITE, "avg_rounds", 16 / 5),
    (SUITE, "avg_tokens", 1000 / 5),
    (SUITE, "avg_request_bytes", None),
    (SUITE, "failure_causes", {"wrong_tool": 2, "bad_arguments": 1}),
    ([], "tasks", 0),
    ([], "completion_rate", None),
    ([], "avg_rounds", None),
    ([], "failure_causes", {}),
    ([r("x", selection=None, calls=(0, 0))], "tool_selection_accuracy", None),
    # no call at all: n/a, never 100%
    ([r("x", calls=(0, 0)), r("y", calls=(0, 0))], "argument_validity", None),
    ([r("x", calls=(0, 0)), r("y", calls=(0, 1))], "argument_validity", 0.0),
    # an older results file (valid calls not recorded) says nothing about arguments
    ([TaskResult("x", True, tool_calls=3)], "argument_validity", None),
    ([r("x", request_bytes=1000), r("y", request_bytes=3000), r("z")], "avg_request_bytes",
     2000.0),
    ([r("x", cost=0.5), r("y", cost=1.5)], "avg_cost_usd", 1.0),
    ([r("x", seconds=2.0), r("y", seconds=4.0)], "avg_seconds", 3.0),
    # a failure without a cause is not counted under any cause
    ([r("x", False, None)], "failure_causes", {}),
    # causes are listed in their order of precedence, whatever the order of the results
    ([r("x", False, "wrong_result"), r("y", False, "api_error"), r("z", False, "loop")],
     "failure_causes", {"api_error": 1, "loop": 1, "wrong_result": 1}),
]


@pytest.mark.parametrize(("results", "field", "expected"), METRIC_TABLE)
def test_metrics(results: list[TaskResult], field: str, expected: object) -> None:
    value = getattr(metrics(results), field)
    if isinstance(expected, float):
        assert value == pytest.approx(expected)
    else:
        assert value == expected
    if field == "failure_causes":
        assert list(value) == list(expected)  # type: ignore[call-overload]


def test_results_file_round_trips_and_has_the_documented_keys() -> None:
    data = json.loads(json.dumps(results_dict(SUITE, {"model": "m", "scripted": True})))
    assert {"tool_selection_accuracy", "argument_validity", "completion_rate", "avg_rounds",
            "avg_tokens", "failure_causes"} <= set(data["metrics"])
    assert data["metrics"]["failure_causes"] == {"wrong_tool": 2, "bad_arguments": 1}
    assert data["model"] == "m" and data["version"] == 1
    assert {"name", "passed", "rounds", "failure_cause"} <= set(data["tasks"][0])
    assert results_from_dict(data) == SUITE


@pytest.mark.parametrize("bad", [
    None, [], {}, {"tasks": {}}, {"tasks": [1]}, {"tasks": [{"name": "a"}]},
    {"tasks": [{"passed": True}]}, {"tasks": [{"name": 1, "passed": True}]},
    {"tasks": [{"name": "a", "passed": "yes"}]},
])
def test_bad_results_files_are_refused(bad: object) -> None:
    with pytest.raises(ResultsError):
        results_from_dict(bad)


def test_unknown_fields_of_a_newer_file_are_ignored() -> None:
    (only,) = results_from_dict({"tasks": [{"name": "a", "passed": True, "new_field": 1}]})
    assert only == TaskResult("a", True)


def test_compare_task_by_task_and_metric_by_metric() -> None:
    before = [r("a"), r("b", False, "wrong_tool", rounds=4), r("c"), r("gone")]
    after = [r("a"), r("b", rounds=2), r("c", False, "loop", rounds=9), r("new")]
    diff = compare(before, after)
    rows = {t.name: t for t in diff.tasks}
    assert [t.name for t in diff.tasks] == ["a", "b", "c", "gone", "new"]
    assert (rows["a"].before, rows["a"].after, rows["a"].changed) == ("passed", "passed", False)
    assert (rows["b"].before, rows["b"].after, rows["b"].changed) == (
        "failed (wrong_tool)", "passed", True)
    assert rows["b"].rounds_delta == -2
    assert rows["c"].after == "failed (loop)" and rows["c"].rounds_delta == 7
    assert (rows["gone"].after, rows["gone"].rounds_delta) == ("—", None)
    assert rows["new"].before == "—" and rows["new"].changed
    by_name = {m.name: m for m in diff.metrics}
    assert by_name["completion_rate"].before == pytest.approx(0.75)
    assert by_name["completion_rate"].delta == pytest.approx(0.0)
    assert by_name["avg_rounds"].delta == pytest.approx((2 + 2 + 9 + 2) / 4 - (2 + 4 + 2 + 2) / 4)
    assert by_name["avg_request_bytes"].delta is None
    assert diff.causes == (("loop", 0, 1), ("wrong_tool", 1, 0))


def test_compare_with_repeats_counts_each_task_s_runs() -> None:
    before = [r("a"), r("a", False, "api_error"), r("a")]
    after = [r("a"), r("a"), r("a")]
    (row,) = compare(before, after).tasks
    assert (row.before, row.after) == ("failed 1/3 (api_error)", "passed 3/3")


def test_tokens_and_cost_of_scripted_runs_are_not_averaged_as_if_measured() -> None:
    fake = [TaskResult("s", True, tokens=999, cost_usd=9.0, measured=False)]
    both = metrics([*fake, r("m", tokens=100, cost=0.5)])
    assert (both.avg_tokens, both.avg_cost_usd) == (100.0, 0.5)
    only_fake = metrics(fake)
    assert (only_fake.avg_tokens, only_fake.avg_cost_usd) == (None, None)
    assert only_fake.avg_rounds == 0.0
    data = json.loads(json.dumps(results_dict(fake, {"scripted": True})))
    assert data["metrics"]["avg_tokens"] is None and data["tasks"][0]["measured"] is False
    assert results_from_dict(data) == fake


def test_an_older_scripted_file_s_tokens_count_as_not_measured() -> None:
    older = {"scripted": True, "tasks": [{"name": "a", "passed": True, "tokens": 240}]}
    (only,) = results_from_dict(older)
    assert only.measured is False and metrics([only]).avg_tokens is None
    (real,) = results_from_dict({**older, "scripted": False})
    assert real.measured is True and metrics([real]).avg_tokens == 240.0
