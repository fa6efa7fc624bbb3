"""The `reins eval` options (standard library only: `reins --help` must not import the eval)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_eval_parser(sub: Any) -> None:
    ev = sub.add_parser("eval", help="run a suite of tasks through reins exec and score it")
    ev.add_argument("--tasks", metavar="DIR|GLOB", action="append",
                    help="a task folder, a folder of tasks, or a glob (default: built-in); "
                    "repeatable")
    ev.add_argument("--scripted", action="store_true",
                    help="play each task's scripted turns on the built-in fake model server "
                    "(no key, no network)")
    ev.add_argument("--model", help="the model of every run (default: settings)")
    ev.add_argument("--repeat", type=_positive, default=1, metavar="N",
                    help="run every task N times")
    ev.add_argument("--json", type=Path, metavar="OUT", help="save the results here")
    ev.add_argument("--compare", type=Path, nargs=2, metavar=("A.json", "B.json"),
                    help="show what changed from run A to run B (runs nothing)")
    ev.add_argument("--jobs", type=_positive, metavar="N",
                    help="runs at a time (default: 2 scripted, else 1)")
    ev.add_argument("--set", action="append", default=[], type=_setting, metavar="KEY=JSON",
                    dest="overrides", help="a setting for every task, e.g. "
                    "tool_search_threshold=1000; repeatable")
    ev.add_argument("--keep", type=Path, metavar="DIR",
                    help="keep every run's workspace and REINS_HOME under DIR")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _setting(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=JSON, got {text!r}")
    try:
        return key.strip(), json.loads(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{key}: {value!r} is not JSON") from None
