"""The `mcpServers` settings object, in the Claude Desktop format, and importing that file.

```json
"mcpServers": {
  "git":  {"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_AUTHOR_NAME": "me"}},
  "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer …"}}
}
```

A `command` entry is a stdio server; a `url` entry is a streamable-HTTP server. Reins adds
`"disabled": true` (keep the entry, don't start it), `"sandbox": true` (a stdio server runs
under bubblewrap: the network, its `cwd` and its own state folder as its HOME, of the rest
what a command sees and the folders its command and arguments name; see
kernel.sandbox.server), `"startup_timeout_s"` (default 60: a first
`npx -y` or `uvx` start downloads the package), `"tool_timeout_s"` (default 120: how long a
call may go without an answer or a progress notification) and accepts an explicit `"type"`. Unknown
keys are refused with a message naming them: a pasted `autoApprove` list from another client
must not look as if it had been honoured.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import jsonschema

Transport = Literal["stdio", "http"]

_STRING_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
_SECONDS: dict[str, Any] = {"type": "number", "exclusiveMinimum": 0, "maximum": 86_400}
DEFAULT_STARTUP_TIMEOUT_S = 60.0
DEFAULT_TOOL_TIMEOUT_S = 120.0
_STDIO_KEYS = ("command", "args", "env", "cwd", "sandbox")
_HTTP_KEYS = ("url", "headers")
_TYPE_ALIASES: Mapping[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamableHttp": "http",
}

MCP_SERVERS_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "description": "MCP servers, in the Claude Desktop format (server name → definition).",
    "propertyNames": {"minLength": 1, "maxLength": 64},
    "additionalProperties": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1},
            "args": {"type": "array", "items": {"type": "string"}},
            "env": _STRING_MAP,
            "cwd": {"type": "string", "minLength": 1},
            "url": {"type": "string", "pattern": "^https?://"},
            "headers": _STRING_MAP,
            "type": {"enum": sorted(_TYPE_ALIASES)},
            "disabled": {"type": "boolean"},
            "sandbox": {"type": "boolean"},
            "startup_timeout_s": _SECONDS,
            "tool_timeout_s": _SECONDS,
        },
        "additionalProperties": False,
        "oneOf": [
            {"required": ["command"], "not": {"anyOf": [{"required": [k]} for k in _HTTP_KEYS]}},
            {"required": ["url"], "not": {"anyOf": [{"required": [k]} for k in _STDIO_KEYS]}},
        ],
    },
}
"""JSON Schema of the `mcpServers` object; the settings loader includes it as is."""


@functools.cache
def _server_validator() -> jsonschema.Draft202012Validator:
    """An entry's validator, made when a server entry is first read (a settings file with no
    `mcpServers` never imports jsonschema for it)."""
    import jsonschema

    return jsonschema.Draft202012Validator(MCP_SERVERS_SCHEMA["additionalProperties"])


class McpConfigError(ValueError):
    """An `mcpServers` entry that cannot be used; the message names the server and the key."""


@dataclass(frozen=True)
class McpServerConfig:
    """One configured server. Exactly one of `command` (stdio) or `url` (HTTP) is set."""

    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables named explicitly by the user; added to the allowlisted environment."""
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    enabled: bool = True
    sandbox: bool = False
    """Run the (stdio) server under bubblewrap (kernel.sandbox.server)."""
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S
    """How long the server may take to start and list its tools."""
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S
    """How long a call may go without an answer or a progress notification."""

    def describe(self) -> str:
        """The command line or URL, for settings and error messages."""
        if self.transport == "http":
            return self.url
        return " ".join([self.command, *self.args])


def parse_mcp_servers(data: Any, *, where: str = "mcpServers") -> tuple[McpServerConfig, ...]:
    """Check an `mcpServers` object and turn it into configs, in the file's order.

    Raises McpConfigError naming the first problem: the server, the key, what was expected.
    """
    if not isinstance(data, Mapping):
        raise McpConfigError(f"{where} must be an object of server name → definition, "
                             f"got {_json_type(data)}")
    return tuple(parse_server(name, entry, where=where) for name, entry in data.items())


