"""An eval task: a folder with `task.toml` (docs/EVAL.md) and an optional `workspace/`.

`load_task(folder)` reads and checks the file (stdlib `tomllib`) and returns a frozen `Task`;
anything unknown or of the wrong type is a `TaskError` naming the file and the key, so a
typo never silently drops a check.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from kernel.modes import MODES

TASK_FILE = "task.toml"
WORKSPACE_DIR = "workspace"
APPROVE_CHOICES = ("allow", "deny")


class TaskError(ValueError):
    """A task file cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class ArgCheck:
    """What the arguments of some call to `tool` must satisfy: `equals` (these keys have
    exactly these values) and/or `schema` (a JSON Schema the whole arguments object meets)."""

    tool: str
    equals: Mapping[str, Any] = field(default_factory=dict)
    schema: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class FileCheck:
    """A workspace file after the run: exists (or not) and holds these substrings."""

    path: str
    exists: bool = True
    contains: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResultCheck:
    """What the model was sent as the result of every call to `tool` whose arguments
    include `args` (there must be at least one such call): its text contains these
    substrings, lacks those, matches these regular expressions, and is (or is not) an
    error. Read from the fake server's record of the requests in scripted runs, else from
    the run's `tool_result` events (their first 2,000 characters)."""

    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)
    contains: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    regex: tuple[str, ...] = ()
    is_error: bool | None = None


@dataclass(frozen=True)
class CallCount:
    """How many times `tool` may be called: exactly `count`, or between `at_least` and
    `at_most`."""

    tool: str
    count: int | None = None
    at_least: int | None = None
    at_most: int | None = None


@dataclass(frozen=True)
class Expect:
    tools: tuple[str, ...] = ()
    """Tools that must be called (each at least once)."""
    ordered: bool = False
    """`tools` must first be called in this order."""
    forbidden: tuple[str, ...] = ()
    """Tools that must not be called."""
    no_tools: bool = False
    """The run must call no tool at all (a question that needs none)."""
    args: tuple[ArgCheck, ...] = ()
    files: tuple[FileCheck, ...] = ()
    results: tuple[ResultCheck, ...] = ()
    calls: tuple[CallCount, ...] = ()
    answer_contains: tuple[str, ...] = ()
    """Substrings (case-insensitive) the final answer must contain."""
    answer_words: tuple[str, ...] = ()
    """Words or phrases (case-insensitive) the final answer must contain as whole words:
    "42" is not found in "142", "here" not in "there"."""
    answer_regex: tuple[str, ...] = ()
    """Regular expressions (Python `re.search`) the final answer must match."""
    answer_equals: str | None = None
    """The final answer, without surrounding white space, must be exactly this."""
    answer_excludes: tuple[str, ...] = ()
    """Substrings (case-insensitive) no text of the model may contain, before a tool call
    or after the last."""
    errors: tuple[str, ...] = ()
    """Error codes some call must have ended with (what the harness must absorb)."""
    offered: tuple[str, ...] = ()
    """Tools that must have been offered to the model in some request (scripted runs only:
    the fake server sees the requests)."""
    stop_reason: str = "end_turn"
    max_rounds: int | None = None
    """The run must need no more model rounds than this."""


@dataclass(frozen=True)
class ScriptedCall:
    name: str
    input: Any
    id: str = ""
    """Empty: the fake server makes one (`toolu_fake_<request>_<block index>`)."""


@dataclass(frozen=True)
class ScriptedTurn:
    """One model turn for `--scripted`: text and tool calls, or an HTTP error status."""

    text: str = ""
    calls: tuple[ScriptedCall, ...] = ()
    error: int | None = None
    unless_offered: str = ""
    """Skip this turn when the request already offers this tool (a `find_tools` turn that
    is needed only when the tool is hidden)."""


@dataclass(frozen=True)
class Task:
    name: str
    folder: Path
    prompt: str
    description: str = ""
    category: str = ""
    mode: str = "ask"
    approve: str | None = None
    """Answer every approval request this way (`reins exec --approve`); None: unanswered."""
    max_rounds: int = 20
    settings: Mapping[str, Any] = field(default_factory=dict)
    """settings.json of the task's fresh REINS_HOME (rules, mcpServers, ...)."""
    expect: Expect = field(default_factory=Expect)
    script: tuple[ScriptedTurn, ...] = ()

    @property
    def workspace(self) -> Path:
        return self.folder / WORKSPACE_DIR


_TOP = {"prompt", "description", "category", "mode", "approve", "max_rounds", "settings",
        "expect", "script"}
_EXPECT = {"tools", "ordered", "forbidden", "no_tools", "args", "files", "results", "calls",
           "answer_contains", "answer_words", "answer_regex", "answer_equals",
           "answer_excludes", "errors", "offered", "stop_reason", "max_rounds"}
