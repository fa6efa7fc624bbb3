"""The suite notices a broken harness, and every built-in task can fail.

Deliberately broken copies of Reins: each fault is injected at its seam in this process
(monkeypatch, test-only) and the named built-in tasks are run in this process too, through
the eval's own `run_task` and `run_exec` — `reins exec`'s entry function, the real fake
model server on loopback, the real anthropic client, real tools in the real sandbox — with
an executor that runs the pool's work inline, so the patched harness is the one that runs.
Every fault must fail the tasks named for it, by a check (not by a crash), and the same
tasks must pass on the unbroken harness (a control run), so the failure is the fault's.

Then every built-in task is run (scripted, as `reins eval --scripted` runs it) by a model
that breaks it: one that ends at once with an empty answer, and one that makes the
scripted calls but only echoes the prompt as its answer. Each must be scored as failed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

import pytest

from kernel.agent.limits import StopReason
from kernel.agent.run import Run
from kernel.cli.main import main as cli_main
from kernel.eval.runner import NULL_KEYRING, RunOptions, run_suite, run_task
from kernel.eval.scoring import TaskResult
from kernel.eval.task import ScriptedTurn, Task, discover
from kernel.policy.approvals import PolicyGate
from kernel.tools.dispatch import Dispatcher
from kernel.tools.externalize import OutputStore, Page
from kernel.tools.registry import RegisteredTool
from kernel.tools.spec import ToolCall, ToolResult

SCRIPTED = RunOptions(scripted=True, entry=cli_main)


class Inline(Executor):
    """A pool that runs each piece of work at once, in this thread (the worker's work:
    `run_exec`, whose harness the test has patched)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


Fault = Callable[[pytest.MonkeyPatch], None]


def blank_results(mp: pytest.MonkeyPatch) -> None:
    """Every successful tool result reaches the model as ""."""
    dispatch = Dispatcher.dispatch

    async def blanked(self: Dispatcher, call: ToolCall) -> ToolResult:
        result = await dispatch(self, call)
        return result if result.is_error else dataclasses.replace(result, content="")

    mp.setattr(Dispatcher, "dispatch", blanked)


def tools_not_run(mp: pytest.MonkeyPatch) -> None:
    """No tool runs; every call that passed validation and the gate "succeeds"."""

    async def pretend(self: Dispatcher, call: ToolCall, entry: RegisteredTool,
                      kwargs: dict[str, Any], started: float) -> ToolResult:
        return self._success(call, entry.spec, "Done.", started)

    mp.setattr(Dispatcher, "_execute", pretend)


def swap_results(mp: pytest.MonkeyPatch) -> None:
    """The results of one turn's calls go to the wrong calls (each gets the previous
    call's content)."""
    dispatch_many = Dispatcher.dispatch_many

    async def swapped(self: Dispatcher, calls: Sequence[ToolCall]) -> list[ToolResult]:
        results = await dispatch_many(self, calls)
        return [dataclasses.replace(r, content=results[i - 1].content)
                for i, r in enumerate(results)]

    mp.setattr(Dispatcher, "dispatch_many", swapped)


def pager_ignores_offset(mp: pytest.MonkeyPatch) -> None:
    """`read_tool_output` always reads from the start of the stored output."""
    read_page = OutputStore.read_page

    def first_page(self: OutputStore, call_id: str, offset: int, limit: int) -> Page:
        return read_page(self, call_id, 0, limit)

    mp.setattr(OutputStore, "read_page", first_page)


def skip_validation(mp: pytest.MonkeyPatch) -> None:
    """Arguments are never checked against the tool's schema."""
    mp.setattr(RegisteredTool, "is_valid", property(lambda self: lambda args: True))


def skip_approvals(mp: pytest.MonkeyPatch) -> None:
    """Every call the policy would ask about runs without asking."""

    async def allowed(self: PolicyGate, spec: Any, call: ToolCall, args: Any, decision: Any,
                      facts: Any) -> Any:
        return self._allowed(decision, facts, user_approved=True)

    mp.setattr(PolicyGate, "_ask", allowed)


def one_round(mp: pytest.MonkeyPatch) -> None:
    """The loop stops after its first round, as if the model had ended its turn."""
    round_ = Run._round

    async def only_one(self: Run) -> StopReason | None:
        stop = await round_(self)
        return StopReason.END_TURN if stop is None else stop

    mp.setattr(Run, "_round", only_one)


