"""One live MCP session with one server, owned by one long-lived task.

`McpConnection.serve()` opens the transport (stdio or streamable HTTP), initializes the
session, lists the tools, reports them, and then waits: a `tools/list_changed` notification
re-lists and reports again; the server going away raises `ServerExited` (a stdio server's
process exits; an HTTP server is pinged while idle, since nothing else would notice it going
away before the next call); `stop()` makes
`serve()` return after closing the session and ending the server's process group. Entering
and leaving every context manager happens in that one task, so startup and shutdown are
clean and nothing leaks into other servers. Calls come from other tasks through `call()`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import mcp_types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import SessionMessage

from kernel.mcp.asks import ServerAsks, roots_result
from kernel.mcp.config import McpServerConfig
from kernel.mcp.definitions import ToolDefinitions
from kernel.mcp.failures import STARTUP_TIMEOUT_HINT, exit_hint, start_error, with_hint
from kernel.mcp.launch import ServerLaunch
from kernel.mcp.stdio import EXIT_GRACE_S, StdioChannel, open_stdio
from kernel.mcp.tools import definition_fingerprint
from kernel.sandbox.server_start import ServerStartFailed
from kernel.sandbox.workspace_gate import WorkspaceGate

log = logging.getLogger(__name__)

MAX_TOOL_PAGES = 100
PING_INTERVAL_S = 30.0
"""How long an HTTP server may stay silent while idle before Reins pings it."""
PING_TIMEOUT_S = 10.0
LIST_CHANGED = "notifications/tools/list_changed"
ToolsCallback = Callable[[tuple[mcp_types.Tool, ...]], Awaitable[None]]
T = TypeVar("T")


class ServerFailed(Exception):
    """The server could not be started, or stopped answering."""


class ServerExited(ServerFailed):
    """The server's process exited, or its connection closed, while it was in use."""


class ServerUnavailable(Exception):
    """A call to a server that has no live session."""


class CallTimedOut(Exception):
    """A call got neither its answer nor a progress notification within its timeout."""


def _client_info() -> mcp_types.Implementation:
    try:
        version = metadata.version("reins-desktop")
    except metadata.PackageNotFoundError:
        version = "dev"
    return mcp_types.Implementation(name="reins", version=version)


