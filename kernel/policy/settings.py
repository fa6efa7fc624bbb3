"""THE settings file: `settings.json` in the config folder (AppPaths.settings_file).

Loaded once, validated against `SETTINGS_SCHEMA` (JSON Schema 2020-12) and every permission
rule parsed; anything wrong stops the load with a `SettingsError` that names the file, the
line and the key or rule. Nothing is skipped. A missing file means the defaults.

```json
{
  "model": "claude-sonnet-4-5",
  "base_url": "http://127.0.0.1:8080",
  "default_mode": "ask",
  "permissions": {
    "allow": ["run_command(git status)", "run_command(npm test *)", "write_file(docs/**)"],
    "ask":   ["mcp__git__*"],
    "deny":  ["read_file(~/.ssh/**)"]
  },
  "exec": {"path": ["/opt/tools/bin"], "env": ["JAVA_HOME", "NPM_TOKEN"],
           "secret_env": ["NPM_TOKEN"], "read_only_paths": ["~/.nvm"],
           "limits": {"memory_mb": 4096, "file_size_mb": 1024, "processes": 512, "cpu_s": 600},
           "grace_s": 2, "max_output_mb": 1024, "bwrap": "bwrap", "local_network": false},
  "mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}},
  "checkpoints": {"max_bytes": 1073741824}
}
```

Writes go through `update_settings` (under a file lock: re-read, change, validate, replace
the file atomically) or its helpers: `change_settings` (the app's changes, by key path,
every problem reported before anything is written), `add_rule` / `remove_rule` ("always
allow" and its revocation), `set_mcp_server_disabled`.
"""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import functools
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel.mcp.config import MCP_SERVERS_SCHEMA, McpConfigError, parse_server
from kernel.modes import Mode
from kernel.paths import AppPaths
from kernel.policy.jsonpos import line_of
from kernel.policy.rules import RuleError, parse_rule, parse_setting_rule
from kernel.policy.ruleset import RuleSet
from kernel.sandbox.limits import MiB, ResourceLimits
from kernel.sandbox.settings import DEFAULT_GRACE_S, DEFAULT_MAX_OUTPUT, ExecSettings
from kernel.setting_records import (
    DEFAULT_CHECKPOINT_BYTES,
    DEFAULT_TOOL_SEARCH_THRESHOLD,
    RULE_LISTS,
    RuleList,
    SettingChange,
    SettingsProblem,
)
from kernel.tools.quickschema import compile_check

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

    from kernel.tools.spec import ToolSpec

_ENV_NAME: dict[str, Any] = {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}
_NAMES: dict[str, Any] = {"type": "array", "items": _ENV_NAME, "uniqueItems": True}
_RULES: dict[str, Any] = {"type": "array", "items": {"type": "string", "minLength": 1}}

MIN_CONTEXT_WINDOW = 4096
"""The smallest context window a `models` entry may give."""

MODELS_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "context_window": {"type": "integer", "minimum": MIN_CONTEXT_WINDOW},
            "max_tokens": {"type": "integer", "minimum": 1},
        },
    },
}
"""The schema of settings.json's `models` object."""

SETTINGS_SCHEMA: Mapping[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Reins settings",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "$schema": {"type": "string"},
        "model": {"type": "string", "minLength": 1},
        "base_url": {"type": "string", "pattern": "^https?://"},
        "default_mode": {"enum": [m.value for m in Mode]},
        "permissions": {
            "type": "object",
            "additionalProperties": False,
            "properties": {name: _RULES for name in RULE_LISTS},
        },
        "exec": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "path": {"type": "array", "items": {"type": "string", "pattern": "^/"}},
                "env": _NAMES,
                "secret_env": _NAMES,
                "read_only_paths": {"type": "array",
                                    "items": {"type": "string", "pattern": "^(/|~/)"}},
                "limits": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "memory_mb": {"type": "integer", "minimum": 16},
                        "file_size_mb": {"type": "integer", "minimum": 1},
                        "processes": {"type": "integer", "minimum": 8},
                        "cpu_s": {"type": "integer", "minimum": 1},
                    },
                },
                "grace_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 60},
                "max_output_mb": {"type": "integer", "minimum": 1},
                "bwrap": {"type": "string", "minLength": 1},
                "pasta": {"type": "string", "minLength": 1},
                "local_network": {"type": "boolean"},
            },
        },
        "mcpServers": MCP_SERVERS_SCHEMA,
        "models": MODELS_SCHEMA,
        "tool_search_threshold": {"type": "integer", "minimum": 1},
        "checkpoints": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"max_bytes": {"type": "integer", "minimum": 0}},
        },
    },
}
"""The schema of settings.json. `mcpServers` is owned by kernel.mcp.config."""


