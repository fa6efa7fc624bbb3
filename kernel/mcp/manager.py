"""All configured MCP servers: started together, watched, restarted, their tools registered.

`start()` launches every enabled server in its own supervising task and returns at once:
a slow or broken server delays nobody. Each server goes `starting` → `ready` (its tools are
in THE registry) or `failed` (the error and the last lines of its stderr are kept). A server
that exits is marked failed, its tools stay registered, and it is restarted with exponential
backoff; after `max_failures` failures in a row it stays failed until the user restarts it.
A call to a server that is down waits for its planned restart when that comes within the
call's `tool_timeout_s`, else it fails at once; either way its `execution_error` result says
whether the server was already gone before the call or died during it. A call may go
`tool_timeout_s` without an answer or a progress notification (each one starts that time
again); then it is cancelled (`timeout`). A
`tools/list_changed` notification re-registers that server's tools. Nothing a server does
ever raises out of the manager.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import mcp_types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from kernel.events import ServerStatus as ServerStatus  # defined with the events; used here
from kernel.mcp.asks import ServerAsks
from kernel.mcp.client import (
    PING_INTERVAL_S,
    CallTimedOut,
    McpConnection,
    ServerExited,
    ServerFailed,
    ServerUnavailable,
)
from kernel.mcp.config import McpServerConfig
from kernel.mcp.definitions import ToolDefinitions
from kernel.mcp.fingerprint import spec_fingerprint
from kernel.mcp.launch import LaunchBuilder, ServerLaunch
from kernel.mcp.naming import check_collision, describe_origin, sanitize
from kernel.mcp.stdio import EXIT_GRACE_S, KILL_GRACE_S, tail_lines
from kernel.mcp.tools import McpCall, origin_of, to_spec
from kernel.sandbox.guard import WorkspaceGuards
from kernel.sandbox.refusal import CommandRefused
from kernel.sandbox.revert import describe
from kernel.sandbox.workspace_gate import GateError
from kernel.tools.registry import RegistrationError, ToolRegistry
from kernel.tools.spec import ErrorCode, ToolError, ToolSpec

log = logging.getLogger(__name__)

T = TypeVar("T")
STABLE_AFTER_S = 60.0
"""A server that stayed ready this long starts its failure count from zero again."""
_STOP_WAIT_S = EXIT_GRACE_S + 2 * KILL_GRACE_S + 1.0


@dataclass(frozen=True)
class ServerState:
    """What settings show for one server."""

    name: str
    status: ServerStatus
    target: str
    """The command line or URL."""
    tools: tuple[str, ...] = ()
    """Registered tool names."""
    skipped: tuple[str, ...] = ()
    """One message per tool that was not registered (invalid schema, name collision)."""
    error: str = ""
    stderr_tail: tuple[str, ...] = ()
    failures: int = 0
    """Failures in a row (reset when the server stays up for STABLE_AFTER_S)."""
    retry_in_s: float | None = None
    """Seconds until the next automatic restart; None when none is planned."""
    pid: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able fields (for the UI protocol), with the one-line summary."""
        return {"name": self.name, "status": self.status.value, "summary": self.summary,
                "target": self.target, "tools": list(self.tools), "skipped": list(self.skipped),
                "error": self.error, "stderr_tail": list(self.stderr_tail),
                "failures": self.failures, "retry_in_s": self.retry_in_s, "pid": self.pid}

    @property
    def summary(self) -> str:
        """One line: "ready with 3 tools", "failed: …", "starting", "disabled"."""
        if self.status is ServerStatus.READY:
            count = len(self.tools)
            skipped = f" ({len(self.skipped)} skipped)" if self.skipped else ""
            return f"ready with {count} tool{'s' if count != 1 else ''}{skipped}"
        if self.status is ServerStatus.FAILED:
            retry = f"; retrying in {self.retry_in_s:g} s" if self.retry_in_s is not None else ""
            return f"failed: {self.error}{retry}"
        return self.status.value


