"""What the loop hands a gate factory to build one session's gate for one run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kernel.events import Event
from kernel.tools.pathpolicy import PathPolicy


@dataclass(frozen=True)
class GateContext:
    """One run of one session, as its gate needs to know it."""

    session_id: str
    mode: str
    """The session's stored permission mode."""
    path_policy: PathPolicy
    emit: Callable[[Event], None]
    """Commit an event to the store, then report it (approval_request, approval_decision)."""
    report: Callable[[Event], None]
    """Report an event without storing it again (a pending request shown after a restart)."""
    history: Sequence[Event]
    """The session's stored events, oldest first."""