@functools.cache
def _quick_check() -> Callable[[Any], bool | None] | None:
    """The schema checked without jsonschema (kernel.tools.quickschema): what it finds valid
    is."""
    return compile_check(SETTINGS_SCHEMA)


@functools.cache
def _validator() -> Draft202012Validator:
    """The schema's validator, made when a settings file is not seen valid by the quick check
    (then jsonschema decides and says what is wrong): settings that load never import it."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(SETTINGS_SCHEMA)


class SettingsError(ValueError):
    """settings.json cannot be used; the message names the file, the line and what is wrong."""

    def __init__(self, source: str, line: int | None, problem: str,
                 path: tuple[str, ...] = ()) -> None:
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {problem}")
        self.source = source
        self.line = line
        self.problem = problem
        self.path = path
        """The key the problem is in (("permissions", "allow", "2"): the third allow rule)."""


@dataclass(frozen=True)
class Permissions:
    allow: RuleSet = field(default_factory=RuleSet)
    ask: RuleSet = field(default_factory=RuleSet)
    deny: RuleSet = field(default_factory=RuleSet)


@dataclass(frozen=True)
class Settings:
    model: str | None = None
    base_url: str | None = None
    default_mode: Mode = Mode.ASK
    permissions: Permissions = field(default_factory=Permissions)
    exec: ExecSettings = field(default_factory=ExecSettings)
    """What commands get (kernel.sandbox.settings.ExecSettings, for the CommandExecutor)."""
    mcp_servers: Mapping[str, Any] = field(default_factory=dict)
    """The raw `mcpServers` object, validated by its schema (kernel.mcp.config reads it)."""
    models: Mapping[str, Any] = field(default_factory=dict)
    """The `models` object: per model `context_window` and `max_tokens` (kernel.model.catalog
    reads it)."""
    tool_search_threshold: int = DEFAULT_TOOL_SEARCH_THRESHOLD
    """More tools on offer than this: find_tools searches the rest (kernel.tools.find_tools)."""
    checkpoint_bytes: int = DEFAULT_CHECKPOINT_BYTES
    """`checkpoints.max_bytes`: how many bytes of earlier file contents are kept for undo;
    beyond it the oldest steps drop theirs (kernel.transaction.checkpoints). 0: none."""
    raw: Mapping[str, Any] = field(default_factory=dict)


def load_settings(paths: AppPaths | None = None) -> Settings:
    """The settings of `paths.settings_file` (defaults when it does not exist)."""
    file = (paths or AppPaths.from_env()).settings_file
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Settings()
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(str(file), None, f"cannot be read: {exc}") from exc
    return parse_settings(text, str(file))


def parse_settings(text: str, source: str = "settings.json") -> Settings:
    """Validate and parse the text of a settings file, or raise SettingsError."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(source, exc.lineno, f"not valid JSON: {exc.msg} "
                                                f"(column {exc.colno})") from exc
    quick = _quick_check()
    vouched = quick is not None and quick(data) is True
    errors = [] if vouched else sorted(_validator().iter_errors(data),
                                       key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        path = list(first.absolute_path)
        where = "/".join(str(p) for p in path) or "(top level)"
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        if first.validator == "additionalProperties" and isinstance(first.instance, dict):
            known = first.schema.get("properties", {})
            path += [k for k in first.instance if k not in known][:1]
        raise SettingsError(source, line_of(text, path), f"{where}: {first.message}{more}",
                            tuple(str(p) for p in path))
    perms = data.get("permissions", {})
    lists: dict[str, RuleSet] = {}
    for name in RULE_LISTS:
        rules = []
        for i, rule_text in enumerate(perms.get(name, [])):
            try:
                rules.append(parse_setting_rule(rule_text))
            except RuleError as exc:
                raise SettingsError(source, line_of(text, ["permissions", name, i]),
                                    f"permissions/{name}/{i}: {exc}",
                                    ("permissions", name, str(i))) from exc
        lists[name] = RuleSet(rules)
    return Settings(
        model=data.get("model"),
        base_url=data.get("base_url"),
        default_mode=Mode(data.get("default_mode", Mode.ASK.value)),
        permissions=Permissions(**lists),
        exec=_exec_settings(data.get("exec", {})),
        mcp_servers=data.get("mcpServers", {}),
        models=data.get("models", {}),
        tool_search_threshold=data.get("tool_search_threshold", DEFAULT_TOOL_SEARCH_THRESHOLD),
        checkpoint_bytes=data.get("checkpoints", {}).get("max_bytes",
                                                        DEFAULT_CHECKPOINT_BYTES),
        raw=data,
    )


def _exec_settings(ex: Mapping[str, Any]) -> ExecSettings:
    """The `exec` object as kernel.sandbox's ExecSettings (defaults for what is not set)."""
    limits = ex.get("limits", {})
    default = ResourceLimits()
    return ExecSettings(
        extra_path=tuple(ex.get("path", ())),
        env_passthrough=tuple(ex.get("env", ())),
        env_secret_opt_in=tuple(ex.get("secret_env", ())),
        read_only_paths=tuple(ex.get("read_only_paths", ())),
        limits=ResourceLimits(
            address_space=limits.get("memory_mb", default.address_space // MiB) * MiB,
            file_size=limits.get("file_size_mb", default.file_size // MiB) * MiB,
            processes=limits.get("processes", default.processes),
            cpu_s=limits.get("cpu_s", default.cpu_s)),
        grace_s=float(ex.get("grace_s", DEFAULT_GRACE_S)),
        max_output_bytes=ex.get("max_output_mb", DEFAULT_MAX_OUTPUT // MiB) * MiB,
        bwrap=ex.get("bwrap", "bwrap"),
        pasta=ex.get("pasta", "pasta"),
        local_network=bool(ex.get("local_network", False)),
    )


def add_rule(paths: AppPaths, rule_list: RuleList, rule_text: str) -> Settings:
    """Append a rule (canonical spelling) to a permissions list of settings.json.

    The current file must load cleanly; the result is validated before it replaces the file.
    Adding a rule that is already there changes nothing."""
    canonical = _canonical(rule_text)

    def change(data: dict[str, Any]) -> None:
        rules = data.setdefault("permissions", {}).setdefault(rule_list, [])
        if all(_canonical(r) != canonical for r in rules):
            rules.append(canonical)

    return update_settings(paths, change)


def remove_rule(paths: AppPaths, rule_list: RuleList, rule_text: str) -> Settings:
    """Remove a rule (any spelling equivalent to `rule_text`) from a permissions list.
    Raises KeyError when the list holds no such rule."""
    canonical = _canonical(rule_text)

    def change(data: dict[str, Any]) -> None:
        rules = data.get("permissions", {}).get(rule_list, [])
        kept = [r for r in rules if _canonical(r) != canonical]
        if len(kept) == len(rules):
            raise KeyError(f"permissions/{rule_list} has no rule {canonical!r}")
        data["permissions"][rule_list] = kept

    return update_settings(paths, change)


def _canonical(rule_text: str) -> str:
    try:
        return parse_rule(rule_text).text
    except RuleError:
        return rule_text


def set_mcp_server_disabled(paths: AppPaths, name: str, disabled: bool) -> Settings:
    """Mark one configured MCP server `"disabled": true`, or drop the mark (KeyError when
    settings.json has no server of that name)."""

    def change(data: dict[str, Any]) -> None:
        entry = data.get("mcpServers", {}).get(name)
        if not isinstance(entry, dict):
            raise KeyError(f"mcpServers has no server named {name!r}")
        if disabled:
            entry["disabled"] = True
        else:
            entry.pop("disabled", None)

    return update_settings(paths, change)


def apply_changes(data: dict[str, Any], changes: Iterable[SettingChange]) -> None:
    """Set (or, with `remove`, drop) each key path of the parsed settings, making the
    objects on the way; every other key stays as it is. ValueError for an empty path or a
    path through something that is not an object."""
    for change in changes:
        if not change.path or not all(isinstance(k, str) and k for k in change.path):
            raise ValueError(f"a settings change needs a path of key names, got "
                             f"{list(change.path)!r}")
        node = data
        for depth, key in enumerate(change.path[:-1]):
            child = node.get(key) if change.remove else node.setdefault(key, {})
            if child is None:
                break
            if not isinstance(child, dict):
                where = "/".join(change.path[:depth + 1])
                raise ValueError(f"{where} is not an object, so {'/'.join(change.path)} "
                                 f"cannot be changed")
            node = child
        else:
            if change.remove:
                node.pop(change.path[-1], None)
            else:
                node[change.path[-1]] = change.value


def settings_problems(data: Any, source: str = "settings.json") -> list[SettingsProblem]:
    """Everything wrong with these parsed settings: every rule that does not parse, every
    MCP server entry that cannot be used (kernel.mcp.config's words), and otherwise the
    first schema problem. Empty: the settings load."""
    problems: list[SettingsProblem] = []
    perms = data.get("permissions") if isinstance(data, dict) else None
    for name in RULE_LISTS:
        rules = perms.get(name) if isinstance(perms, dict) else None
        for i, rule_text in enumerate(rules if isinstance(rules, list) else ()):
            if isinstance(rule_text, str) and rule_text:
                try:
                    parse_setting_rule(rule_text)
                except RuleError as exc:
                    problems.append(SettingsProblem(("permissions", name, str(i)), str(exc)))
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    for server, entry in (servers.items() if isinstance(servers, dict) else ()):
        try:
            parse_server(server, entry)
        except McpConfigError as exc:
            problems.append(SettingsProblem(("mcpServers", str(server)), str(exc)))
    if not problems:
        try:
            parse_settings(json.dumps(data, indent=2), source)
        except SettingsError as exc:
            problems.append(SettingsProblem(exc.path, exc.problem))
    return problems


class _NotWritten(Exception):
    pass


def change_settings(paths: AppPaths, changes: Iterable[SettingChange], *,
                    write: bool = True) -> tuple[SettingsProblem, ...]:
    """Apply `changes` to settings.json (through `update_settings`: locked, atomic, every
    key not named kept) unless anything is wrong; then nothing is written and every problem
    is returned. `write=False` only checks. A current file that does not load is the one
    problem (with its line): it must be fixed first."""
    found: list[SettingsProblem] = []

    def change(data: dict[str, Any]) -> None:
        try:
            apply_changes(data, changes)
        except ValueError as exc:
            found.append(SettingsProblem((), str(exc)))
        else:
            found.extend(settings_problems(data, str(paths.settings_file)))
        if found or not write:
            raise _NotWritten

    try:
        update_settings(paths, change)
    except _NotWritten:
        pass
    except SettingsError as exc:
        return (SettingsProblem(exc.path, f"settings.json cannot be used: {exc}",
                                exc.line or 0),)
    return tuple(found)


def update_settings(paths: AppPaths, change: Callable[[dict[str, Any]], None]) -> Settings:
    """THE way to write settings.json: under its lock, re-read and validate it, apply
    `change` to the parsed JSON, validate the result, replace the file atomically, and
    return the new settings. A current file that does not load, or a result that would not,
    raises SettingsError and leaves the file as it was. (The settings dialog, the approval
    gate and the kernel's MCP commands all save through this.)"""
    file = paths.settings_file
    file.parent.mkdir(parents=True, exist_ok=True)
    with _locked(file):
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = "{}"
        parse_settings(text, str(file))
        data = json.loads(text)
        change(data)
        new_text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        settings = parse_settings(new_text, str(file))
        fd, tmp = tempfile.mkstemp(prefix=".settings-", suffix=".tmp", dir=file.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(new_text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, file)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    return settings


Stamp = tuple[int, int, int] | None
"""A file's mtime, size and inode (None: it does not exist)."""
_UNREAD: Any = object()


def file_stamp(path: Path) -> Stamp:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class SettingsFile:
    """THE reading of settings.json for a process that keeps running (the app's kernel and
    the gate of each run, which share one): `current()` reads the file again only when it
    changed on disk (its mtime, size or inode: a replace always changes it), so a hand edit,
    or a rule saved by another session or by `reins exec`, applies from the next decision,
    and an unchanged file costs one stat."""

    def __init__(self, paths: AppPaths, settings: Settings | None = None) -> None:
        """`settings`: already read from the file as it is now."""
        self.paths = paths
        self._stamp: Stamp = (file_stamp(paths.settings_file) if settings is not None
                              else _UNREAD)
        self._settings = settings if settings is not None else Settings()
        self._error: SettingsError | None = None

    def current(self) -> Settings:
        """The settings as the file is now; SettingsError when it does not load."""
        stamp = file_stamp(self.paths.settings_file)
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self._settings, self._error = load_settings(self.paths), None
            except SettingsError as exc:
                self._settings, self._error = Settings(), exc
        if self._error is not None:
            raise self._error
        return self._settings

    def saved(self, settings: Settings) -> None:
        """This process wrote the file (`update_settings` and its helpers return what)."""
        self._settings, self._error = settings, None
        self._stamp = file_stamp(self.paths.settings_file)


@contextlib.contextmanager
def _locked(file: Path) -> Iterator[None]:
    with open(file.with_name(file.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def rule_warnings(settings: Settings, specs: Iterable[ToolSpec]) -> list[str]:
    """Rules that match none of these tools now, said in words (for `reins doctor` and the
    settings page): an MCP tool or pattern no server offers at the moment. They are not
    errors (MCP tools register later); a rule naming no tool Reins can have does not load
    (kernel.policy.rules.parse_setting_rule)."""
    by_name = {s.name: s for s in specs}
    out: list[str] = []
    for list_name in RULE_LISTS:
        for rule in getattr(settings.permissions, list_name).rules:
            where = f"permissions/{list_name}: {rule.text}"
            if rule.tool_regex is not None:
                if not any(rule.matches_tool(n) for n in by_name):
                    out.append(f"{where} matches no tool at the moment")
                continue
            spec = by_name.get(rule.tool)
            if spec is None:
                close = difflib.get_close_matches(rule.tool, list(by_name), n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                out.append(f"{where} names no tool{hint}")
    return out
