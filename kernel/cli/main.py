"""The `reins` command line: `exec`, `export`, `undo`, `doctor`, `eval` (kernel.cli.cmd_eval);
plain `reins` (desktop.entry) opens the app, and `reins --help` says so.

    reins exec [--workspace DIR] [--mode ask|auto-edit|auto|read-only] [--approve deny|allow]
               [--max-rounds N] [--model M] [--session ID] [--json] [PROMPT]
               [--max-tokens-budget N] [--cost-budget USD] [--time-budget S|none]
               [--rate-limit TOOL=N ...] [--tool-choice auto|any|none|TOOL]
               [--thinking-budget TOKENS] [--max-tokens N] [--allow-broad-workspace]
               [--attach PATH ...]
    reins export SESSION
    reins undo [--session ID] [--json] [CALL]
    reins doctor

`exec` runs one prompt to its end (or, with `--session ID` and no prompt, resumes that
session's interrupted run). With `--session`, the session's stored events are printed
first, so a resumed run shows everything that was shown before. With `--json`, stdout
carries only events, one `event.to_dict()` per line; streamed text deltas are not printed
(the finished text block is). Exit codes: 0 the run ended with end_turn (or there was
nothing to resume), 1 an error, 2 bad usage, 3 a limit stopped it (max_rounds, budgets,
loop_detected, max_tokens, cancel).

`undo` puts back what an applied call changed (kernel.cli.cmd_undo): without CALL the latest
step not undone yet; exit code 1 when a path changed since blocks it.

`export SESSION` writes the session's trace as JSON lines: a `session` line, then one
`round` line per model round (request id, round index, the model's raw tool calls, each
tool's name, arguments, result summary, duration and error code, the answer text).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeGuard

from kernel.cli.errors import EXIT_USAGE, UsageError
from kernel.modes import MODES
from kernel.runtime.ahead import Ahead, in_child
from kernel.shared.keys import picks_as_a_new_process

DESCRIPTION = ("Reins: an AI assistant that acts on your computer while you keep hold of "
               "the reins.\n\nPlain `reins`, with no command, opens the desktop app.")
EPILOG = ("`reins --self-test` checks the installed app against a built-in loopback model.\n"
          "`reins COMMAND --help` explains one command.")
READS_THE_KEY = ("exec", "doctor")
KEYRING_READ = "kernel.model.provider_config:keyring_key"
"""The function that reads the key stored in the keyring, as kernel.runtime.ahead.in_child names
it."""


class _ArgumentParser(argparse.ArgumentParser):
    """No prefix matching, for the parser and every subcommand's (its parser class): an
    option that is not spelled out is an error, never taken for a longer one
    (`--max-tokens` for `--max-tokens-budget`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    from kernel.cli.eval_args import add_eval_parser
    from kernel.model.catalog import DEFAULT_MODEL

    parser = _ArgumentParser(
        prog="reins", usage="reins [COMMAND ...]", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, title="commands",
                                metavar="COMMAND")
    ex = sub.add_parser("exec", help="run one prompt headless and print its events")
    ex.add_argument("prompt", nargs="?", help="the prompt (optional with --session: resume)")
    ex.add_argument("--workspace", type=Path, help="the folder the tools work in (default: .)")
    ex.add_argument("--allow-broad-workspace", action="store_true",
                    help="confirm a workspace that exposes far more than a project (the home "
                    "folder, /, a system folder)")
    ex.add_argument("--mode", choices=MODES, help="permission mode (default: settings, ask)")
    ex.add_argument("--approve", choices=["deny", "allow"],
                    help="answer every approval request this way (allow: once per call)")
    ex.add_argument("--max-rounds", type=_positive_int, default=50, metavar="N")
    ex.add_argument("--max-tokens-budget", type=_positive_int, metavar="N",
                    help="stop when the run has used this many tokens")
    ex.add_argument("--cost-budget", type=float, metavar="USD",
                    help="stop when the run has cost this much (needs a priced model)")
    ex.add_argument("--time-budget", type=_time_budget, default=DEFAULT_TIME_BUDGET_S,
                    metavar="SECONDS", help="stop when the run has taken this long (default "
                    f"{DEFAULT_TIME_BUDGET_S:g}; 0 or none: no limit)")
    ex.add_argument("--model", help=f"model (default: settings, else {DEFAULT_MODEL})")
    ex.add_argument("--tool-choice", default="auto", help="auto, any, none, or a tool name")
    ex.add_argument("--rate-limit", action="append", type=_rate_limit, default=[],
                    metavar="TOOL=N", help="at most N calls per minute of TOOL ('*': any tool);"
                    " repeatable")
    ex.add_argument("--thinking-budget", type=_positive_int, metavar="TOKENS",
                    help="enable extended thinking with this budget (below max_tokens)")
    ex.add_argument("--max-tokens", type=_positive_int, metavar="N",
                    help="output tokens per model answer (default: the model's, from "
                    "settings' \"models\" or built in)")
    ex.add_argument("--session", metavar="ID", help="continue this session")
    ex.add_argument("--compact", action="store_true",
                    help="with --session: summarize its oldest turns for the next requests "
                    "first (the stored history keeps them)")
    ex.add_argument("--attach", action="append", type=Path, default=[], metavar="PATH",
                    help="attach a file or image to the prompt (text, PNG, JPEG, GIF, WebP, "
                    "PDF); repeatable")
    ex.add_argument("--json", action="store_true", help="print events as JSON lines")
    ex.add_argument("--mcp-prompt", metavar="SERVER/NAME",
                    help="use this prompt of a configured MCP server (PROMPT, if given, "
                    "follows it)")
    ex.add_argument("--mcp-prompt-arg", action="append", default=[], metavar="NAME=VALUE",
                    help="an argument of the --mcp-prompt; repeatable")
    exp = sub.add_parser("export", help="write a session's trace as JSON lines")
    exp.add_argument("session", metavar="SESSION")
    un = sub.add_parser("undo", help="undo what a call changed (default: the latest one)")
    un.add_argument("call", nargs="?", metavar="CALL", help="the call's id")
    un.add_argument("--session", metavar="ID",
                    help="the session (default: the one that applied a change last)")
    un.add_argument("--json", action="store_true", help="print the result as JSON")
    sub.add_parser("doctor", help="check the sandbox, the API key and the data folder")
    add_eval_parser(sub)
    return parser


def _rate_limit(text: str) -> tuple[str, int]:
    name, sep, count = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected TOOL=N, got {text!r}")
    return name.strip(), _positive_int(count)


DEFAULT_TIME_BUDGET_S = 1800.0
"""`reins exec`'s wall-clock limit unless told: a headless run nobody watches (a model that
writes on and on, a server that stalls between rounds) ends by itself."""


def _time_budget(text: str) -> float | None:
    """Seconds (`--time-budget`): a positive number, or 0 / `none` for no limit."""
    if text.strip().lower() in ("0", "none"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds or none, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds (0 or none: no limit), "
                                         f"got {text!r}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, then import only what the command needs (`reins --help` imports no SDK).
    `exec` and `doctor` first start the work that waits (kernel.runtime.ahead): the keyring read,
    even before the parser is built (the first word is the command: the options of `reins`
    itself are only -h and --help), then the sandbox probe; they go on while the rest loads."""
    words = list(sys.argv[1:] if argv is None else argv)
    keyring = _keyring_lookup() if words[:1] and words[0] in READS_THE_KEY else _read_keyring
    args = build_parser().parse_args(words)
    if args.command == "doctor":
        return _doctor(keyring)  # a settings file that cannot be loaded is in its report
    from kernel.policy.settings import SettingsError

    try:
        if args.command == "exec":
            return _exec(args, keyring)
        if args.command == "eval":
            from kernel.cli.cmd_eval import main_eval

            return main_eval(args, main)
        if args.command == "undo":
            from kernel.cli.cmd_undo import undo_command

            return undo_command(args.session, args.call, args.json, sys.stdout)
        from kernel.cli.cmd_export import export_command

        return export_command(args.session, sys.stdout)
    except UsageError as exc:
        sys.stderr.write(f"reins {args.command}: {exc}\n")
        return EXIT_USAGE
    except SettingsError as exc:
        sys.stderr.write(f"reins {args.command}: the settings cannot be loaded: {exc}\n")
        return EXIT_USAGE


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The garbage collector paused while a command starts: loading the SDK and the kernel
    makes tens of thousands of objects that live as long as the process, and each
    collection while they are made walks them all again. exec_command starts it again
    (with what start-up made frozen) before the run."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _exec(args: argparse.Namespace, keyring: Callable[[], str | None]) -> int:
    with _collector_paused():
        from kernel.paths import AppPaths
        from kernel.policy.settings import load_settings
        from kernel.sandbox.detect import detect_sandbox

        settings = load_settings(AppPaths.from_env())
        sandbox = Ahead(functools.partial(detect_sandbox, settings.exec.bwrap),
                        "sandbox-probe")
        from kernel.cli.cmd_exec import exec_command

        return exec_command(args, settings, keyring, sandbox)


def _doctor(keyring: Callable[[], str | None]) -> int:
    """The settings first (their `exec` is the sandbox the report is about), then the
    sandbox report in a thread while the rest loads and the key is read."""
    with _collector_paused():
        from kernel.cli.cmd_doctor import doctor_command, read_settings, sandbox_report
        from kernel.paths import AppPaths

        loaded = read_settings(AppPaths.from_env())
        sandbox = Ahead(functools.partial(sandbox_report, loaded[0].exec), "sandbox-report")
        return doctor_command(sys.stdout, keyring, loaded, sandbox)


def _keyring_lookup() -> Callable[[], str | None]:
    """The key stored in the keyring, read from now on: the first time in this process, in
    a child interpreter while keyring is not loaded here and the child would pick the
    backend this process would (kernel.shared.keys.picks_as_a_new_process), so keyring's loading
    (about 0.13 s of CPU) runs beside this process's instead of adding to it; else in a
    thread. A process that asks again (one calling main() again and again: the eval
    runner's workers, tests) loads keyring once and keeps its backend, which costs less
    than an interpreter for every call."""
    if not _CHILD_ASKED and "keyring" not in sys.modules and picks_as_a_new_process():
        _CHILD_ASKED.append(KEYRING_READ)
        return in_child(KEYRING_READ, _is_key, _read_keyring, "keyring-lookup")
    return Ahead(_read_keyring, "keyring-lookup")


_CHILD_ASKED: list[str] = []
"""What a child interpreter was asked for in this process (at most once)."""


def _read_keyring() -> str | None:
    from kernel.model.provider_config import keyring_key

    return keyring_key()


def _is_key(answer: object) -> TypeGuard[str | None]:
    return answer is None or isinstance(answer, str)
