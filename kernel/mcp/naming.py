"""Model-facing names of MCP tools: `mcp__<server>__<tool>`.

Characters outside `[a-zA-Z0-9_-]` become `_`; a name longer than 64 characters is cut and
ends with 8 hex digits of a hash of the full name, so two long names stay distinct. Two
different origins that still map to the same name are refused by `check_collision`.
"""

from __future__ import annotations

import hashlib
import re

PREFIX = "mcp__"
SEPARATOR = "__"
MAX_NAME = 64
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


class NameCollision(ValueError):
    """Two different tools would be shown to the model under the same name."""


def sanitize(part: str) -> str:
    """`part` with every character outside [a-zA-Z0-9_-] replaced by `_`."""
    return _UNSAFE.sub("_", part) or "_"


def server_prefix(server: str) -> str:
    """`mcp__<server>__`: every tool of that server starts with it (`mcp__git__*` grants)."""
    return f"{PREFIX}{sanitize(server)}{SEPARATOR}"


def tool_name(server: str, tool: str) -> str:
    """The registry name of `tool` on `server`, at most 64 characters."""
    name = server_prefix(server) + sanitize(tool)
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def describe_origin(origin: str, original: str) -> str:
    """`mcp:git tool 'git_status'` or `builtin tool 'read_file'`, for error messages."""
    return f"{origin} tool {original!r}"


def check_collision(name: str, new_origin: str, existing_origin: str | None) -> None:
    """Refuse `name` when it already belongs to another origin, naming both.

    `new_origin` and `existing_origin` are descriptions from `describe_origin`.
    """
    if existing_origin is not None and existing_origin != new_origin:
        raise NameCollision(
            f"tool name {name!r} collides: {new_origin} and {existing_origin} both map to it; "
            f"rename one of the servers in settings"
        )
