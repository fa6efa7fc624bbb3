"""Running tasks through `reins exec`: one fresh workspace copy and REINS_HOME per run.

Each run is `options.entry(["exec", "--json", ...])` — the very entry function of
`reins exec`, handed in by the command line — called in a worker process of a spawned pool
(a worker imports the kernel once and runs one task at a time, its environment set for that
task: REINS_HOME, and for `--scripted` the fake server's URL). Its stdout is the `--json`
event stream the outcome is read from. With `--scripted`, every run gets its own
`FakeAnthropicServer` (a real HTTP server in this process) playing the task's scripted
turns, and what it saw (the tools offered, the size of each request) goes into the outcome.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import json
import multiprocessing
import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel.eval.checks import judge
from kernel.eval.outcome import Outcome, Requests, outcome_from_lines, sent_results
from kernel.eval.scoring import TaskResult
from kernel.eval.task import ScriptedTurn, Task
from kernel.fakemodel import Failure, FakeAnthropicServer, Reply, Text, ToolUse

SCRIPTED_KEY = "reins-eval-scripted"
PR_SET_PDEATHSIG = 1
MAX_CHECKED_BYTES = 10 * 1024 * 1024
CONNECTION_KEYS = ("model", "base_url", "models")
"""The settings that say which model is reached and how (kernel.policy.settings)."""
NULL_KEYRING = {"PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"}


ExecEntry = Callable[[list[str]], int]
"""`reins ARGV` → its exit code (kernel.cli.main.main)."""


@dataclass(frozen=True)
class RunOptions:
    scripted: bool = False
    model: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    """Settings applied over every task's own (`reins eval --set KEY=JSON`)."""
    connection: Mapping[str, Any] = field(default_factory=dict)
    """The user's own model settings (`CONNECTION_KEYS`), under every task's: a real-model
    run reaches the model the user set up; empty for `--scripted`."""
    jobs: int = 1
    time_budget_s: float = 300.0
    """`reins exec --time-budget` of each run."""
    keep: Path | None = None
    """Keep each run's folder (workspace and REINS_HOME) under this folder."""
    entry: ExecEntry = field(kw_only=True)
    """The `reins` command line's entry function, called with `["exec", ...]` (a module-level
    function: the pool's workers receive it by name)."""


class ScriptPlayer:
    """The fake model of one scripted run: the task's turns in order, one per request; a
    turn with `unless_offered` is skipped when that tool is already on offer."""

    def __init__(self, turns: Sequence[ScriptedTurn]) -> None:
        self._turns = deque(turns)
        self._lock = threading.Lock()

    def __call__(self, body: Mapping[str, Any]) -> Reply | Failure:
        offered = offered_names(body)
        with self._lock:
            while self._turns and self._turns[0].unless_offered in offered:
                self._turns.popleft()
            if not self._turns:
                return Failure(400, "invalid_request_error",
                               "reins eval: the task's script has no more turns", None)
            turn = self._turns.popleft()
        if turn.error is not None:
            return Failure(turn.error, _error_type(turn.error), f"scripted HTTP {turn.error}")
        blocks: list[Text | ToolUse] = [Text(turn.text)] if turn.text else []
        blocks += [ToolUse(c.name, c.input, c.id) for c in turn.calls]
        return Reply(tuple(blocks))


def _error_type(status: int) -> str:
    return {429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error",
            400: "invalid_request_error"}.get(status, "api_error")


def offered_names(body: Mapping[str, Any]) -> frozenset[str]:
    tools = body.get("tools") or []
    return frozenset(str(t.get("name")) for t in tools if isinstance(t, Mapping))


def expand(value: Any, replacements: Mapping[str, str]) -> Any:
    """`{python}` and `{task}` in every string of a task's settings."""
    if isinstance(value, str):
        for key, text in replacements.items():
            value = value.replace("{" + key + "}", text)
        return value
    if isinstance(value, Mapping):
        return {k: expand(v, replacements) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v, replacements) for v in value]
    return value