@dataclass(frozen=True)
class Backoff:
    """Delay before restart attempt n (1-based): base · 2^(n-1), at most `cap`."""

    base_s: float = 1.0
    cap_s: float = 60.0
    max_failures: int = 6

    def delay(self, failures: int) -> float:
        return min(self.cap_s, self.base_s * 2.0 ** max(0, failures - 1))


StateListener = Callable[[ServerState], None]


def restart_wait(status: ServerStatus, retry_at: float | None, now: float, deadline: float,
                 timeout_s: float) -> str | None:
    """Whether a call to a server that is not ready waits: None to wait, else why not.

    A server starting waits (until the call's deadline); one that failed waits when its
    restart is planned before the deadline; a disabled one, one that is not restarted any
    more, or one whose restart comes too late does not wait at all."""
    if status is ServerStatus.DISABLED:
        return "it is disabled in settings"
    if now >= deadline:
        return f"it did not come back within this call's {timeout_s:g} s timeout"
    if status is ServerStatus.FAILED:
        if retry_at is None:
            return "it is not restarted automatically any more"
        if retry_at > deadline:
            return (f"its restart in {retry_at - now:.0f} s comes after this call's "
                    f"{timeout_s:g} s timeout")
    return None


@dataclass
class _Slot:
    config: McpServerConfig
    state: ServerState
    definitions: ToolDefinitions
    task: asyncio.Task[None] | None = None
    connection: McpConnection | None = None
    stopping: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    retry_at: float | None = None
    """When (time.monotonic()) the planned restart starts; None when none is planned."""