def parse_server(name: Any, entry: Any, *, where: str = "mcpServers") -> McpServerConfig:
    """Check one server definition (see the module docstring for the format)."""
    if not isinstance(name, str) or not name.strip() or len(name) > 64:
        raise McpConfigError(f"{where}: server name {name!r} must be 1–64 characters")
    label = f"{where}.{name}"
    if not isinstance(entry, Mapping):
        raise McpConfigError(f"{label} must be an object with \"command\" or \"url\", "
                             f"got {_json_type(entry)}")
    unknown = sorted(set(entry) - set(MCP_SERVERS_SCHEMA["additionalProperties"]["properties"]))
    if unknown:
        allowed = ", ".join(MCP_SERVERS_SCHEMA["additionalProperties"]["properties"])
        raise McpConfigError(f"{label}: unknown key(s) {', '.join(map(repr, unknown))}; "
                             f"allowed keys are {allowed}")
    has_command, has_url = "command" in entry, "url" in entry
    if has_command == has_url:
        raise McpConfigError(
            f"{label} needs exactly one of \"command\" (a stdio server) or \"url\" "
            f"(a streamable-HTTP server)" + (", not both" if has_command else "")
        )
    transport: Transport = "stdio" if has_command else "http"
    misplaced = [k for k in (_HTTP_KEYS if has_command else _STDIO_KEYS) if k in entry]
    if misplaced:
        raise McpConfigError(f"{label}: {', '.join(map(repr, misplaced))} does not apply to a "
                             f"{'stdio' if has_command else 'URL'} server")
    declared = entry.get("type")
    if isinstance(declared, str) and _TYPE_ALIASES.get(declared, transport) != transport:
        raise McpConfigError(f"{label}: \"type\": {declared!r} contradicts its "
                             f"{'command' if has_command else 'url'}")
    errors = sorted(_server_validator().iter_errors(entry), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
        raise McpConfigError(f"{label}{path}: {_explain(err)}")
    for key in ("startup_timeout_s", "tool_timeout_s"):
        if key in entry and not math.isfinite(entry[key]):  # NaN passes every bound
            raise McpConfigError(f"{label}.{key}: must be a number of seconds above 0 and at "
                                 f"most 86400, got {entry[key]!r}")
    return McpServerConfig(
        name=name,
        transport=transport,
        command=entry.get("command", ""),
        args=tuple(entry.get("args", ())),
        env=dict(entry.get("env", {})),
        cwd=entry.get("cwd"),
        url=entry.get("url", ""),
        headers=dict(entry.get("headers", {})),
        enabled=not entry.get("disabled", False),
        sandbox=entry.get("sandbox", False),
        startup_timeout_s=float(entry.get("startup_timeout_s", DEFAULT_STARTUP_TIMEOUT_S)),
        tool_timeout_s=float(entry.get("tool_timeout_s", DEFAULT_TOOL_TIMEOUT_S)),
    )


def _explain(err: jsonschema.ValidationError) -> str:
    if err.validator == "type":
        return f"expected {err.validator_value}, got {_json_type(err.instance)}"
    if err.validator == "pattern":
        return f"{err.instance!r} must start with http:// or https://"
    if err.validator == "minLength":
        return "must not be empty"
    if err.validator in ("exclusiveMinimum", "maximum"):
        return f"must be a number of seconds above 0 and at most 86400, got {err.instance!r}"
    return err.message


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    for kind, label in names.items():
        if type(value) is kind:
            return label
    return "a mapping" if isinstance(value, Mapping) else type(value).__name__


# ---------------------------------------------------------------- Claude Desktop import

CLAUDE_DESKTOP_FILE = "claude_desktop_config.json"


def claude_desktop_config_path(
    platform: str | None = None,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """Where Claude Desktop keeps its configuration on this OS (the file may not exist).

    macOS: ~/Library/Application Support/Claude; Windows: %APPDATA%\\Claude; Linux (the
    community builds): $XDG_CONFIG_HOME/Claude, by default ~/.config/Claude.
    """
    platform = sys.platform if platform is None else platform
    home = Path.home() if home is None else home
    env = os.environ if environ is None else environ
    if platform == "darwin":
        base = home / "Library" / "Application Support"
    elif platform.startswith("win"):
        base = Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
    else:
        base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return base / "Claude" / CLAUDE_DESKTOP_FILE


def find_claude_desktop_config(
    platform: str | None = None,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Path | None:
    """The Claude Desktop configuration file, when one exists on this machine."""
    path = claude_desktop_config_path(platform, home, environ)
    return path if path.is_file() else None


def read_claude_desktop_servers(path: Path) -> dict[str, Any]:
    """The `mcpServers` object of a Claude Desktop file, checked entry by entry.

    Raises McpConfigError when the file is not JSON or an entry is unusable, naming the file.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(f"cannot read {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                             f"column {exc.colno}") from exc
    servers: Any = data.get("mcpServers", {}) if isinstance(data, Mapping) else None
    parse_mcp_servers(servers, where=f"{path.name}: mcpServers")
    return dict(servers)


@dataclass(frozen=True)
class ImportPlan:
    """What importing would do: the merged object, and what was added or left alone."""

    merged: dict[str, Any]
    added: tuple[str, ...]
    unchanged: tuple[str, ...]
    """Names already present with the same definition."""
    conflicts: tuple[str, ...]
    """Names already present with a different definition: the user's entry is kept."""


def plan_import(current: Mapping[str, Any], imported: Mapping[str, Any]) -> ImportPlan:
    """Merge imported servers into the current `mcpServers` without overwriting any entry."""
    merged = dict(current)
    added, unchanged, conflicts = [], [], []
    for name, entry in imported.items():
        if name not in current:
            merged[name] = entry
            added.append(name)
        elif current[name] == entry:
            unchanged.append(name)
        else:
            conflicts.append(name)
    return ImportPlan(merged, tuple(added), tuple(unchanged), tuple(conflicts))