def exec_argv(task: Task, workspace: Path, options: RunOptions) -> list[str]:
    argv = ["exec", "--json", "--workspace", str(workspace), "--mode", task.mode,
            "--max-rounds", str(task.max_rounds), "--time-budget", str(options.time_budget_s)]
    if task.approve:
        argv += ["--approve", task.approve]
    if options.model:
        argv += ["--model", options.model]
    return [*argv, "--", task.prompt]


# ---- the worker side ----------------------------------------------------------------------


_eval_pid: list[int] = []
"""In a worker: the eval that started it (a worker whose eval has ended ends too)."""


def _init_worker(base_env: Mapping[str, str], parent: int, entry: ExecEntry) -> None:
    """End with the eval (SIGTERM when it dies, so a stopped eval leaves no worker: the
    run in progress is cancelled as `reins exec` cancels on SIGTERM, then `run_exec`
    ends the worker), set the pool's environment and import the kernel once, before any
    run is timed."""
    _eval_pid[:] = [parent]
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(143)
    os.environ.update(base_env)
    del entry  # received to be imported here, once: it brings the kernel with it


def _ready() -> int:
    return os.getpid()


def run_exec(entry: ExecEntry, argv: Sequence[str], env: Mapping[str, str | None]
             ) -> tuple[int, str, str]:
    """`reins exec ARGV` through `entry` in this (worker) process with `env` applied (None:
    unset), its stdout and stderr captured; the environment is restored afterwards."""
    saved = dict(os.environ)
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = entry(list(argv))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
            except Exception as exc:  # the run's crash is its outcome, not the worker's
                err.write(f"reins exec crashed: {type(exc).__name__}: {exc}\n")
                code = 1
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if _eval_pid and os.getppid() != _eval_pid[0]:
            os._exit(143)  # the eval ended during the run: nobody waits for more work
    return code, out.getvalue(), err.getvalue()


# ---- the eval side ------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    workspace: Path
    home: Path


def prepare(task: Task, root: Path, options: RunOptions) -> Prepared:
    """A copy of the task's workspace fixture and a fresh REINS_HOME whose settings are the
    user's connection, then the task's, then the overrides."""
    workspace, home = root / "workspace", root / "home"
    if task.workspace.is_dir():
        shutil.copytree(task.workspace, workspace, symlinks=True)
    else:
        workspace.mkdir(parents=True)
    settings = {**options.connection,
                **expand(task.settings, {"python": sys.executable,
                                         "task": str(task.folder.resolve())}),
                **options.overrides}
    config = home / "config"
    config.mkdir(parents=True)
    if settings:
        (config / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    return Prepared(workspace.resolve(), home)


def read_checked_files(task: Task, workspace: Path) -> dict[str, str | None]:
    """The text of each checked file (its first MAX_CHECKED_BYTES); None when it is missing
    or not a regular file: a symlink is not followed, a FIFO or a device is never opened
    for reading (the run could have put anything there)."""
    files: dict[str, str | None] = {}
    for check in task.expect.files:
        path = workspace / check.path
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            files[check.path] = None
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                files[check.path] = None
                continue
            with os.fdopen(os.dup(fd), "rb") as file:
                files[check.path] = file.read(MAX_CHECKED_BYTES).decode("utf-8", "replace")
        finally:
            os.close(fd)
    return files


@contextlib.contextmanager
def _model_for(task: Task, options: RunOptions) -> Iterator[
        tuple[dict[str, str | None], FakeAnthropicServer | None]]:
    if not options.scripted:
        yield {}, None
        return
    with FakeAnthropicServer(responder=ScriptPlayer(task.script)) as server:
        env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("ANTHROPIC_")}
        env.update({"ANTHROPIC_API_KEY": SCRIPTED_KEY, "ANTHROPIC_BASE_URL": server.base_url})
        yield env, server