class McpManager:
    """The configured servers of one kernel; their tools live in the kernel's registry."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        launch_for: LaunchBuilder,
        logs_dir: Path,
        backoff: Backoff | None = None,
        on_state: StateListener | None = None,
        ping_interval_s: float = PING_INTERVAL_S,
        asks: ServerAsks | None = None,
        guards: WorkspaceGuards | None = None,
    ) -> None:
        self.registry = registry
        self.guards = guards
        """Undo, after each call of a sandboxed server with a workspace (`cwd`), what it made
        there that git, a shell or an editor would run (kernel.sandbox.guard)."""
        self.ping_interval_s = ping_interval_s
        self.launch_for = launch_for
        self.logs_dir = logs_dir
        self.asks = asks or ServerAsks()
        """How every server's requests are answered (roots, elicitation, sampling)."""
        self.resources_tool: ToolSpec | None = None
        """Registered while a ready server declares resources (kernel.mcp.resources)."""
        self.backoff = backoff or Backoff()
        self.on_state = on_state
        self._slots: dict[str, _Slot] = {}
        self._changed = asyncio.Event()

    # -- public ----------------------------------------------------------------------------

    async def start(self, configs: Sequence[McpServerConfig]) -> None:
        """Launch every enabled server concurrently; returns without waiting for any."""
        for config in configs:
            if config.name in self._slots:
                await self._stop_slot(self._slots[config.name], unregister=True)
            slot = _Slot(config, self._initial_state(config), ToolDefinitions(config.name))
            self._slots[config.name] = slot
            self._publish(slot)
            if config.enabled:
                self._launch(slot)

    async def apply(self, configs: Sequence[McpServerConfig]) -> None:
        """Bring the running set in line with new settings: removed servers stop, new or
        changed ones (re)start, unchanged ones are left alone."""
        wanted = {c.name: c for c in configs}
        for name in [n for n in self._slots if n not in wanted]:
            await self._stop_slot(self._slots.pop(name), unregister=True)
        await self.start([c for c in configs if self._slots.get(c.name) is None
                          or self._slots[c.name].config != c])

    def connection(self, name: str) -> McpConnection | None:
        """The current connection of a server (None before its first start)."""
        return self._slot(name).connection

    def states(self) -> tuple[ServerState, ...]:
        return tuple(slot.state for slot in self._slots.values())

    def state(self, name: str) -> ServerState:
        return self._slot(name).state

    async def wait_settled(self, timeout_s: float | None = None) -> tuple[ServerState, ...]:
        """Wait until no server is `starting` (each is ready, failed or disabled)."""
        await self._wait_until(lambda: all(s.state.status is not ServerStatus.STARTING
                                           for s in self._slots.values()), timeout_s)
        return self.states()

    async def wait_for(self, name: str, predicate: Callable[[ServerState], bool],
                       timeout_s: float | None = None) -> ServerState:
        """Wait until the state of `name` satisfies `predicate`."""
        await self._wait_until(lambda: predicate(self._slot(name).state), timeout_s)
        return self._slot(name).state

    async def _wait_until(self, condition: Callable[[], bool], timeout_s: float | None) -> None:
        async with asyncio.timeout(timeout_s):
            while not condition():
                await self._changed.wait()

    async def enable(self, name: str) -> None:
        slot = self._slot(name)
        slot.config = replace(slot.config, enabled=True)
        if slot.task is None:
            self._launch(slot)

    async def disable(self, name: str) -> None:
        """Stop the server and remove its tools; it stays configured."""
        slot = self._slot(name)
        slot.config = replace(slot.config, enabled=False)
        await self._stop_slot(slot, unregister=True)
        self._set(slot, status=ServerStatus.DISABLED, error="", retry_in_s=None, pid=None,
                  failures=0, tools=(), skipped=())

    async def restart(self, name: str) -> None:
        """Stop (if running) and start again now, with a fresh failure count."""
        slot = self._slot(name)
        slot.config = replace(slot.config, enabled=True)
        await self._stop_slot(slot, unregister=False)
        self._set(slot, failures=0)
        self._launch(slot)

    async def set_roots(self, roots: Sequence[Path]) -> None:
        """The folders servers may work in (the session's workspace); every live server is
        told they changed."""
        self.asks.roots = tuple(roots)
        await asyncio.gather(*(s.connection.roots_changed() for s in self._slots.values()
                               if s.connection is not None))

    async def aclose(self, grace_s: float | None = None) -> None:
        """Stop every server (each process group ends) and remove their tools; each stdio
        server gets at most `grace_s` to exit by itself before its group is terminated."""
        await asyncio.gather(*(self._stop_slot(s, unregister=True, grace_s=grace_s)
                               for s in self._slots.values()))
        if self.guards is not None:
            self.guards.close()

    # -- supervision -------------------------------------------------------------------------

    def _initial_state(self, config: McpServerConfig) -> ServerState:
        status = ServerStatus.STARTING if config.enabled else ServerStatus.DISABLED
        return ServerState(config.name, status, config.describe())

    def _slot(self, name: str) -> _Slot:
        try:
            return self._slots[name]
        except KeyError:
            raise KeyError(f"no MCP server named {name!r} is configured") from None

    def _launch(self, slot: _Slot) -> None:
        slot.stopping = False
        slot.wake = asyncio.Event()
        slot.retry_at = None
        self._set(slot, status=ServerStatus.STARTING, retry_in_s=None)
        slot.task = asyncio.create_task(self._supervise(slot), name=f"mcp:{slot.config.name}")

    async def _stop_slot(self, slot: _Slot, *, unregister: bool,
                         grace_s: float | None = None) -> None:
        slot.stopping = True
        slot.wake.set()
        task, slot.task = slot.task, None
        if slot.connection is not None:
            slot.connection.stop(grace_s)
        if task is not None:
            done, _ = await asyncio.wait({task}, timeout=_STOP_WAIT_S)
            if not done:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if unregister:
            self._sync_tools(slot, {}, ())

    async def _supervise(self, slot: _Slot) -> None:
        name = slot.config.name
        stderr_path = self.logs_dir / f"{sanitize(name)}.stderr.log"
        failures = slot.state.failures
        while not slot.stopping:
            launch: ServerLaunch | None = None
            error = ""
            if slot.config.transport == "stdio":
                try:
                    launch = await self.launch_for(slot.config)
                except Exception as exc:  # it cannot be started safely: fail closed
                    error = f"cannot prepare the server's start: {exc}"
            if not error:
                connection = McpConnection(
                    slot.config, launch=launch, stderr_path=stderr_path,
                    ping_interval_s=self.ping_interval_s, definitions=slot.definitions,
                    asks=self.asks)
                slot.connection = connection
                slot.retry_at = None
                self._set(slot, status=ServerStatus.STARTING, error="", retry_in_s=None)
                started = time.monotonic()
                ready_at: list[float] = []
                error = await self._serve(slot, connection, ready_at)
                if slot.stopping:
                    break
                if ready_at and time.monotonic() - ready_at[0] >= STABLE_AFTER_S:
                    failures = 0
                log.info("MCP server %s failed after %.1f s: %s", name,
                         time.monotonic() - started, error)
            failures += 1
            tail = tail_lines(stderr_path)
            if failures >= self.backoff.max_failures:
                slot.retry_at = None
                self._set(slot, status=ServerStatus.FAILED, failures=failures, retry_in_s=None,
                          error=f"{error} (gave up after {failures} failures in a row; "
                                f"restart it from settings)", stderr_tail=tail, pid=None)
                await slot.wake.wait()
                break
            delay = self.backoff.delay(failures)
            slot.retry_at = time.monotonic() + delay
            self._set(slot, status=ServerStatus.FAILED, error=error, stderr_tail=tail,
                      failures=failures, retry_in_s=delay, pid=None)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await slot.wake.wait()

    async def _serve(self, slot: _Slot, connection: McpConnection,
                     ready_at: list[float]) -> str:
        """Run one connection; the error text when it ends other than by a stop."""

        async def on_tools(tools: tuple[mcp_types.Tool, ...]) -> None:
            if not ready_at:
                ready_at.append(time.monotonic())
            self._register(slot, tools)

        try:
            await connection.serve(on_tools)
        except ServerFailed as exc:
            return str(exc)
        except Exception as exc:  # anything else a server can cause: still just a failure
            log.exception("MCP server %s: unexpected failure", slot.config.name)
            return f"{type(exc).__name__}: {exc}"
        return "the server closed the session"

    # -- tools -------------------------------------------------------------------------------

    def _register(self, slot: _Slot, tools: tuple[mcp_types.Tool, ...]) -> None:
        server = slot.config.name
        specs: dict[str, ToolSpec] = {}
        skipped: list[str] = []
        for tool in tools:
            spec = to_spec(server, tool, self._caller(server), slot.definitions,
                           tool_timeout_s=slot.config.tool_timeout_s)
            if spec.name in specs:
                first = specs[spec.name].annotations["mcp_tool"]
                skipped.append(
                    f"tool name {spec.name!r} collides: {describe_origin(origin_of(server), first)}"
                    f" and {describe_origin(origin_of(server), tool.name)} both map to it; "
                    f"only the first is registered")
                continue
            specs[spec.name] = spec
        self._sync_tools(slot, specs, tuple(skipped))
        connection = slot.connection
        self._set(slot, status=ServerStatus.READY, error="", retry_in_s=None,
                  pid=connection.pid if connection else None, stderr_tail=())

    def _sync_tools(self, slot: _Slot, specs: Mapping[str, ToolSpec],
                    skipped: tuple[str, ...]) -> None:
        """Make the registry hold exactly `specs` for this server (unchanged tools stay)."""
        origin = origin_of(slot.config.name)
        problems = list(skipped)
        for name in slot.state.tools:
            current = self.registry.get(name)
            new = specs.get(name)
            if current is None or current.origin != origin:
                continue
            if new is None or spec_fingerprint(new) != spec_fingerprint(current):
                self.registry.unregister(name)
        registered: list[str] = []
        for name, spec in specs.items():
            current = self.registry.get(name)
            if current is not None and current.origin == origin:
                registered.append(name)
                continue
            try:
                if current is not None:
                    check_collision(
                        name,
                        describe_origin(origin, spec.annotations["mcp_tool"]),
                        describe_origin(current.origin,
                                        current.annotations.get("mcp_tool", current.name)),
                    )
                self.registry.register(spec)
            except (RegistrationError, ValueError) as exc:
                problems.append(f"{spec.annotations['mcp_tool']}: {exc}")
                continue
            registered.append(name)
        for problem in problems:
            log.warning("MCP server %s: tool skipped: %s", slot.config.name, problem)
        self._set(slot, tools=tuple(registered), skipped=tuple(problems))

    def _caller(self, server: str) -> McpCall:
        async def call(tool: str, arguments: dict[str, Any], progress: ProgressFnT | None,
                       fingerprint: str) -> mcp_types.CallToolResult:
            return await self._call(server, tool, arguments, progress, fingerprint)

        return call

    async def _call(self, server: str, tool: str, arguments: dict[str, Any],
                    progress: ProgressFnT | None, fingerprint: str) -> mcp_types.CallToolResult:
        """Run `tool` on the server if its definition now is still `fingerprint`, the one
        the call was approved for (a re-listing under way is waited for first)."""
        slot = self._configured(server, repr(tool))

        async def approved_as_it_is() -> None:
            await slot.definitions.settled(slot.config.startup_timeout_s)
            current = slot.definitions.current(tool)
            if current.fingerprint != fingerprint:
                why = current.why_unknown or (f"the MCP server {server!r} changed {tool!r} "
                                              f"after this call was approved")
                raise ToolError(f"{why}, so {tool!r} was not run.",
                                hint="Call it again if it is still wanted: the user is asked "
                                     "about the tool as it is now.")

        async def send(connection: McpConnection, timeout_s: float
                       ) -> mcp_types.CallToolResult:
            gate = connection.workspace_gate
            if gate is None:
                return await connection.call(tool, arguments, progress, timeout_s=timeout_s)
            try:
                async with gate.writable():
                    return await connection.call(tool, arguments, progress,
                                                 timeout_s=timeout_s)
            except GateError as exc:
                raise ToolError(f"The MCP server {server!r}, called for {tool!r}: {exc}.",
                                code=ErrorCode.PERMISSION_DENIED,
                                hint="Tell the user what failed; Reins restarts a server it "
                                     "stopped.") from exc

        def request() -> Awaitable[mcp_types.CallToolResult]:
            return self._request(slot, repr(tool), send, approved_as_it_is)

        if self.guards is None or not slot.config.sandbox or not slot.config.cwd:
            return await request()
        return await _guarded(self.guards, Path(os.path.realpath(slot.config.cwd)),
                              f"mcp-{sanitize(server)}", request)

    async def request(self, server: str, what: str,
                      send: Callable[[McpConnection, float], Awaitable[T]]) -> T:
        """`send(connection, timeout_s)` to the server (a resource read, a prompt), with the
        same waiting for a restart and the same errors (ToolError) as a tool call; `what`
        names it in messages ("the resource 'x://y'")."""
        return await self._request(self._configured(server, what), what, send, None)

    def live_servers(self) -> tuple[tuple[str, mcp_types.ServerCapabilities], ...]:
        """The ready servers with what each declared."""
        out = []
        for name, slot in self._slots.items():
            capabilities = slot.connection.capabilities if slot.connection else None
            if slot.state.status is ServerStatus.READY and capabilities is not None:
                out.append((name, capabilities))
        return tuple(out)

    def _configured(self, server: str, what: str) -> _Slot:
        slot = self._slots.get(server)
        if slot is None:
            raise ToolError(f"The MCP server {server!r} is not configured, so {what} was not "
                            f"run.", hint="Tell the user to check the server in settings.")
        return slot

    async def _request(self, slot: _Slot, what: str,
                       send: Callable[[McpConnection, float], Awaitable[T]],
                       check: Callable[[], Awaitable[None]] | None) -> T:
        """Send once the server is live (waiting for a restart within the timeout) and
        `check` passed; every failure as a ToolError that says what happened when."""
        server = slot.config.name
        timeout_s = slot.config.tool_timeout_s
        deadline = time.monotonic() + timeout_s
        while True:
            connection = await self._live_connection(slot, what, timeout_s, deadline)
            if check is not None:
                await check()
            try:
                return await send(connection, timeout_s)
            except ServerUnavailable:
                continue  # it had ended before the call (not noticed yet): wait for it
            except ServerExited as exc:
                raise ToolError(
                    f"The MCP server {server!r} stopped while running {what}: it was "
                    f"running when the call started and died during it ({exc}). The call may "
                    f"have had partial effects.",
                    hint="Reins restarts the server; check the state before calling it again."
                ) from exc
            except CallTimedOut as exc:
                raise ToolError(
                    f"The MCP server {server!r} did not finish {what}: {exc} (its "
                    f"\"tool_timeout_s\" is {timeout_s:g} s), so the call was cancelled; it "
                    f"may have had partial effects.", code=ErrorCode.TIMEOUT,
                    hint="Try a smaller request; if the tool is known to be slow, the user "
                         "can raise tool_timeout_s in its mcpServers entry.") from exc
            except MCPError as exc:
                raise ToolError(
                    f"The MCP server {server!r} refused the call to {what}: "
                    f"{exc.error.message} (MCP error {exc.error.code})") from exc

    async def _live_connection(self, slot: _Slot, what: str, timeout_s: float,
                               deadline: float) -> McpConnection:
        """The server's live connection; a server that is starting, or down with a restart
        planned before `deadline`, is waited for (ToolError when it does not come back)."""
        while True:
            connection = slot.connection
            if (slot.state.status is ServerStatus.READY and connection is not None
                    and connection.ready):
                return connection
            now = time.monotonic()
            reason = restart_wait(slot.state.status, slot.retry_at, now, deadline, timeout_s)
            if reason is not None:
                raise ToolError(
                    f"The MCP server {slot.config.name!r} is not available: it was already "
                    f"gone before this call ({slot.state.summary}); {reason}, so {what} was "
                    f"not run.", hint="Try again later, or tell the user to check the server "
                                      "in settings.")
            changed = self._changed
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(deadline - now):
                    await changed.wait()

    def _sync_resources_tool(self) -> None:
        tool = self.resources_tool
        if tool is None:
            return
        wanted = any(caps.resources is not None for _, caps in self.live_servers())
        current = self.registry.get(tool.name)
        if wanted and current is None:
            self.registry.register(tool)
        elif not wanted and current is tool:
            self.registry.unregister(tool.name)

    # -- state ---------------------------------------------------------------------------------

    def _set(self, slot: _Slot, **changes: Any) -> None:
        slot.state = replace(slot.state, **changes)
        self._publish(slot)

    def _publish(self, slot: _Slot) -> None:
        self._sync_resources_tool()
        if self.on_state is not None:
            try:
                self.on_state(slot.state)
            except Exception:
                log.exception("MCP state listener failed")
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()


async def _guarded(guards: WorkspaceGuards, workspace: Path, label: str,
                   request: Callable[[], Awaitable[mcp_types.CallToolResult]]
                   ) -> mcp_types.CallToolResult:
    """`request()`, then what it made anew among the workspace's protected entries undone
    (also when the call fails); the result says what was undone. The server can write its
    workspace only while a call is in flight (kernel.sandbox.workspace_gate, through its
    connection), so the marks read fresh before the call hold nothing of its own."""
    try:
        before = await guards.marks(workspace)
    except CommandRefused as exc:
        raise ToolError(exc.message, hint=exc.hint, code=ErrorCode.PERMISSION_DENIED) from exc
    try:
        result = await request()
    finally:
        reverted = await asyncio.shield(guards.undo(workspace, before, label))
    lines = describe(reverted, "the server")
    if not lines:
        return result
    note = mcp_types.TextContent(type="text", text="\n".join(lines))
    return result.model_copy(update={"content": [*result.content, note]})