# each broken copy: the built-in tasks it must fail (every one of them), and what each
# task's failures must say (the check that noticed)
FAULTS: dict[str, tuple[Fault, tuple[str, ...], str]] = {
    "results blanked": (blank_results, ("lookup-read-file", "multi-summarize-to-file",
                                        "absorb-huge-output"), "the model was sent a result"),
    "tools not run": (tools_not_run, ("lookup-read-file", "multi-edit-config",
                                      "absorb-timeout"), "the model was sent a result"),
    "results swapped": (swap_results, ("multi-summarize-to-file",),
                        "with {'path': 'a.txt'} that lacks ['apples']"),
    "pager ignores the offset": (pager_ignores_offset, ("absorb-huge-output",),
                                 "read_tool_output that lacks"),
    "arguments not validated": (skip_validation, ("absorb-invalid-arguments",),
                                "no call ended with invalid_arguments"),
    "approvals skipped": (skip_approvals, ("absorb-denied-write", "absorb-unanswered-approval",
                                           "absorb-protected-write",
                                           "absorb-read-outside-workspace"),
                          "no call ended with approval_"),
    "loop stops after one round": (one_round, ("lookup-read-file", "multi-edit-config",
                                               "absorb-huge-output"),
                                   "never reached the model"),
}
NAMED = sorted({name for _, names, _ in FAULTS.values() for name in names})


@pytest.fixture(scope="module")
def builtin() -> dict[str, Task]:
    return {t.name: t for t in discover(None)}


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path
               ) -> Iterator[Callable[[Task], TaskResult]]:
    """Run one task here, as a pool worker would (its keyring kept out of the run)."""
    for key, value in NULL_KEYRING.items():
        monkeypatch.setenv(key, value)
    yield lambda task: run_task(task, SCRIPTED, Inline(), tmp_path)


def test_the_named_tasks_pass_on_the_unbroken_harness(
        builtin: dict[str, Task], in_process: Callable[[Task], TaskResult]) -> None:
    results = {name: in_process(builtin[name]) for name in NAMED}
    assert {n: r.failures for n, r in results.items() if not r.passed} == {}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_broken_harness_fails_the_tasks_that_exercise_it(
        fault: str, builtin: dict[str, Task], in_process: Callable[[Task], TaskResult],
        monkeypatch: pytest.MonkeyPatch) -> None:
    breaking, names, sign = FAULTS[fault]
    breaking(monkeypatch)
    results = {name: in_process(builtin[name]) for name in names}
    passed = [n for n, r in results.items() if r.passed]
    assert passed == [], f"{fault}: these tasks did not notice"
    crashed = {n: r.failures for n, r in results.items() if r.failure_cause == "harness_error"}
    assert crashed == {}, f"{fault}: a check should notice, not a crash"
    unsigned = {n: r.failures for n, r in results.items()
                if not any(sign in f for f in r.failures)}
    assert unsigned == {}, f"{fault}: no failure says {sign!r}"


def _wrong_answer(task: Task) -> Task:
    """The task's own calls, then an answer that only echoes its prompt."""
    turns = list(task.script)
    last = max(i for i, t in enumerate(turns) if t.error is None and not t.calls)
    turns[last] = ScriptedTurn(text=task.prompt)
    return dataclasses.replace(task, script=tuple(turns))


def _checks_answer(task: Task) -> bool:
    e = task.expect
    return bool(e.answer_contains or e.answer_words or e.answer_regex
                or e.answer_equals is not None)


@pytest.mark.slow  # (every built-in task, each against a broken harness)
def test_every_builtin_task_can_fail() -> None:
    """A model that ends at once with an empty answer fails every built-in task; one that
    makes the task's calls and then only echoes the prompt fails every task that checks
    the answer, and every task checks the answer, a file, or the results it was sent."""
    tasks = discover(None)
    idle = [dataclasses.replace(t, script=(ScriptedTurn(text=""),)) for t in tasks]
    echo = [_wrong_answer(t) for t in tasks if _checks_answer(t)]
    assert all(_checks_answer(t) or t.expect.files or t.expect.results for t in tasks)
    assert len(echo) >= 25
    results = run_suite([*idle, *echo], dataclasses.replace(SCRIPTED, jobs=2))
    assert len(results) == len(idle) + len(echo)
    passed = [(r.name, i < len(idle)) for i, r in enumerate(results) if r.passed]
    assert passed == [], "these tasks passed a model that broke them (name, idle?)"
    crashed = {r.name: r.failures for r in results if r.failure_cause == "harness_error"}
    assert crashed == {}
    echoed = {r.name: r.failures for r in results[len(idle):]}
    assert all(any("answer" in f for f in failures) for failures in echoed.values()), echoed
