"""How the desktop writes facts in words: durations and sizes in one format everywhere (chat,
timeline, details, the activity indicator), counts with their noun, and a tool call's outcome
as a person says it ("exit code 3", "denied by you", "stopped"), not as error codes. Pure."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernel.events import CallStatus

_EXIT_CODE = re.compile(r"exit code (-?\d+|none)")
STATUS_WORDS: Mapping[CallStatus, str] = {
    "queued": "queued",
    "awaiting_approval": "awaiting approval",
    "running": "running",
    "ok": "done",
    "error": "error",
    "denied": "denied",
    "timeout": "timed out",
    "stopped": "stopped",
}
"""A call's status (the kernel's, `kernel.events.call_status`) as the chat and the timeline
say it."""

_OUTCOMES = {
    "approval_denied": "denied by you",
    "permission_denied": "not allowed by the rules",
    "approval_unavailable": "no answer to the approval",
    "cancelled": "stopped",
    "timeout": "timed out",
    "unknown_tool": "unknown tool",
    "invalid_arguments": "invalid arguments",
    "loop_detected": "stopped: repeated call",
    "rate_limited": "rate limited",
    "sandbox_unavailable": "sandbox unavailable",
}


def format_duration(seconds: float) -> str:
    """Under a second in milliseconds (`30 ms`), then `20.5 s`, `3 min 05 s`, `2 h 03 min`."""
    seconds = max(0.0, seconds)
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def format_bytes(n: int) -> str:
    """`512 B`, `1.5 KB`, `21.8 MB` (powers of 1024)."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value / 1024:.1f} TB"


_DECISIONS = {
    "allow_once": "allowed once", "allow_session": "allowed for this session",
    "allow_always": "allowed always (a rule in settings)", "allow": "allowed",
    "allow_review": "run, its changes shown to you before any was applied",
    "deny": "denied", "unavailable": "no answer (approval unavailable)",
}
_DECIDERS = {
    "ui": "you, in the app", "terminal": "you, in the terminal",
    "cli": "the --approve flag", "user": "you", "policy": "the rules and the mode",
}
_SCOPES = {"once": "this call", "call": "this call", "session": "this session",
           "always": "every session"}


def decision_words(decision: str) -> str:
    """An approval decision (kernel.events.Decided) as a person says it."""
    return _DECISIONS.get(decision, decision)


def decider_words(decided_by: str) -> str:
    """Who decided: the approval channel that carried a person's answer, or the rules; a
    suspended grant says so in its own words."""
    return _DECIDERS.get(decided_by, decided_by)


def scope_words(scope: str) -> str:
    """What a decision covers (kernel.events.DecisionScope)."""
    return _SCOPES.get(scope, scope)


def count(n: int, noun: str) -> str:
    """`1 call`, `2 calls`, `0 calls`, `1,204 lines`."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def outcome(is_error: bool, error_code: str | None, preview: str = "") -> str:
    """A finished call's outcome in words. A failed command says its exit code (the result
    the model got starts with it); other failures say what happened."""
    if not is_error:
        return "done"
    code = error_code or ""
    if code in _OUTCOMES:
        return _OUTCOMES[code]
    found = _EXIT_CODE.match(preview)
    if found is not None:
        return "never ended" if found.group(1) == "none" else f"exit code {found.group(1)}"
    return "failed"


def arguments_json(value: Any) -> str:
    """A call's arguments as indented JSON (anything not JSON-able is shown by its repr)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=repr)


def execution_seconds(duration_ms: float, waited_s: float) -> float:
    """How long a call ran: the kernel's duration counts from the call's start, so time spent
    waiting for the user's approval is taken out (and shown on its own)."""
    return max(0.0, duration_ms / 1000 - waited_s)


def _thousands(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:g}M"
    return f"{n / 1000:.0f}k" if n >= 1000 else str(n)


def _context_percent(tokens: int, window: int) -> str:
    share = tokens / window * 100
    return "<1%" if 0 < share < 1 else f"{min(share, 999):.0f}%"


def context_use(tokens: int, window: int) -> str:
    """How full the context window was at the last request: `context 21% of 200k`."""
    if window <= 0:
        return ""
    return f"context {_context_percent(tokens, window)} of {_thousands(window)}"


def usage_forms(input_tokens: int, output_tokens: int, cost: float,
                context: tuple[int, int] = (0, 0)) -> tuple[str, ...]:
    """A session's tokens, cost and context use, whole first, then shorter forms for a
    narrow status bar (the cost and the context's share last to go); () before any use."""
    if not (input_tokens or output_tokens):
        return ()
    tokens, price = f"{input_tokens:,} in / {output_tokens:,} out", f"${cost:.4f}"
    full = f"Tokens: {tokens} · {price}"
    if context[1] <= 0:
        return full, f"{tokens} · {price}", price
    share = f"context {_context_percent(*context)}"
    return (f"{full} · {context_use(*context)}", f"{tokens} · {price} · {share}",
            f"{price} · {share}", price)


def sandbox_forms(kind: str, reason: str) -> tuple[str, ...]:
    """The sandbox's state, whole first, then shorter; a missing sandbox is never dropped
    (its last form says so), a working one may be ("")."""
    if kind == "bwrap":
        return "Sandbox: bwrap", "bwrap", ""
    return (f"Sandbox: none — {reason}" if reason else "Sandbox: none", "Sandbox: none",
            "No sandbox")


def approvals_forms(pending: int) -> tuple[str, str]:
    """The pending-approvals button's text, then its short form."""
    return f"⚠ {count(pending, 'approval')} pending — show", f"⚠ {pending:,} pending"


MODE_ALLOWS: dict[str, str] = {
    "read-only": "Reads the workspace; changes and commands are refused",
    "ask": "Reads freely; asks before each change and each command",
    "auto-edit": "Changes files in the workspace freely; asks before commands",
    "auto": "Changes files and runs sandboxed commands freely; asks for the network",
}
"""What each mode lets run without asking, in a line (the mode picker, the empty chat);
the policy's own sentences (`kernel.policy.decide`) say the same per call."""
