"""`reins eval`: run a suite of tasks through `reins exec` and score it (docs/EVAL.md).

    reins eval [--tasks DIR|GLOB ...] [--scripted] [--model M] [--repeat N] [--json OUT]
               [--jobs N] [--set KEY=JSON ...] [--keep DIR]
    reins eval --compare A.json B.json
    reins eval --local [--all] [--tasks ...] [--json OUT]    (a real small model, served here)

Prints the table (per task and overall) and the failure causes on stdout, the progress on
stderr (a bar on a terminal, one `[done/total] task result` line each otherwise). Exit
codes: 0 every run passed (or a comparison was printed), 1 some run failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from kernel.eval.report import comparison_text, progress_bar, progress_line, results_text
from kernel.eval.runner import CONNECTION_KEYS, ExecEntry, RunOptions, run_suite
from kernel.eval.scoring import TaskResult, compare, results_dict, results_from_dict
from kernel.eval.task import Task, TaskError, builtin_tasks_dir, discover
from kernel.events import json_text
from kernel.paths import AppPaths
from kernel.policy.settings import SettingsError, load_settings


class EvalUsage(Exception):
    """Bad usage of `reins eval`: exit code 2 with this message."""


def eval_command(args: argparse.Namespace, entry: ExecEntry, out: TextIO, err: TextIO) -> int:
    if args.compare:
        return _compare(args.compare, out)
    if args.local:
        return _local(args, entry, out, err)
    if args.all:
        raise EvalUsage("--all goes with --local (the whole suite instead of its subset)")
    return _run(args, entry, _tasks(args.tasks, args.scripted),
                {} if args.scripted else _connection(), {}, out, err)


def _tasks(specs: list[str] | None, scripted: bool) -> list[Task]:
    try:
        tasks = discover(specs)
    except TaskError as exc:
        raise EvalUsage(str(exc)) from None
    if scripted and (missing := [t.name for t in tasks if not t.script]):
        raise EvalUsage(f"--scripted: these tasks have no scripted turns: {', '.join(missing)}")
    return tasks


def _run(args: argparse.Namespace, entry: ExecEntry, tasks: list[Task],
         connection: dict[str, Any],
         extra: dict[str, Any], out: TextIO, err: TextIO) -> int:
    options = RunOptions(scripted=args.scripted, model=args.model,
                         overrides=dict(args.overrides), connection=connection,
                         jobs=args.jobs or (min(2, os.cpu_count() or 1) if args.scripted else 1),
                         keep=args.keep, entry=entry)
    tty = err.isatty()
    started = time.time()
    finished: list[TaskResult] = []

    def save(results: list[TaskResult], complete: bool) -> None:
        """The results file; until the last run ends, `OUT.partial` beside it (a stopped
        eval keeps what it measured there, and OUT is only ever a whole run)."""
        if args.json is None:
            return
        info = {"suite": ", ".join(args.tasks or ["built-in"]), "scripted": args.scripted,
                "model": args.model or ("scripted" if args.scripted else "default"),
                "repeat": args.repeat, "settings": dict(args.overrides), "started": started,
                "seconds": round(time.time() - started, 2), "complete": complete, **extra}
        partial = args.json.with_name(args.json.name + ".partial")
        (args.json if complete else partial).write_text(
            json_text(results_dict(results, info)) + "\n", encoding="utf-8")
        if complete:
            partial.unlink(missing_ok=True)

    def progress(done: int, total: int, result: TaskResult) -> None:
        err.write((progress_bar if tty else progress_line)(done, total, result))
        err.flush()
        finished.append(result)
        save(finished, False)  # an eval stopped half-way keeps what it measured

    results = run_suite(tasks, options, repeat=args.repeat, on_result=progress)
    if tty:
        err.write("\n")
    out.write(results_text(results))
    save(results, True)
    return 0 if all(r.passed for r in results) else 1


def _local(args: argparse.Namespace, entry: ExecEntry, out: TextIO, err: TextIO) -> int:
    """`reins eval --local`: find or build llama-server, find or fetch the small model,
    serve it on loopback, run the subset (or `--all`, or `--tasks`), stop the server."""
    from kernel.eval.local.binary import BinaryError
    from kernel.eval.local.model import ModelError
    from kernel.eval.local.serve import ServerError, serving
    from kernel.eval.local.setup import prepare_local, smoke_specs

    if args.scripted or args.model:
        raise EvalUsage("--local serves its own model: leave out --scripted and --model")
    specs = args.tasks or (None if args.all else smoke_specs(builtin_tasks_dir()))
    tasks = _tasks(specs, False)
    cache = AppPaths.from_env().cache

    def say(text: str) -> None:
        err.write(f"reins eval --local: {text}\n")
        err.flush()

    try:
        local = prepare_local(cache, say=say)
        say(f"llama-server {local.binary.path} ({local.binary.source}, {local.binary.version})")
        say(f"model {local.model.path} ({local.model.source})")
        with serving(binary=local.binary.path, model=local.model.path,
                     alias=local.model.name,
                     template=cache / "llama-server" / "tools-template.jinja",
                     context=local.context, log=cache / "llama-server" / "server.log"
                     ) as served, _sigterm_interrupts(served.pid):
            say(f"serving {served.model} at {served.base_url} (pid {served.pid})")
            args.model = served.model
            extra = {"server": local.binary.version, "model_file": str(local.model.path),
                     "model_source": local.model.source, "local": True}
            code = _run(args, entry, tasks,
                        {"base_url": served.base_url, "model": served.model}, extra, out, err)
        say("server stopped")
        return code
    except (BinaryError, ModelError, ServerError) as exc:
        raise EvalUsage(str(exc)) from None


@contextlib.contextmanager
def _sigterm_interrupts(server: int) -> Iterator[None]:
    """SIGTERM (or SIGINT) ends the block as Ctrl+C does, the server's process group ended
    at once: the run in progress fails fast instead of finishing its answer first."""
    def interrupt(_sig: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server, signal.SIGTERM)
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _connection() -> dict[str, Any]:
    """The user's model settings (settings.json of their REINS_HOME or config folder)."""
    try:
        raw = load_settings(AppPaths.from_env()).raw
    except SettingsError as exc:
        raise EvalUsage(f"your settings cannot be loaded: {exc}") from None
    return {k: raw[k] for k in CONNECTION_KEYS if k in raw}


def _compare(files: list[Path], out: TextIO) -> int:
    loaded = []
    for file in files:
        try:
            loaded.append(results_from_dict(json.loads(file.read_text(encoding="utf-8"))))
        except (OSError, ValueError) as exc:  # ResultsError is a ValueError
            raise EvalUsage(f"{file}: {exc}") from None
    out.write(comparison_text(compare(loaded[0], loaded[1]), str(files[0]), str(files[1])))
    return 0


def main_eval(args: argparse.Namespace, entry: ExecEntry) -> int:
    """`reins eval` from kernel.cli.main, each run through `entry` (its own `main`): usage
    errors exit 2 with the message on stderr."""
    try:
        return eval_command(args, entry, sys.stdout, sys.stderr)
    except EvalUsage as exc:
        sys.stderr.write(f"reins eval: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("reins eval: stopped (what finished is in OUT.partial, with --json "
                         "OUT)\n")
        return 130