class McpConnection:
    """The session with one server, while `serve()` runs."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        launch: ServerLaunch | None,
        stderr_path: Path,
        ping_interval_s: float = PING_INTERVAL_S,
        definitions: ToolDefinitions | None = None,
        asks: ServerAsks | None = None,
    ) -> None:
        self.config = config
        self.asks = asks or ServerAsks()
        """How the server's own requests (roots, elicitation, sampling) are answered."""
        self.definitions = definitions or ToolDefinitions(config.name)
        """What the server lists now; suspended from its `tools/list_changed` notification
        until the re-listing is in (kernel.mcp.definitions)."""
        self.launch = launch
        """How a stdio server is started (None for an HTTP server)."""
        self.stderr_path = stderr_path
        self.startup_timeout_s = config.startup_timeout_s
        self.ping_interval_s = ping_interval_s
        self._calls = 0
        """Calls in flight: while one runs, it notices a dead server itself (no ping)."""
        self.pid: int | None = None
        self._process: Any = None
        self._channel: StdioChannel | None = None
        self._session: ClientSession | None = None
        self._closed: anyio.Event | None = None
        self._stop: anyio.Event | None = None
        self._wake: anyio.Event | None = None
        self._tools_changed = False
        self._stop_requested = False

    @property
    def session(self) -> ClientSession | None:
        """The SDK session while the server is ready (for direct use by diagnostics)."""
        return self._session if self.ready else None

    @property
    def workspace_gate(self) -> WorkspaceGate | None:
        """A sandboxed server's workspace, writable only while a call is in flight
        (kernel.sandbox.workspace_gate), once its sandbox is made; None for any other."""
        start = self.launch.start if self.launch is not None else None
        return start.gate if start is not None else None

    @property
    def ready(self) -> bool:
        """A live session that can take calls."""
        return (self._session is not None and not (self._closed and self._closed.is_set())
                and not (self._channel is not None and self._channel.exited))

    def stop(self, grace_s: float | None = None) -> None:
        """Ask `serve()` to close the session and return (safe to call at any time); a
        stdio server gets at most `grace_s` (default EXIT_GRACE_S) to exit by itself."""
        if grace_s is not None and self._channel is not None:
            self._channel.exit_grace_s = min(self._channel.exit_grace_s, grace_s)
        self._stop_requested = True
        if self._stop is not None:
            self._stop.set()

    async def serve(self, on_tools: ToolsCallback) -> None:
        """Run the session until `stop()`; `on_tools` gets every (re-)listing.

        Raises ServerFailed (start-up failed or timed out) or ServerExited (went away later).
        """
        self._stop = anyio.Event()
        if self._stop_requested:
            return
        try:
            async with self._transport() as (read, write, closed), ClientSession(
                read, write, message_handler=self._on_message, client_info=_client_info(),
                list_roots_callback=self._list_roots, elicitation_callback=self._elicit,
                sampling_callback=self._sample,
            ) as session:
                self._closed = closed
                try:
                    await self._start(session, closed, on_tools)
                    await self._wait_loop(session, closed, on_tools)
                finally:
                    self._session = None
        except BaseExceptionGroup as group:
            where = f"the server at {self.config.url}: " if self.config.transport == "http" else ""
            raise _first_leaf(group, where) from group
        except OSError as exc:
            raise ServerFailed(self._start_error(exc)) from exc
        except ServerStartFailed as exc:
            raise ServerFailed(f"the server's sandbox could not be completed: {exc}") from exc

    def _start_error(self, exc: OSError) -> str:
        """Why the program could not be executed (its first line read for a #! line)."""
        if self.launch is None:
            return f"cannot connect to {self.config.describe()!r}: {exc}"
        program = self.launch.argv[0]
        first_line: bytes | None = None
        if "/" in program:  # a bare name was not found on the PATH: nothing to read
            with contextlib.suppress(OSError), open(program, "rb") as f:
                first_line = f.readline(4096)
        cwd = self.launch.cwd
        return start_error(program, exc, search_path=self.launch.env.get("PATH", ""),
                           first_line=first_line,
                           missing_cwd=cwd if not os.path.isdir(cwd) else None)

    async def _start(self, session: ClientSession, closed: anyio.Event,
                     on_tools: ToolsCallback) -> None:
        assert self._stop is not None
        with anyio.move_on_after(self.startup_timeout_s) as scope:
            outcome = await _first_of(lambda: self._list_after_init(session), closed.wait,
                                      self._stop.wait)
        if scope.cancelled_caught:
            raise ServerFailed(with_hint(f"no answer within {self.startup_timeout_s:g} s of "
                                         f"starting", STARTUP_TIMEOUT_HINT))
        if isinstance(outcome, BaseException):
            if closed.is_set():
                raise ServerExited(await self._exit_text("before it was ready")) from outcome
            raise ServerFailed(_describe(outcome)) from outcome
        if outcome is None:
            if self._stop.is_set():
                return
            raise ServerExited(await self._exit_text("before it was ready"))
        token, tools = outcome
        self._session = session  # live before its tools are reported: a call waiting
        await self._report(token, tools, on_tools)  # for "ready" finds the session there

    async def _list_after_init(self, session: ClientSession) -> Any:
        try:
            await session.initialize()
            if self._channel is not None:
                self._channel.exit_grace_s = EXIT_GRACE_S
            token = self.definitions.listing_started()
            return token, await list_all_tools(session)
        except Exception as exc:  # surfaced as the start-up error
            return exc

    async def _report(self, token: int, tools: tuple[mcp_types.Tool, ...],
                      on_tools: ToolsCallback) -> None:
        """Hand a listing over (its tools registered), then record it as current."""
        await on_tools(tools)
        self.definitions.listed(token, {tool.name: definition_fingerprint(self.config.name, tool)
                                        for tool in tools})

    async def _wait_loop(self, session: ClientSession, closed: anyio.Event,
                         on_tools: ToolsCallback) -> None:
        assert self._stop is not None
        while not self._stop.is_set():
            if closed.is_set():
                raise ServerExited(await self._exit_text("while it was in use"))
            if self._tools_changed:
                self._tools_changed = False
                token = self.definitions.listing_started()
                outcome: Any = TimeoutError(f"no answer within {self.startup_timeout_s:g} s")
                with anyio.move_on_after(self.startup_timeout_s):
                    outcome = await _first_of(lambda: _guard(list_all_tools(session)),
                                              closed.wait, self._stop.wait)
                if isinstance(outcome, tuple):
                    await self._report(token, outcome, on_tools)
                elif isinstance(outcome, BaseException):
                    self.definitions.listing_failed()
                    log.warning("MCP server %s: re-listing its tools failed (%s); its tools "
                                "ask and are not run until it lists them again",
                                self.config.name, _describe(outcome))
                continue
            self._wake = anyio.Event()
            if self._tools_changed:
                continue
            if self.config.transport != "http":
                await _first_of(self._stop.wait, closed.wait, self._wake.wait)
                continue
            with anyio.move_on_after(self.ping_interval_s) as idle:
                await _first_of(self._stop.wait, closed.wait, self._wake.wait)
            if idle.cancelled_caught and self._calls == 0:
                await self._ping(session, closed)

    async def _ping(self, session: ClientSession, closed: anyio.Event) -> None:
        """Raise ServerExited when the server does not answer a ping in time."""
        assert self._stop is not None
        outcome: Any = TimeoutError(f"no answer within {PING_TIMEOUT_S:g} s")
        with anyio.move_on_after(PING_TIMEOUT_S):
            outcome = await _first_of(lambda: _guard(session.send_ping()), closed.wait,
                                      self._stop.wait)
        if isinstance(outcome, BaseException) and not self._stop.is_set():
            raise ServerExited(f"the server at {self.config.url} stopped answering "
                               f"(ping: {_describe(outcome)})")

    def _on_wire(self, message: SessionMessage) -> None:
        """Every message as it is read, in order: a tools/list_changed notification
        suspends the server's definitions before anything after it (such as the answer to
        the call that changed the tools) reaches the session."""
        inner = message.message
        if isinstance(inner, mcp_types.JSONRPCNotification) and inner.method == LIST_CHANGED:
            self.definitions.announce_change()
            self._tools_changed = True
            if self._wake is not None:
                self._wake.set()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            log.warning("MCP server %s sent something that is not MCP: %s", self.config.name,
                        _describe(message))

    async def _list_roots(self, context: Any) -> mcp_types.ListRootsResult:
        return roots_result(self.asks.roots)

    async def _elicit(self, context: Any, params: mcp_types.ElicitRequestParams
                      ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        try:
            answer = await self.asks.elicit(self.config.name, params)
        except Exception as exc:  # nothing was accepted: the server hears why
            log.exception("MCP server %s: answering its elicitation failed", self.config.name)
            return mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR,
                                       message=f"Reins could not ask the user: {exc}")
        return answer

    async def _sample(self, context: Any, params: mcp_types.CreateMessageRequestParams
                      ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        try:
            return await self.asks.sample(self.config.name, params)
        except Exception as exc:  # nothing was sent to the model, or its answer is lost
            log.exception("MCP server %s: answering its sampling request failed",
                          self.config.name)
            return mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR,
                                       message=f"Reins could not sample the model: {exc}")

    async def roots_changed(self) -> None:
        """Tell the server its roots changed (it lists them again); nothing when not live."""
        session = self.session
        if session is not None:
            with contextlib.suppress(Exception), warnings.catch_warnings():
                # Deprecated from protocol 2026-07-28 on, still what servers of the
                # versions before it (server-everything, most in use) listen for.
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await session.send_roots_list_changed()

    async def call(self, tool: str, arguments: dict[str, Any],
                   progress: ProgressFnT | None = None, *,
                   timeout_s: float) -> mcp_types.CallToolResult:
        """Call `tool` on the live session; `progress` gets its progress notifications
        (see `request` for the timeout and the errors)."""
        result: mcp_types.CallToolResult = await self.request(
            lambda session, on_progress: session.call_tool(tool, arguments,
                                                           progress_callback=on_progress),
            timeout_s=timeout_s, progress=progress)
        return result

    async def request(self, send: Callable[[ClientSession, ProgressFnT], Awaitable[T]], *,
                      timeout_s: float, progress: ProgressFnT | None = None) -> T:
        """`send(session, on_progress)` on the live session (a call, a resource read, a
        prompt), with its progress notifications passed on to `progress`.

        It may go `timeout_s` without an answer; each progress notification starts that
        time again (as the MCP spec allows), so a long tool that reports progress is not
        cut. Raises ServerUnavailable when there is no live session, ServerExited when the
        connection closes meanwhile, CallTimedOut, MCPError for a protocol-level error.
        """
        session = self._session
        if session is None or not self.ready:
            raise ServerUnavailable(await self._exit_text("") if self._closed else "not started")
        self._calls += 1
        scope = anyio.CancelScope(deadline=anyio.current_time() + timeout_s)
        reported = [0]

        passed_on = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            scope.deadline = anyio.current_time() + timeout_s
            reported[0] += 1
            if passed_on is not None:
                await passed_on(progress, total, message)

        try:
            with scope:
                return await send(session, on_progress)
            since = " since its last progress notification" if reported[0] else ""
            raise CallTimedOut(f"no answer within {timeout_s:g} s{since}")
        except MCPError as exc:
            if exc.error.code == mcp_types.CONNECTION_CLOSED:
                raise ServerExited(await self._exit_text("during the call")) from exc
            raise
        finally:
            self._calls -= 1

    @property
    def capabilities(self) -> mcp_types.ServerCapabilities | None:
        """What the live server declared (None while it is not ready)."""
        session = self.session
        return session.server_capabilities if session is not None else None

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._process.returncode

    async def _exit_text(self, when: str) -> str:
        if self.config.transport == "http":
            return f"the connection to {self.config.url} closed {when}"
        with anyio.move_on_after(0.5):
            while self.returncode is None:
                await anyio.sleep(0.01)
        code = self.returncode
        how = "exited" if code is None else (
            f"exited with code {code}" if code >= 0 else f"was killed by signal {-code}")
        return with_hint(f"the server process {how} {when}".rstrip(), exit_hint(code))

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any, anyio.Event]]:
        if self.config.transport == "http":
            async with (
                _http_client(self.config.headers) as http,
                streamable_http_client(self.config.url, http_client=http) as (read, write),
            ):
                closed = anyio.Event()
                send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_pump, read, send, closed, self._on_wire)
                    yield receive, write, closed
                    tg.cancel_scope.cancel()
            return
        self.stderr_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.stderr_path, "wb") as stderr:
            assert self.launch is not None, "a stdio server needs its launch"
            program, *args = self.launch.argv
            async with open_stdio(program, args, env=self.launch.env, cwd=self.launch.cwd,
                                  stderr=stderr, on_message=self._on_wire,
                                  start=self.launch.start) as channel:
                self.pid = channel.pid
                self._process = channel.process
                self._channel = channel
                yield channel.read_stream, channel.write_stream, channel.closed