_ARGS = {"tool", "equals", "schema"}
_RESULTS = {"tool", "args", "contains", "excludes", "regex", "is_error"}
_CALLS = {"tool", "count", "at_least", "at_most"}
_FILES = {"path", "exists", "contains", "excludes"}
_TURN = {"text", "tools", "error", "unless_offered"}
_CALL = {"name", "input", "id"}


def load_task(folder: Path) -> Task:
    """The task in `folder` (its `task.toml`), or TaskError."""
    file = folder / TASK_FILE
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{file}: cannot be read: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"{file}: not valid TOML: {exc}") from exc
    try:
        return parse_task(data, folder)
    except TaskError as exc:
        raise TaskError(f"{file}: {exc}") from None


def parse_task(data: Mapping[str, Any], folder: Path) -> Task:
    _known(data, _TOP, "")
    mode = _str(data, "mode", "", "ask")
    if mode not in MODES:
        raise TaskError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    approve = data.get("approve")
    if approve is not None and approve not in APPROVE_CHOICES:
        raise TaskError(f"approve: {approve!r} is not one of {', '.join(APPROVE_CHOICES)}")
    prompt = _str(data, "prompt", "", None)
    if not prompt.strip():
        raise TaskError("prompt: must not be empty")
    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        raise TaskError("settings: must be a table")
    return Task(
        name=folder.name, folder=folder, prompt=prompt,
        description=_str(data, "description", "", ""),
        category=_str(data, "category", "", ""),
        mode=mode, approve=approve,
        max_rounds=_int(data, "max_rounds", "", 20),
        settings=settings,
        expect=_expect(_table(data, "expect")),
        script=tuple(_turn(t, f"script[{i}].") for i, t in enumerate(_tables(data, "script", ""))),
    )


def _expect(data: Mapping[str, Any]) -> Expect:
    p = "expect."
    _known(data, _EXPECT, p)
    max_rounds = data.get("max_rounds")
    expect = Expect(
        tools=_strs(data, "tools", p), ordered=_bool(data, "ordered", p, False),
        forbidden=_strs(data, "forbidden", p), no_tools=_bool(data, "no_tools", p, False),
        args=tuple(_arg_check(a, f"{p}args[{i}].")
                   for i, a in enumerate(_tables(data, "args", p))),
        files=tuple(_file_check(f, f"{p}files[{i}].")
                    for i, f in enumerate(_tables(data, "files", p))),
        results=tuple(_result_check(r, f"{p}results[{i}].")
                      for i, r in enumerate(_tables(data, "results", p))),
        calls=tuple(_call_count(c, f"{p}calls[{i}].")
                    for i, c in enumerate(_tables(data, "calls", p))),
        answer_contains=_strs(data, "answer_contains", p),
        answer_words=_strs(data, "answer_words", p),
        answer_regex=_regexes(data, "answer_regex", p),
        answer_equals=(None if data.get("answer_equals") is None
                       else _str(data, "answer_equals", p, None)),
        answer_excludes=_strs(data, "answer_excludes", p),
        errors=_strs(data, "errors", p), offered=_strs(data, "offered", p),
        stop_reason=_str(data, "stop_reason", p, "end_turn"),
        max_rounds=None if max_rounds is None else _int(data, "max_rounds", p, 0),
    )
    if expect.no_tools and (expect.tools or expect.args or expect.results):
        raise TaskError("expect: no_tools contradicts tools/args/results")
    return expect


def _result_check(data: Mapping[str, Any], p: str) -> ResultCheck:
    _known(data, _RESULTS, p)
    args = data.get("args", {})
    if not isinstance(args, dict):
        raise TaskError(f"{p}args: must be a table")
    is_error = data.get("is_error")
    if is_error is not None and not isinstance(is_error, bool):
        raise TaskError(f"{p}is_error: must be true or false")
    check = ResultCheck(tool=_str(data, "tool", p, None), args=args,
                        contains=_strs(data, "contains", p), excludes=_strs(data, "excludes", p),
                        regex=_regexes(data, "regex", p), is_error=is_error)
    if not (check.contains or check.excludes or check.regex or check.is_error is not None):
        raise TaskError(f"{p}: give contains, excludes, regex or is_error")
    return check


def _call_count(data: Mapping[str, Any], p: str) -> CallCount:
    _known(data, _CALLS, p)
    bounds = {k: _count(data, k, p) for k in ("count", "at_least", "at_most") if k in data}
    if not bounds or ("count" in bounds and len(bounds) > 1):
        raise TaskError(f"{p}: give count, or at_least and/or at_most")
    if bounds.get("at_least", 0) > bounds.get("at_most", bounds.get("at_least", 0)):
        raise TaskError(f"{p}: at_least is above at_most")
    return CallCount(tool=_str(data, "tool", p, None), **bounds)


def _count(data: Mapping[str, Any], key: str, p: str) -> int:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TaskError(f"{p}{key}: must be a whole number, 0 or more")
    return value


