"""`reins eval`: run a suite of tasks through `reins exec` and score it (docs/EVAL.md).

    reins eval [--tasks DIR|GLOB ...] [--scripted] [--model M] [--repeat N] [--json OUT]
               [--jobs N] [--set KEY=JSON ...] [--keep DIR]
    reins eval --compare A.json B.json

Prints the table (per task and overall) and the failure causes on stdout, the progress on
stderr (a bar on a terminal, one `[done/total] task result` line each otherwise). Exit
codes: 0 every run passed (or a comparison was printed), 1 some run failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from kernel.eval.report import comparison_text, progress_bar, progress_line, results_text
from kernel.eval.runner import CONNECTION_KEYS, ExecEntry, RunOptions, run_suite
from kernel.eval.scoring import TaskResult, compare, results_dict, results_from_dict
from kernel.eval.task import TaskError, discover
from kernel.events import json_text
from kernel.paths import AppPaths
from kernel.policy.settings import SettingsError, load_settings


class EvalUsage(Exception):
    """Bad usage of `reins eval`: exit code 2 with this message."""


def eval_command(args: argparse.Namespace, entry: ExecEntry, out: TextIO, err: TextIO) -> int:
    if args.compare:
        return _compare(args.compare, out)
    try:
        tasks = discover(args.tasks)
    except TaskError as exc:
        raise EvalUsage(str(exc)) from None
    if args.scripted and (missing := [t.name for t in tasks if not t.script]):
        raise EvalUsage(f"--scripted: these tasks have no scripted turns: {', '.join(missing)}")
    options = RunOptions(scripted=args.scripted, model=args.model,
                         overrides=dict(args.overrides),
                         connection={} if args.scripted else _connection(),
                         jobs=args.jobs or (min(2, os.cpu_count() or 1) if args.scripted else 1),
                         keep=args.keep, entry=entry)
    tty = err.isatty()

    def progress(done: int, total: int, result: TaskResult) -> None:
        err.write((progress_bar if tty else progress_line)(done, total, result))
        err.flush()

    started = time.time()
    results = run_suite(tasks, options, repeat=args.repeat, on_result=progress)
    if tty:
        err.write("\n")
    out.write(results_text(results))
    if args.json is not None:
        info = {"suite": ", ".join(args.tasks or ["built-in"]), "scripted": args.scripted,
                "model": args.model or ("scripted" if args.scripted else "default"),
                "repeat": args.repeat, "settings": dict(args.overrides), "started": started,
                "seconds": round(time.time() - started, 2)}
        args.json.write_text(json_text(results_dict(results, info)) + "\n", encoding="utf-8")
    return 0 if all(r.passed for r in results) else 1


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