HTTP_TIMEOUT_S = 30.0
HTTP_READ_TIMEOUT_S = 300.0
"""A server may hold a response stream open this long between events (the SDK's own
defaults, which it keeps in a private module)."""


def _http_client(headers: Mapping[str, str]) -> httpx2.AsyncClient:
    """The HTTP client of a streamable-HTTP server: its configured headers, the timeouts
    above; redirects are not followed (the transport follows them within the origin)."""
    return httpx2.AsyncClient(headers=dict(headers),
                              timeout=httpx2.Timeout(HTTP_TIMEOUT_S, read=HTTP_READ_TIMEOUT_S))


async def list_all_tools(session: ClientSession) -> tuple[mcp_types.Tool, ...]:
    """Every tool of the server, following `nextCursor` (bounded)."""
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(tools)


async def _pump(source: Any, sink: Any, closed: anyio.Event,
                on_message: Callable[[SessionMessage], None]) -> None:
    """Forward messages (each shown to `on_message` first); when the source ends, close the
    sink and set `closed`."""
    try:
        async with sink:
            async for item in source:
                if isinstance(item, SessionMessage):
                    on_message(item)
                await sink.send(item)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
        pass
    finally:
        closed.set()


async def _guard(awaitable: Awaitable[Any]) -> Any:
    try:
        return await awaitable
    except Exception as exc:
        return exc


