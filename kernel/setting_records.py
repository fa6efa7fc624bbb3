"""The records of a change to settings.json and of a problem with it, and the names of its
permission lists.

The protocol carries them (kernel.protocol re-exports them) and the settings owner
(kernel.policy.settings) makes and reads them; a module of its own so that loading the
settings does not load the whole protocol (`reins doctor`, `reins exec`'s start-up).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, Literal

RuleList = Literal["allow", "ask", "deny"]
RULE_LISTS: tuple[RuleList, ...] = typing.get_args(RuleList)
"""settings.json's `permissions` lists (kernel.policy.settings, the settings dialog)."""

DEFAULT_TOOL_SEARCH_THRESHOLD = 40
"""The `tool_search_threshold` setting when it is not set: with more tools on offer,
kernel.tools.find_tools searches the rest (here so that loading the settings does not load
the tools)."""

DEFAULT_CHECKPOINT_BYTES = 1 << 30
"""The `checkpoints.max_bytes` setting when it is not set: 1 GiB of kept bytes for undo
(kernel.transaction.checkpoints; here so that loading the settings does not load SQLite)."""


@dataclass(frozen=True)
class SettingChange:
    """One change of settings.json: the key's path (("model",), ("permissions", "allow"),
    ("mcpServers", "git")) and its new value, or `remove` to drop the key."""

    path: tuple[str, ...]
    value: Any = None
    remove: bool = False


@dataclass(frozen=True)
class SettingsProblem:
    """Why settings.json, or a change to it, cannot be used: the key and what is wrong."""

    path: tuple[str, ...]
    message: str
    line: int = 0
    """The line in settings.json as it is on disk; 0 for a change that was not written."""