def run_task(task: Task, options: RunOptions, pool: Executor,
             run_root: Path) -> TaskResult:
    """One run of `task` in a fresh folder under `run_root`: exec it, judge the outcome."""
    root = Path(tempfile.mkdtemp(prefix=f"{task.name}-", dir=run_root))
    try:
        prepared = prepare(task, root, options)
        with _model_for(task, options) as (env, server):
            env["REINS_HOME"] = str(prepared.home)
            started = time.perf_counter()
            try:
                code, out, err = pool.submit(
                    run_exec, options.entry, exec_argv(task, prepared.workspace, options),
                    env).result()
            except BrokenProcessPool as exc:
                code, out, err = 1, "", f"the eval's worker process died: {exc}"
            seconds = time.perf_counter() - started
            requests = None
            if server is not None:
                requests = Requests(
                    offered=tuple(offered_names(r.body) for r in server.requests),
                    sizes=tuple(len(json.dumps(r.body)) for r in server.requests),
                    results=sent_results(r.body for r in server.requests))
        outcome = outcome_from_lines(out.splitlines(), exit_code=code, seconds=seconds,
                                     files=read_checked_files(task, prepared.workspace),
                                     requests=requests, stderr=err)
        return task_result(task, outcome)
    finally:
        if options.keep is None:
            shutil.rmtree(root, ignore_errors=True)


def task_result(task: Task, outcome: Outcome) -> TaskResult:
    verdict = judge(task.expect, outcome, task.prompt)
    requests = outcome.requests
    return TaskResult(
        name=task.name, category=task.category, passed=verdict.passed,
        failure_cause=verdict.cause, failures=tuple(f.message for f in verdict.failures),
        rounds=outcome.rounds, tokens=outcome.tokens, cost_usd=outcome.cost_usd,
        measured=not outcome.scripted,
        seconds=round(outcome.seconds, 3), tool_calls=len(outcome.calls),
        tools_called=outcome.tool_names, selection_ok=verdict.selection_ok,
        args_ok=verdict.args_ok,
        request_bytes=max(requests.sizes) if requests and requests.sizes else None,
        tools_offered=(max(len(o) for o in requests.offered)
                       if requests and requests.offered else None),
    )


def run_suite(tasks: Sequence[Task], options: RunOptions, *, repeat: int = 1,
              on_result: Callable[[int, int, TaskResult], None] | None = None
              ) -> list[TaskResult]:
    """Every task `repeat` times, `options.jobs` at a time; results in task order.
    `on_result(done, total, result)` is called as each run finishes."""
    runs = [t for t in tasks for _ in range(repeat)]
    base_env = NULL_KEYRING if options.scripted else {}
    results: list[TaskResult | None] = [None] * len(runs)
    done = 0
    lock = threading.Lock()
    keep = options.keep
    run_root = Path(tempfile.mkdtemp(prefix="reins-eval-")) if keep is None else keep
    run_root.mkdir(parents=True, exist_ok=True)
    context = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(options.jobs, mp_context=context, initializer=_init_worker,
                                 initargs=(base_env, os.getpid(), options.entry)) as pool, \
                ThreadPoolExecutor(options.jobs) as threads:
            # every worker started (and its kernel imported) from this thread, which lives
            # as long as the pool: the parent-death signal follows the thread that forked
            for ready in [pool.submit(_ready) for _ in range(options.jobs)]:
                ready.result()

            def one(index: int) -> None:
                nonlocal done
                result = run_task(runs[index], options, pool, run_root)
                with lock:
                    results[index] = result
                    done += 1
                    if on_result is not None:
                        on_result(done, len(runs), result)

            for future in [threads.submit(one, i) for i in range(len(runs))]:
                future.result()
    finally:
        if keep is None:
            shutil.rmtree(run_root, ignore_errors=True)
    return [r for r in results if r is not None]
