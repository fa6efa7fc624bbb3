"""An `mcpServers` entry ↔ the MCP server form's fields (pure; no Qt, no kernel).

Only the shape is handled here: text lines become `args` and `env`, a typed number becomes
seconds. Whether the entry can be used (a command or a URL, known keys, timeouts in range)
is the kernel's to say when the form is saved (kernel.mcp.config, through UpdateSettings).
Keys the form does not show (`headers`, `disabled`) are kept from the entry being edited.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["command", "url"]
TIMEOUTS = (("startup_timeout_s", "startup timeout"), ("tool_timeout_s", "tool timeout"))


@dataclass(frozen=True)
class ServerFields:
    """What the form shows: one text per field, as typed."""

    name: str = ""
    kind: Kind = "command"
    command: str = ""
    args: str = ""
    """One argument per line."""
    env: str = ""
    """One NAME=value per line."""
    cwd: str = ""
    url: str = ""
    sandbox: bool = False
    startup_timeout_s: str = ""
    tool_timeout_s: str = ""
    """Seconds; empty for the default."""


def fields_of(name: str, entry: Mapping[str, Any]) -> ServerFields:
    """The form's fields for an existing entry."""
    env = entry.get("env") if isinstance(entry.get("env"), Mapping) else {}
    return ServerFields(
        name=name, kind="url" if "url" in entry else "command",
        command=str(entry.get("command", "")),
        args="\n".join(str(a) for a in entry.get("args", ()) or ()),
        env="\n".join(f"{k}={v}" for k, v in (env or {}).items()),
        cwd=str(entry.get("cwd", "")), url=str(entry.get("url", "")),
        sandbox=entry.get("sandbox") is True,
        startup_timeout_s=_seconds_text(entry.get("startup_timeout_s")),
        tool_timeout_s=_seconds_text(entry.get("tool_timeout_s")))


def _seconds_text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    return str(int(value)) if float(value).is_integer() else str(value)


def entry_of(fields: ServerFields, original: Mapping[str, Any] | None = None,
             ) -> tuple[dict[str, Any], list[str]]:
    """The entry the fields describe, and what in them has not the right shape (then the
    entry is not to be sent). `original`: the entry being edited, whose keys the form does
    not show are kept."""
    problems: list[str] = []
    if not fields.name.strip():
        problems.append("the server needs a name")
    elif fields.name != fields.name.strip():
        problems.append("the name must not start or end with spaces")
    kept = {k: v for k, v in (original or {}).items() if k == "disabled"
            or (k == "headers" and fields.kind == "url")
            or (k == "type" and ("url" in (original or {})) == (fields.kind == "url"))}
    entry: dict[str, Any] = dict(kept)
    if fields.kind == "url":
        entry["url"] = fields.url.strip()
    else:
        entry["command"] = fields.command.strip()
        args = [line for line in fields.args.splitlines() if line.strip()]
        if args:
            entry["args"] = args
        env: dict[str, str] = {}
        for number, line in enumerate(fields.env.splitlines(), start=1):
            if not line.strip():
                continue
            name, equals, value = line.partition("=")
            if not equals or not name.strip():
                problems.append(f"environment line {number}: NAME=value expected, got "
                                f"{line.strip()!r}")
                continue
            env[name.strip()] = value
        if env:
            entry["env"] = env
        if fields.cwd.strip():
            entry["cwd"] = fields.cwd.strip()
        if fields.sandbox:
            entry["sandbox"] = True
    for key, words in TIMEOUTS:
        text = getattr(fields, key).strip()
        if not text:
            continue
        try:
            entry[key] = int(text) if text.isdigit() else float(text)
        except ValueError:
            problems.append(f"the {words} must be a number of seconds, got {text!r}")
    return entry, problems