async def _first_of(*functions: Callable[[], Awaitable[Any]]) -> Any:
    """The value of whichever call finishes first; the others are cancelled."""
    result: list[Any] = [None]

    async with anyio.create_task_group() as tg:

        async def run(fn: Callable[[], Awaitable[Any]]) -> None:
            result[0] = await fn()
            tg.cancel_scope.cancel()

        for fn in functions:
            tg.start_soon(run, fn)
    return result[0]


def _first_leaf(group: BaseExceptionGroup[Any], where: str = "") -> BaseException:
    """The exception a task group wrapped: ServerFailed first, else the first leaf (as a
    ServerFailed whose text starts with `where`)."""
    leaves: list[BaseException] = []
    stack: list[BaseException] = [group]
    while stack:
        exc = stack.pop(0)
        if isinstance(exc, BaseExceptionGroup):
            stack[:0] = list(exc.exceptions)
        else:
            leaves.append(exc)
    for leaf in leaves:
        if isinstance(leaf, ServerFailed):
            return leaf
    first = leaves[0] if leaves else group
    if isinstance(first, OSError):
        return ServerFailed(f"{where}I/O error with the server: {first}")
    if isinstance(first, Exception):
        return ServerFailed(f"{where}{_describe(first)}")
    return first


def _describe(exc: BaseException) -> str:
    if isinstance(exc, MCPError):
        return f"MCP error {exc.error.code}: {exc.error.message}"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"