def _regexes(data: Mapping[str, Any], key: str, p: str) -> tuple[str, ...]:
    patterns = _strs(data, key, p)
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise TaskError(f"{p}{key}: {pattern!r} is not a valid regular expression: "
                            f"{exc}") from None
    return patterns


def _arg_check(data: Mapping[str, Any], p: str) -> ArgCheck:
    _known(data, _ARGS, p)
    equals = data.get("equals", {})
    schema = data.get("schema")
    if not isinstance(equals, dict) or (schema is not None and not isinstance(schema, dict)):
        raise TaskError(f"{p}equals/schema: must be tables")
    if not equals and schema is None:
        raise TaskError(f"{p}: give equals or schema")
    if schema is not None:
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise TaskError(f"{p}schema: not a valid JSON Schema: {exc.message}") from None
    return ArgCheck(tool=_str(data, "tool", p, None), equals=equals, schema=schema)


def _file_check(data: Mapping[str, Any], p: str) -> FileCheck:
    _known(data, _FILES, p)
    path = _str(data, "path", p, None)
    if Path(path).is_absolute() or ".." in Path(path).parts:
        raise TaskError(f"{p}path: must be relative to the workspace, without '..'")
    return FileCheck(path=path, exists=_bool(data, "exists", p, True),
                     contains=_strs(data, "contains", p), excludes=_strs(data, "excludes", p))


def _turn(data: Mapping[str, Any], p: str) -> ScriptedTurn:
    _known(data, _TURN, p)
    calls = []
    for i, call in enumerate(_tables(data, "tools", p)):
        _known(call, _CALL, f"{p}tools[{i}].")
        calls.append(ScriptedCall(_str(call, "name", f"{p}tools[{i}].", None),
                                  call.get("input", {}), _str(call, "id", f"{p}tools[{i}].", "")))
    error = data.get("error")
    if error is not None and (not isinstance(error, int) or not 400 <= error <= 599):
        raise TaskError(f"{p}error: must be an HTTP error status (400-599)")
    turn = ScriptedTurn(text=_str(data, "text", p, ""), calls=tuple(calls), error=error,
                        unless_offered=_str(data, "unless_offered", p, ""))
    if error is None and not turn.text and not turn.calls:
        raise TaskError(f"{p}: a turn needs text, tools or error")
    return turn


def _known(data: Mapping[str, Any], keys: set[str], prefix: str) -> None:
    unknown = sorted(set(data) - keys)
    if unknown:
        raise TaskError(f"{prefix}{unknown[0]}: unknown key (known: {', '.join(sorted(keys))})")


def _table(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise TaskError(f"{key}: must be a table")
    return value


def _tables(data: Mapping[str, Any], key: str, p: str) -> Sequence[Mapping[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise TaskError(f"{p}{key}: must be an array of tables")
    return value


def _str(data: Mapping[str, Any], key: str, p: str, default: str | None) -> str:
    value = data.get(key, default)
    if value is None:
        raise TaskError(f"{p}{key}: required")
    if not isinstance(value, str):
        raise TaskError(f"{p}{key}: must be a string")
    return value


def _strs(data: Mapping[str, Any], key: str, p: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskError(f"{p}{key}: must be an array of strings")
    return tuple(value)


def _bool(data: Mapping[str, Any], key: str, p: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise TaskError(f"{p}{key}: must be true or false")
    return value


def _int(data: Mapping[str, Any], key: str, p: str, default: int) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TaskError(f"{p}{key}: must be a positive integer")
    return value


def builtin_tasks_dir() -> Path:
    """The built-in suite: `eval/tasks/` of the source tree."""
    return Path(__file__).resolve().parents[2] / "eval" / "tasks"


def discover(specs: Sequence[str] | None) -> list[Task]:
    """The tasks of `--tasks` (repeatable): each a task folder, a folder of task folders,
    or a glob of task folders; none: the built-in suite. Each spec's tasks sorted by name.
    TaskError when a spec finds none, a task cannot be loaded, or two share a name."""
    folders: list[Path] = []
    for spec in specs or [str(builtin_tasks_dir())]:
        found = _spec_folders(spec)
        if not found:
            raise TaskError(f"no tasks (folders with {TASK_FILE}) at {spec}")
        folders += [f for f in found if f.resolve() not in {g.resolve() for g in folders}]
    tasks = [load_task(f) for f in folders]
    names = [t.name for t in tasks]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise TaskError(f"two tasks are named {', '.join(twice)} (a task's name is its "
                        f"folder's): rename one")
    return tasks


def _spec_folders(spec: str) -> list[Path]:
    path = Path(spec).expanduser()
    if path.is_dir():
        return _task_folders(path)
    base = Path(path.anchor or ".")
    pattern = str(path.relative_to(base)) if path.anchor else spec
    return sorted(p for p in base.glob(pattern) if (p / TASK_FILE).is_file())


def _task_folders(path: Path) -> list[Path]:
    if (path / TASK_FILE).is_file():
        return [path]
    return sorted(p for p in path.iterdir() if (p / TASK_FILE).is_file())
