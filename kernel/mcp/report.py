"""How each configured server came up, as an event and as a line for a person (pure).

`reins exec` records one `mcp_server` event per configured server once they settled (each
ready, failed or disabled), so `--json` readers and the stored session see which tools the
run had and why a server's are missing; in human mode a failed server is one line on
stderr with its reason and the tail of its stderr. In the app, a run records the outcomes
its session has not seen yet (`unseen_outcomes`), so its record says which tools each run
had; the app says a failure once, in its status bar, from the servers' live states.
"""

from __future__ import annotations

from collections.abc import Iterable

from kernel.events import Event, McpServerEvent
from kernel.mcp.manager import ServerState, ServerStatus
from kernel.visible import one_line

STDERR_LINES_SHOWN = 5


def server_event(session_id: str, state: ServerState) -> McpServerEvent:
    """The event for a server's settled state (a server still starting counts as failed:
    it had no tools for the run)."""
    status = state.status
    if status is ServerStatus.READY:
        return McpServerEvent(session_id, state.name, "ready", state.summary,
                              len(state.tools), target=state.target)
    if status is ServerStatus.DISABLED:
        return McpServerEvent(session_id, state.name, "disabled", "disabled in settings",
                              target=state.target)
    reason = state.error or "it did not finish starting"
    return McpServerEvent(session_id, state.name, "failed", reason, len(state.tools),
                          list(state.stderr_tail), state.target)


def server_line(event: McpServerEvent) -> str:
    """One line (plus the stderr tail of a failed server, indented) for a terminal."""
    head = one_line(f"MCP server {event.server!r} ({event.target})" if event.target
                    else f"MCP server {event.server!r}")
    if event.state == "ready":
        return f"── {head}: {one_line(event.reason)}"
    if event.state == "disabled":
        return f"── {head}: disabled in settings"
    lines = [f"reins: {head} failed: {one_line(event.reason)}; its tools are not available"]
    tail = event.stderr_tail[-STDERR_LINES_SHOWN:]
    if tail:
        lines.append("  its stderr ended with:")
        lines += [f"  | {one_line(line)}" for line in tail]
    return "\n".join(lines)


def unseen_outcomes(session_id: str, states: Iterable[ServerState],
                    seen: Iterable[Event]) -> list[McpServerEvent]:
    """The settled servers whose outcome (state and reason) differs from the last one
    recorded in the session's events `seen`: what a run in the app records before it starts
    (a server still starting is left for a later run)."""
    last: dict[str, tuple[str, str]] = {}
    for event in seen:
        if isinstance(event, McpServerEvent):
            last[event.server] = (event.state, event.reason)
    out = []
    for state in states:
        if state.status is ServerStatus.STARTING:
            continue
        event = server_event(session_id, state)
        if last.get(event.server) != (event.state, event.reason):
            out.append(event)
    return out
