"""The data that crosses the dispatch boundary: ToolSpec, ToolCall, ToolResult.

A tool is defined once, as a ToolSpec. The registry, the dispatcher, the approval policy,
the timeline and the executor all read the same spec; there is no second list of schemas
and no second map of handlers.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel.events import Risk
from kernel.tools.errors import ErrorCode, ToolError
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.transaction.changeset import ChangeSet
from kernel.transaction.checkpoints import Checkpoints

__all__ = ["ErrorCode", "Risk", "ToolError"]
"""Defined in kernel.tools.errors and (Risk, which events carry) kernel.events; used with the
rest here."""

DEFAULT_OUTPUT_LIMIT = 30_000
DEFAULT_TIMEOUT_S = 120.0


Content = str | tuple[Mapping[str, Any], ...]
"""A result's content: plain text, or Anthropic content blocks (text, image, ...)."""


@dataclass(frozen=True)
class ToolCall:
    """One tool_use block from the model. `input` is untrusted until validated."""

    call_id: str
    name: str
    input: Any
    parent_id: str = ""
    """Set for a step of a composite call or a fallback of a call: that call's id (the
    model made only the parent call; Reins made this one for it)."""


@dataclass(frozen=True)
class ToolResult:
    """How every call ends, success or failure. Never an exception."""

    call_id: str
    content: Content
    is_error: bool = False
    error_code: ErrorCode | None = None
    duration_ms: float = 0.0
    output_bytes: int = 0
    externalized_path: str | None = None
    changes: ChangeSet | None = None
    """What the call changed in the workspace, applied (one undoable checkpoint step)."""

    @property
    def text(self) -> str:
        """The content as plain text (text blocks joined; other blocks named)."""
        if isinstance(self.content, str):
            return self.content
        parts = []
        for block in self.content:
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            else:
                parts.append(f"[{block.get('type', 'block')}]")
        return "\n".join(parts)


@dataclass(frozen=True)
class Progress:
    """A running call's progress, for the timeline (emitted, never returned)."""

    call_id: str
    bytes_so_far: int = 0
    last_line: str = ""
    elapsed_s: float = 0.0
    output_path: str = ""
    """Where the call's whole output is being written, if to a file (what the timeline's
    Open full output follows while it runs)."""


@dataclass(frozen=True)
class ToolContext:
    """Per-call facts a handler may ask for by annotating a parameter with ToolContext."""

    session_id: str
    call_id: str
    workspace: Path
    path_policy: PathPolicy
    outputs: OutputStore
    progress: Callable[[Progress], None] = field(default=lambda _p: None)
    network: bool = False
    """True only when the user allowed network access for this call or session."""
    user_approved: bool = False
    """True only when the user explicitly approved this very call (a click or CLI flag)."""
    review: Callable[[Review], Awaitable[bool]] = field(default=lambda _r: _kept_nothing())
    """Ask the user whether to keep changes held for them (kernel.transaction.judge): True
    when they kept them. Without a gate that can ask, nothing held is kept (fail closed)."""
    review_all: bool = False
    """The user chose Run and review for this call: every change it makes is held and
    shown (through `review`), and nothing is applied unless they keep it."""
    write_rule: Callable[[Path], WriteRule | None] = field(default=lambda _p: None)
    """The user's deny or ask rule for writing a path (an absolute path in the workspace),
    applied to what a command changed as to the file tools' writes (PolicyGate.write_rule)."""
    checkpoints: Checkpoints | None = None
    """Where what a call changes in the workspace is kept, to undo it (kernel.transaction)."""
    stop: threading.Event = field(default_factory=threading.Event)
    """Set when the call is stopped: its time limit passed, or the user or the run
    cancelled it. A sync handler runs in a thread nobody can kill, so its loops call
    `check_stop()` and its thread ends instead of working on for a result nobody reads."""

    def check_stop(self) -> None:
        """Raise ToolStopped once the call has been stopped (cheap: call it in loops)."""
        if self.stop.is_set():
            raise ToolStopped(f"the call {self.call_id} was stopped")


@dataclass(frozen=True)
class WriteRule:
    """A rule of the user's that names a path a call wrote."""

    verdict: str
    """"deny": the change is not applied; "ask": it is held for the user."""
    rule: str
    """The rule as written in settings.json."""


@dataclass(frozen=True)
class Review:
    """Changes a call made that are held until the user keeps or discards them."""

    reason: str
    """Why they are held, in a sentence."""
    preview: str
    """What they are: every changed path with its kind and size, then a diff cut at its
    line cap (a secret's content is never shown)."""
    full_preview: str = ""
    """A file with the whole listing and diff, when `preview`'s diff is cut ('' if not)."""


async def _kept_nothing() -> bool:
    return False


class ToolStopped(Exception):
    """A sync handler noticed (`ToolContext.check_stop`) that its call was stopped."""


Handler = Callable[..., Any] | Callable[..., Awaitable[Any]]


def _default_summary(args: Mapping[str, Any]) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return text if len(text) <= 80 else text[:79] + "…"


@dataclass(frozen=True)
class ToolSpec:
    """Everything about one tool. Built by `@tool` or by hand, registered once."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    handler: Handler
    risk: Risk = Risk.READ
    concurrent_safe: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = 0
    output_limit: int = DEFAULT_OUTPUT_LIMIT
    summarize: Callable[[Mapping[str, Any]], str] = _default_summary
    path_params: tuple[str, ...] = ()
    """Names of arguments that are filesystem paths: the policy checks them before a call."""
    origin: str = "builtin"
    """Where the tool comes from: "builtin", or "mcp:<server>"."""
    annotations: Mapping[str, Any] = field(default_factory=dict)
    """Free-form facts for display (e.g. MCP hints); never trusted for decisions."""

    @property
    def shown_risk(self) -> Risk:
        """The risk shown to a person: an MCP server's readOnly/destructive hint (display
        only; decisions use `risk`), the spec's own risk otherwise."""
        shown = self.annotations.get("display_risk") if self.origin.startswith("mcp:") else None
        return next((risk for risk in Risk if risk.value == shown), self.risk)
