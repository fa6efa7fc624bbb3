"""The kernel worker process: the agent loop behind the desktop UI.

The UI starts it with `start_worker()` — a `multiprocessing` spawn-context process (so it
also works frozen) connected by a duplex Pipe — and the two sides speak only
`kernel.protocol`. The worker owns the SessionStore, the Agent and the approval channel;
every stored event goes to the UI as an `EventMessage` after it is committed.

- The API key arrives over the pipe (`SetApiKey`) and lives in memory only; the worker's
  environment never holds it.
- A malformed or unknown command is logged and dropped; a command that cannot be carried
  out is answered with `CommandFailed`.
- When the UI goes away (EOF on the pipe, or `Shutdown`), every tool process is ended and
  the process exits. A run waiting for an approval is suspended (left `interrupted`, its
  waiting call without a result): the next start shows the same request, and allowing it
  resumes the run and runs that very call. Every other run is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import multiprocessing
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.context import SpawnProcess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel import protocol as p
from kernel.agent.store import RunState, SessionStore, StoredSession, StoreOpenError, UnknownSession
from kernel.demo.server import DEMO_KEY, DemoEndpoint
from kernel.events import (
    ApprovalDecision,
    ApprovalRequest,
    Event,
    GrantRevoked,
    ToolCallStarted,
    ToolResultEvent,
)
from kernel.paths import AppPaths
from kernel.policy.approvals import PolicyGate, gate_factory
from kernel.policy.channels import Answer, QueueChannel
from kernel.policy.decide import Mode
from kernel.policy.settings import Settings, SettingsError, SettingsFile
from kernel.runtime.collector import for_the_run
from kernel.sandbox.hardening import make_non_dumpable
from kernel.shared.demo import is_demo
from kernel.shared.workspace import broad_workspace_reason
from kernel.worker.images import get_prompt_images
from kernel.worker.undo import get_step_diff, list_steps, rewind_to, undo_call

if TYPE_CHECKING:
    from kernel.agent.loop import Agent
    from kernel.mcp.app import ElicitationChannel, SamplingChannel
    from kernel.mcp.asks import ServerAsks
    from kernel.mcp.sampling import SamplingTarget
    from kernel.policy.gate_context import GateContext
    from kernel.runtime.assemble import Kernel as Runtime
    from kernel.shared.attachments import Attachment
    from kernel.tools.compose import Declarations

# The UI process imports this module for `start_worker`; the agent loop, the provider and
# the runtime (which pull in the anthropic SDK, seconds to import) are imported only in the
# worker process, by `KernelService`.

log = logging.getLogger(__name__)
SHUTDOWN_GRACE_S = 1.5
"""How long cancelled runs get to finish before the worker exits regardless."""


def spawn_context() -> multiprocessing.context.SpawnContext:
    return multiprocessing.get_context("spawn")


def start_worker(stderr: Connection | None = None) -> tuple[SpawnProcess, Connection]:
    """Start a kernel worker; returns the process and the UI's end of the pipe. With
    `stderr` (the writing end of a one-way pipe) the worker's stderr goes there, so the UI
    can say why a kernel died."""
    ctx = spawn_context()
    ui_end, kernel_end = ctx.Pipe(duplex=True)
    process = ctx.Process(target=worker_main, args=(kernel_end, stderr), name="reins-kernel",
                          daemon=True)
    process.start()
    kernel_end.close()
    return process, ui_end


def worker_main(conn: Connection, stderr: Connection | None = None) -> None:
    """The worker process's entry point. A session database that cannot be used ends it
    with one line on stderr and `EXIT_STORE_UNUSABLE`, which the UI does not retry."""
    if stderr is not None:
        os.dup2(stderr.fileno(), 2)
        stderr.close()
    logging.basicConfig(level=os.environ.get("REINS_LOG_LEVEL", "WARNING"),
                        format="kernel %(levelname)s %(name)s: %(message)s")
    make_non_dumpable()  # before the key arrives; a no-op off Linux
    from kernel.sandbox import zygote  # not at the top: the UI imports this module

    with contextlib.suppress(OSError):  # else the first sandbox with links starts it
        zygote.start()  # while this process is small: its forks of link binders stay cheap
    code = 0
    try:
        for_the_run()
        asyncio.run(KernelService(conn, AppPaths.from_env()).serve())
    except StoreOpenError as exc:
        log.error("%s", exc)
        code = p.EXIT_STORE_UNUSABLE
    # Everything is closed explicitly above (runs, tool processes, store, pipe). Tearing
    # down the interpreter's modules (the SDK, pydantic) would take another second or so,
    # which the 2 s shutdown budget cannot spare: leave now.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


@dataclass
class _ActiveRun:
    task: asyncio.Task[Any]
    agent: Agent


def session_info(stored: StoredSession) -> p.SessionInfo:
    return p.SessionInfo(stored.session_id, stored.title, stored.workspace, Mode(stored.mode),
                         stored.model, stored.updated)


class KernelService:
    """Serves one UI over one connection until it goes away."""

    def __init__(self, conn: Connection, paths: AppPaths) -> None:
        self.conn = conn
        self.paths = paths
        self.api_key: str | None = None
        self.channel = QueueChannel()
        self.runs: dict[str, _ActiveRun] = {}
        self._restoring: set[str] = set()
        """Sessions whose history a RestoreVersion is rewriting (no run starts meanwhile)."""
        self._commands: asyncio.Queue[p.Message] = asyncio.Queue()
        self.gates: dict[str, PolicyGate] = {}
        self.early_answers: dict[str, Answer] = {}
        self.asking: dict[str, set[str]] = {}
        """Per session, the calls whose approval request has no decision yet."""
        self._agents: dict[str, Agent] = {}
        self._stop = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.runtime: Runtime
        self.settings = Settings()
        self.settings_file = SettingsFile(paths)
        """The one reading of settings.json, shared with every run's gate."""
        self.settings_error = ""
        self.settings_line = 0
        self._settings_read = False
        self._declared: Declarations | None = None
        """The composite and fallback tools last declared in the registry."""
        self._declare_error = ""
        self._mcp_started = False
        self._gate_for: Callable[[GateContext], PolicyGate] | None = None
        self.mcp_error = ""
        self.forms: ElicitationChannel | None = None
        """Servers' forms waiting for the user (kernel.mcp.app), once servers start."""
        self.sampling: SamplingChannel | None = None
        """Servers' sampling requests waiting for the user (kernel.mcp.app)."""
        self.demo = DemoEndpoint()
        """The demo model's loopback server, started when a demo session first runs."""
        self.tool_calls: dict[str, dict[str, str]] = {}
        """Per running session, its tool calls that have no result yet (id → tool name): a
        server's sampling request is billed to the run calling one of its tools."""

    # ---- lifecycle ------------------------------------------------------------------------

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        from kernel.runtime.assemble import open_kernel

        self.paths.data.mkdir(parents=True, exist_ok=True)
        self._reload_settings()
        self.runtime = await asyncio.to_thread(
            open_kernel, self.paths, self.settings.exec,
            tool_search_threshold=self.settings.tool_search_threshold,
            checkpoint_bytes=self.settings.checkpoint_bytes)
        self._declare_tools()
        self._gate_for = gate_factory(app_paths=self.paths, sandbox=self.runtime.sandbox_facts,
                                      channel=self.channel, settings_file=self.settings_file)
        self._settle_dead_runs()
        self._spawn(self._answer_early_requests())
        self._spawn(self._serve_commands())
        sandbox = self.runtime.sandbox
        self.send(p.KernelReady(p.PROTOCOL_VERSION, os.getpid(), sandbox.kind, sandbox.reason,
                                self.api_key is not None, self.model))
        self.send(self._snapshot())
        threading.Thread(target=self._read_loop, args=(loop,), name="kernel-reader",
                         daemon=True).start()
        self._spawn(self._start_mcp())
        try:
            await self._stop.wait()
        finally:
            await self._shutdown()

    def _read_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Blocking reads on a thread; each command is handled on the event loop."""
        while True:
            try:
                raw = self.conn.recv_bytes()
            except (EOFError, OSError):
                break
            message = p.decode(raw)
            if message is not None:
                loop.call_soon_threadsafe(self._handle, message)
        loop.call_soon_threadsafe(self._stop.set)

    async def _shutdown(self) -> None:
        for session_id, run in list(self.runs.items()):
            if self.asking.get(session_id):
                run.agent.suspend(session_id)
            else:
                run.agent.cancel(session_id)
        self.channel.close("Reins is closing")
        if self.forms is not None:
            self.forms.close()
        if self.sampling is not None:
            self.sampling.close()
        tasks = [run.task for run in self.runs.values()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=SHUTDOWN_GRACE_S)
            for task in pending:
                task.cancel()
        for task in self._tasks:
            task.cancel()
        for agent in self._agents.values():
            await agent.provider.close()
        await self.runtime.stop_mcp()
        self.demo.stop()
        self.runtime.close()
        self.conn.close()

    async def _start_mcp(self) -> None:
        """Launch the settings' MCP servers in the background (kernel.mcp): their tools join
        the registry as each becomes ready; a slow or broken server never delays the UI.
        Every change of a server's state goes to the UI as McpServerStates."""
        from kernel.mcp.config import McpConfigError, parse_mcp_servers

        self._mcp_started = True
        servers = self.settings.mcp_servers
        try:
            if self.runtime.mcp is not None:
                await self.runtime.mcp.apply(parse_mcp_servers(servers))
            elif servers:
                await self.runtime.start_mcp(servers, on_state=lambda _s: self._send_mcp(),
                                             asks=self._mcp_asks())
            self.mcp_error = ""
        except McpConfigError as exc:
            log.warning("MCP servers not started: %s", exc)
            self.mcp_error = f"MCP servers not started: {exc}"
        self._send_mcp()

    def _send_mcp(self) -> None:
        mcp = self.runtime.mcp
        states = mcp.states() if mcp is not None else ()
        self.send(p.McpServerStates(tuple(p.McpServerInfo.from_state(s.to_dict())
                                          for s in states), self.mcp_error))

    def send(self, message: p.Message) -> None:
        try:
            self.conn.send_bytes(p.encode(message))
        except (OSError, ValueError):
            self._stop.set()

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---- configuration ---------------------------------------------------------------------

    @property
    def model(self) -> str:
        from kernel.model.catalog import DEFAULT_MODEL

        return self.settings.model or DEFAULT_MODEL

    @property
    def base_url(self) -> str | None:
        return self.settings.base_url or None

    def _reload_settings(self) -> bool:
        """THE place the kernel takes up settings.json as it is now (through `settings_file`,
        the one reading, which every run's gate shares): at start, before each run and new
        session, on GetSettings and after each change, so a hand edit applies from the next
        run. When
        it changed, later runs get new agents (model, base URL, model limits) and the MCP
        servers follow it; a file that does not load stops runs (the servers are kept as
        they were). True when anything changed."""
        before = (dict(self.settings.raw), self.settings_error)
        servers = self.settings.mcp_servers
        try:
            self.settings = self.settings_file.current()
            self.settings_error, self.settings_line = "", 0
        except SettingsError as exc:
            self.settings = Settings()
            self.settings_error, self.settings_line = str(exc), exc.line or 0
        self._declare_tools()
        if self._settings_read and (dict(self.settings.raw), self.settings_error) == before:
            return False
        self._settings_read = True
        self._forget_agents()
        if self._mcp_started and not self.settings_error and self.settings.mcp_servers != servers:
            self._spawn(self._start_mcp())
        return True

    def _declare_tools(self) -> None:
        """The settings' composite and fallback tools into the registry (again only when
        they changed: a declaration changes the registry's version, and with it the
        prompt cache of the tools); tools the registry refuses stop runs like a settings
        file that does not load. Before the kernel is open there is no registry yet:
        `serve` declares them once it is."""
        if not hasattr(self, "runtime") or self.settings_error:
            return
        if self.settings.tools != self._declared:
            self._declared = self.settings.tools
            self._declare_error = self.runtime.declare_tools(self.settings.tools)
        if self._declare_error:
            self.settings_error = f"{self.paths.settings_file}: {self._declare_error}"

    def _refresh_settings(self) -> None:
        """Read settings.json again; when it changed (a hand edit), tell the UI."""
        if self._reload_settings():
            self.send(self._snapshot())

    def _snapshot(self, request_id: str = "",
                  problems: tuple[p.SettingsProblem, ...] = ()) -> p.SettingsSnapshot:
        """settings.json as this kernel reads it, and whether a run can start."""
        from kernel.mcp.config import find_claude_desktop_config
        from kernel.model.provider_config import file_key
        from kernel.shared.keys import ENV_VAR

        if self.settings_error:
            cannot = (f"settings.json cannot be used, so nothing runs until it is fixed: "
                      f"{self.settings_error}")
        elif self.api_key or os.environ.get(ENV_VAR) or self.base_url or os.environ.get(
                "ANTHROPIC_BASE_URL") or file_key(self.paths):
            cannot = ""
        else:
            cannot = ("There is no API key: enter one in Settings (kept in the system "
                      "keyring) or set ANTHROPIC_API_KEY; a local server needs a base URL "
                      "(Settings, or ANTHROPIC_BASE_URL).")
        claude = find_claude_desktop_config()
        return p.SettingsSnapshot(
            path=str(self.paths.settings_file), values=dict(self.settings.raw),
            error=self.settings_error, line=self.settings_line, model=self.model,
            default_mode=self.settings.default_mode, can_run=not cannot,
            cannot_run=cannot, claude_config=str(claude) if claude else "",
            request_id=request_id, problems=problems)

    @property
    def store(self) -> SessionStore:
        return self.runtime.store

    def agent(self, model: str) -> Agent:
        """The agent for the current key and URL and this model (ValueError: cannot run)."""
        if self.settings_error:
            raise ValueError(f"settings.json cannot be used, so nothing runs until it is "
                             f"fixed: {self.settings_error}")
        agent = self._agents.get(model)
        if agent is None:
            from kernel.model.provider import AnthropicProvider, ProviderConfig, resolve_base_url
            from kernel.model.server_limits import probe_context

            demo = is_demo(model)
            base_url = self.demo.base_url if demo else self.base_url
            served = None if demo else probe_context(
                resolve_base_url(ProviderConfig(base_url=base_url)))
            provider = AnthropicProvider(
                ProviderConfig.for_model(model, self.settings.models, base_url=base_url,
                                         served_context=served),
                api_key=DEMO_KEY if demo else self.api_key)
            agent = self.runtime.agent(provider, gate_factory=self._gate)
            self._agents[model] = agent
        return agent

    def _forget_agents(self) -> None:
        """New key or settings: later runs get new agents; running ones finish as they are."""
        old, self._agents = self._agents, {}
        for agent in old.values():
            if not any(run.agent is agent for run in self.runs.values()):
                self._spawn(agent.provider.close())

    def _gate(self, ctx: GateContext) -> PolicyGate:
        """The run's gate (kernel.policy.approvals.gate_factory) with the settings read just
        before the run started (`_launch`), kept to revoke grants while it runs."""
        assert self._gate_for is not None  # made in serve(), before any command
        gate = self._gate_for(ctx)
        self.gates[ctx.session_id] = gate
        return gate

    # ---- commands ---------------------------------------------------------------------------

    def _handle(self, message: p.Message) -> None:
        """Commands are carried out one at a time, in the order they came (`_serve_commands`);
        one that waits for the store or reads a whole history waits in a thread, so the loop
        goes on with the runs meanwhile."""
        self._commands.put_nowait(message)

    async def _serve_commands(self) -> None:
        while True:
            message = await self._commands.get()
            await self._carry_out(message)

    async def _carry_out(self, message: p.Message) -> None:
        """Every command the kernel handles gets its effect or a CommandFailed that says why
        (a failing session database included); none is lost to a traceback."""
        handler = _HANDLERS.get(type(message))
        if handler is None:
            log.warning("dropped a message the kernel does not handle: %s", message.kind)
            return
        session_id = getattr(message, "session_id", "")
        try:
            outcome = handler(self, message)
            if inspect.isawaitable(outcome):
                await outcome
        except UnknownSession as exc:
            self.send(p.CommandFailed(message.kind, str(exc), session_id))
        except (ValueError, OSError) as exc:  # ConfigError is a ValueError
            self.send(p.CommandFailed(message.kind, str(exc), session_id))
        except sqlite3.Error as exc:
            log.exception("%s failed in the session database", message.kind)
            self.send(p.CommandFailed(message.kind, f"the session database failed: "
                                      f"{type(exc).__name__}: {exc}", session_id))
        except Exception as exc:  # a bug must not leave the UI waiting for an answer
            log.exception("%s failed", message.kind)
            self.send(p.CommandFailed(message.kind, f"the kernel could not do this: "
                                      f"{type(exc).__name__}: {exc}", session_id))

    def _set_api_key(self, message: p.SetApiKey) -> None:
        self.api_key = message.api_key or None
        self._forget_agents()
        self.send(self._snapshot())

    # ---- settings ---------------------------------------------------------------------------

    def _get_settings(self, _message: p.GetSettings) -> None:
        self._reload_settings()
        self.send(self._snapshot())

    def _update_settings(self, message: p.UpdateSettings) -> None:
        """Validate the changes with the settings' own checks and write them (or only
        check); every problem goes back in the snapshot, nothing is written with any."""
        found = self._change_settings(message.changes, write=not message.check_only)
        self._reload_settings()
        self.send(self._snapshot(message.request_id, found))

    def _change_settings(self, changes: Iterable[p.SettingChange], *, write: bool = True,
                         ) -> tuple[p.SettingsProblem, ...]:
        """kernel.policy.settings.change_settings; a file that cannot be read or written is
        one more problem to report, not a lost answer."""
        from kernel.policy.settings import change_settings

        try:
            return change_settings(self.paths, changes, write=write)
        except OSError as exc:
            return (p.SettingsProblem((), f"settings.json could not be changed: {exc}"),)

    def _get_diagnostics(self, _message: p.GetDiagnostics) -> None:
        self._spawn(self._send_diagnostics())

    async def _send_diagnostics(self) -> None:
        from kernel.cli.cmd_doctor import doctor_report
        from kernel.model.provider import KeySource, resolve_api_key

        key = KeySource(self.api_key, "app") if self.api_key else None

        def report() -> str:
            return doctor_report(self.paths, lambda: key or resolve_api_key())[0]

        try:
            text = await asyncio.to_thread(report)
        except Exception as exc:  # the report must say why it failed, not lose the kernel
            log.exception("reins doctor failed")
            text = f"The check failed: {type(exc).__name__}: {exc}"
        self.send(p.Diagnostics(text))

    def _import_mcp_servers(self, message: p.ImportMcpServers) -> None:
        """Plan (and with `write`, make) an import of a Claude Desktop file's servers; the
        plan is made again from both files as they are at that moment."""
        from kernel.mcp.config import (
            McpConfigError,
            parse_server,
            plan_import,
            read_claude_desktop_servers,
        )

        self._reload_settings()
        try:
            if self.settings_error:
                raise McpConfigError(f"settings.json cannot be used: {self.settings_error}")
            imported = read_claude_desktop_servers(Path(message.path).expanduser())
            plan = plan_import(self.settings.mcp_servers, imported)
        except McpConfigError as exc:
            self.send(p.McpImportPlan(message.path, error=str(exc)))
            return
        runs = tuple(parse_server(name, imported[name]).describe() for name in plan.added)
        written = False
        if message.write and plan.added:
            found = self._change_settings([p.SettingChange(("mcpServers", name), imported[name])
                                           for name in plan.added])
            if found:
                self.send(p.McpImportPlan(message.path, plan.added, runs, plan.unchanged,
                                          plan.conflicts, "; ".join(f.message for f in found)))
                return
            written = self._reload_settings()
            self.send(self._snapshot())
        self.send(p.McpImportPlan(message.path, plan.added, runs, plan.unchanged,
                                  plan.conflicts, written=written))

    async def _list_sessions(self, message: p.ListSessions) -> None:
        sessions = await asyncio.to_thread(self.store.list_sessions, message.query or None)
        self.send(p.SessionList(tuple(session_info(s) for s in sessions), message.query))

    async def _new_session(self, message: p.NewSession) -> None:
        if message.scratch:
            workspace = await asyncio.to_thread(self.paths.new_scratch_workspace, time.time())
        else:
            workspace = _usable_workspace(message.workspace, message.confirm_broad_workspace,
                                          "the session was not created")
        self._refresh_settings()  # its model is settings.json's as it is now
        model = message.model.strip() or self.model
        _check_model_name(model)
        session_id = await asyncio.to_thread(self.store.create_session, workspace.resolve(),
                                             model, message.mode, message.title)
        self.send(p.SessionLoaded(session_info(self.store.get_session(session_id)),
                                  created=True))

    async def _set_workspace(self, message: p.SetWorkspace) -> None:
        """A session moved to another folder (a scratch session given a real one): its next
        runs work there; the old folder and what is in it are left as they are."""
        if message.session_id in self.runs:
            raise ValueError("the folder cannot change while the session runs; stop it first")
        stored = self.store.get_session(message.session_id)
        workspace = _usable_workspace(message.workspace, message.confirm_broad_workspace,
                                      "the folder was not changed").resolve()
        if str(workspace) != stored.workspace:
            await asyncio.to_thread(self.store.set_session_workspace, message.session_id,
                                    workspace)
        await self._list_sessions(p.ListSessions())

    def _settle_dead_runs(self, session_ids: tuple[str, ...] | None = None) -> None:
        """Sessions recorded `running` whose process died (a killed `reins exec`, a crashed
        kernel) are `interrupted`; one a live process runs stays `running`."""
        from kernel.agent.runlock import session_lock

        ids = None if session_ids is None else [s for s in session_ids if s not in self.runs]
        self.store.settle_dead_runs(lambda sid: session_lock(self.paths, sid), ids)

    async def _open_session(self, message: p.OpenSession) -> None:
        if message.session_id not in self.runs:
            await asyncio.to_thread(self._settle_dead_runs, (message.session_id,))
        stored = self.store.get_session(message.session_id)
        events = tuple(event for _, event in
                       await asyncio.to_thread(self.store.events, message.session_id))
        interrupted = (stored.run_state is RunState.INTERRUPTED
                       and message.session_id not in self.runs)
        self.send(p.SessionLoaded(session_info(stored), events, interrupted))
        if message.session_id in self.runs:
            self.send(p.RunStatus(message.session_id, "running"))

    async def _rename_session(self, message: p.RenameSession) -> None:
        await asyncio.to_thread(self.store.rename_session, message.session_id,
                                message.title.strip())
        await self._list_sessions(p.ListSessions())

    async def _delete_session(self, message: p.DeleteSession) -> None:
        """A running session's run is cancelled and awaited first (its last events stored
        while the session exists); then the session, everything stored for it and its
        files on disk (externalized outputs, kept media) are removed. A session another
        process runs (`reins exec --session`) is not deleted under it."""
        from kernel.agent.runlock import SessionLocked, session_lock
        from kernel.tools.externalize import remove_session_outputs

        session_id = message.session_id
        self.store.get_session(session_id)  # UnknownSession for a wrong id
        run = self.runs.get(session_id)
        if run is not None:
            if not run.agent.cancel(session_id):
                run.task.cancel()
            _, pending = await asyncio.wait({run.task}, timeout=SHUTDOWN_GRACE_S)
            if pending:
                run.task.cancel()
                await asyncio.wait(pending)
        lock = session_lock(self.paths, session_id)
        try:
            await asyncio.to_thread(lock.acquire)
        except SessionLocked:
            raise ValueError("the session was not deleted: another Reins process is running "
                             "it (reins exec); stop that run first") from None
        try:
            await asyncio.to_thread(self.store.delete_session, session_id)
            await asyncio.to_thread(remove_session_outputs, self.paths, session_id)
        finally:
            lock.release()
        self.send(p.SessionDeleted(session_id))

    async def _set_session_model(self, message: p.SetSessionModel) -> None:
        model = message.model.strip()
        _check_model_name(model, message.model)
        await asyncio.to_thread(self.store.set_session_model, message.session_id, model)
        await self._list_sessions(p.ListSessions())

    def _check_connection(self, message: p.CheckConnection) -> None:
        self._spawn(self._send_connection_check(message))

    async def _send_connection_check(self, message: p.CheckConnection) -> None:
        """Settings → Test connection: the key and URL as typed (an empty key: the one this
        kernel would use), one small real request, the verdict in words."""
        from kernel.model.connection_check import check_connection
        from kernel.model.provider_config import (
            ProviderConfig,
            resolve_api_key,
            resolve_base_url,
        )

        base_url = resolve_base_url(ProviderConfig(base_url=message.base_url.strip() or None))
        key = message.api_key.strip() or (
            await asyncio.to_thread(resolve_api_key, self.api_key)).key
        model = message.model.strip() or self.model
        verdict = await check_connection(key, base_url, model)
        self.send(p.ConnectionChecked(message.request_id, verdict.ok, verdict.message))

    def _list_models(self, _message: p.ListModels) -> None:
        self._spawn(self._send_models())

    async def _send_models(self) -> None:
        from kernel.model.listing import ModelListError, endpoint_models
        from kernel.model.provider import ProviderConfig, resolve_api_key, resolve_base_url

        base_url = resolve_base_url(ProviderConfig(model=self.model, base_url=self.base_url))
        key = (await asyncio.to_thread(resolve_api_key, self.api_key)).key
        try:
            self.send(p.ModelList(await endpoint_models(key, base_url), self.model))
        except ModelListError as exc:
            self.send(p.ModelList((), self.model, str(exc)))

    async def _set_mode(self, message: p.SetMode) -> None:
        mode = message.mode
        await asyncio.to_thread(self.store.set_session_mode, message.session_id, mode.value)
        gate = self.gates.get(message.session_id)
        if gate is not None:
            gate.mode = mode
        await self._list_sessions(p.ListSessions())

    def _start_run(self, message: p.StartRun) -> None:
        if not message.prompt.strip():
            raise ValueError("the prompt is empty")
        attachments = _attachments(message.attachments)
        self._launch(message.session_id, lambda agent, sink: agent.run(
            message.session_id, message.prompt, sink, attachments))

    async def _edit_last_message(self, message: p.EditLastMessage) -> None:
        if not message.prompt.strip():
            raise ValueError("the prompt is empty")
        await self._check_branch(message.session_id, "edited")
        attachments = _attachments(message.attachments)
        self._launch(message.session_id, lambda agent, sink: agent.edit(
            message.session_id, message.prompt, sink, attachments, message.keep))

    async def _regenerate_answer(self, message: p.RegenerateAnswer) -> None:
        await self._check_branch(message.session_id, "answered again")
        self._launch(message.session_id, lambda agent, sink: agent.regenerate(
            message.session_id, sink))

    async def _restore_version(self, message: p.RestoreVersion) -> None:
        """An earlier answer to the last prompt made current again (kernel.agent.restore),
        then shown."""
        from kernel.agent.restore import restore_version

        session_id = message.session_id
        if session_id in self.runs or session_id in self._restoring:
            raise ValueError("a run is in progress in this session: stop it before another "
                             "version of the answer can be continued from")
        self._restoring.add(session_id)
        try:
            event = await asyncio.to_thread(restore_version, self.store, session_id,
                                            message.version)
        finally:
            self._restoring.discard(session_id)
        self.send(p.EventMessage(event))

    async def _check_branch(self, session_id: str, what: str) -> None:
        """ValueError (said to the UI) when the last prompt cannot be changed now: a run is
        in progress, or there is no prompt (kernel.agent.branch.NothingToChange)."""
        from kernel.agent.branch import last_prompt, prompt_place
        from kernel.events import UserMessage

        if session_id in self.runs:
            raise ValueError(f"a run is in progress in this session: stop it before the last "
                             f"message can be {what}")
        events = await asyncio.to_thread(self.store.events, session_id)
        prompts = [e for _, e in events if isinstance(e, UserMessage)]
        prompt_place(await asyncio.to_thread(self.store.messages, session_id),
                     last_prompt(prompts))

    def _resume_run(self, message: p.ResumeRun) -> None:
        self._launch(message.session_id,
                     lambda agent, sink: agent.resume(message.session_id, sink))

    def _compact_session(self, message: p.CompactSession) -> None:
        self._launch(message.session_id,
                     lambda agent, sink: agent.compact(message.session_id, sink))

    async def _export_session(self, message: p.ExportSession) -> None:
        from kernel.agent.export import conversation_markdown, trace_text

        session_id = message.session_id
        trace = await asyncio.to_thread(trace_text, self.store, session_id)
        events = await asyncio.to_thread(self.store.events, session_id)
        markdown = conversation_markdown(self.store.get_session(session_id),
                                         (event for _, event in events))
        self.send(p.SessionExport(session_id, trace, markdown))

    def _cancel_run(self, message: p.CancelRun) -> None:
        run = self.runs.get(message.session_id)
        if run is not None and not run.agent.cancel(message.session_id):
            run.task.cancel()

    def _cancel_call(self, message: p.CancelCall) -> None:
        run = self.runs.get(message.session_id)
        if run is None or not run.agent.cancel_call(message.session_id, message.call_id):
            log.info("cancel_call: %s is not running in session %s", message.call_id,
                     message.session_id)

    async def _approval_answer(self, message: p.ApprovalAnswer) -> None:
        answer = Answer(message.decision, message.message, message.confirmed)
        if self.channel.answer(message.call_id, answer):
            return
        if message.session_id not in self.runs:
            await self._check_still_asked(message.session_id, message.call_id)
        # Nobody is waiting for it: the request is from before a restart. Keep the answer
        # and resume the run; the gate asks again for exactly that call and gets it.
        self.early_answers[message.call_id] = answer
        if message.session_id not in self.runs:
            self._resume_run(p.ResumeRun(message.session_id))

    async def _check_still_asked(self, session_id: str, call_id: str) -> None:
        """ValueError (said to the UI) when the history has no request of this call waiting
        for an answer: an answer to a call stopped or finished meanwhile is never dropped
        silently, and starts nothing."""
        from kernel.events import call_statuses, pending_requests

        events = [e for _, e in await asyncio.to_thread(self.store.events, session_id)]
        if any(r.call_id == call_id for r in pending_requests(events)):
            return
        why = _GONE.get(call_statuses(events).get(call_id) or "", "it is not in this session")
        raise ValueError(f"the answer was not used: that call no longer waits for one ({why});"
                         f" nothing was run. Send a new message to go on.")

    def _shutdown_command(self, _message: p.Shutdown) -> None:
        self._stop.set()

    # ---- grants ------------------------------------------------------------------------------

    async def _list_grants(self, message: p.ListGrants) -> None:
        history = (None if message.session_id in self.gates else
                   await asyncio.to_thread(self.store.events, message.session_id))
        self.send(p.GrantList(message.session_id,
                              self._session_grants(message.session_id, history=history)
                              + self._always_rules()))

    async def _list_all_grants(self, _message: p.ListAllGrants) -> None:
        """Every session's grants (each stored history read in a thread), then the
        always-allow rules."""
        grants: list[p.GrantInfo] = []
        for stored in await asyncio.to_thread(self.store.list_sessions, None):
            history = None if stored.session_id in self.gates else await asyncio.to_thread(
                self.store.events, stored.session_id)
            grants += self._session_grants(stored.session_id, stored.title, history)
        self.send(p.GrantList("", (*grants, *self._always_rules())))

    def _session_grants(self, session_id: str, title: str = "",
                        history: list[tuple[int, Event]] | None = None,
                        ) -> tuple[p.GrantInfo, ...]:
        """The session's grants in force (from its gate while it runs, else from its stored
        events: `history`, or read now)."""
        from kernel.policy.grants import describe, session_grants

        self.store.get_session(session_id)  # UnknownSession for a wrong id
        gate = self.gates.get(session_id)
        if gate is not None:
            grants = gate.grants
        else:
            stored = history if history is not None else self.store.events(session_id)
            grants = session_grants(event for _, event in stored)
        return tuple(p.GrantInfo(g.rule.text, _session_words(describe(g.rule)), "session",
                                 g.network, session_id, title) for g in grants)

    def _always_rules(self) -> tuple[p.GrantInfo, ...]:
        """The always-allow rules of settings.json as it is now."""
        from kernel.policy.grants import describe

        self._reload_settings()
        if self.settings_error:
            raise ValueError(f"settings.json cannot be used: {self.settings_error}")
        return tuple(p.GrantInfo(r.text, describe(r), "always")
                     for r in self.settings.permissions.allow.rules)

    async def _revoke_grant(self, message: p.RevokeGrant) -> None:
        """Revoke through the session's gate while it runs (it records GrantRevoked and
        stops matching at once), else record GrantRevoked in the session's store."""
        from kernel.policy.grants import session_grants
        from kernel.policy.settings import remove_rule

        session_id = message.session_id
        if not session_id and message.scope == "always":
            try:  # no session named: only the rule goes (running gates re-read the file)
                remove_rule(self.paths, "allow", message.rule)
            except KeyError as exc:
                raise ValueError(f"nothing to revoke: {exc.args[0]}") from None
            self._spawn(self._list_all_grants(p.ListAllGrants()))
            return
        self.store.get_session(session_id)
        gate = self.gates.get(session_id)
        try:
            if gate is not None and message.scope == "session":
                gate.revoke_session_grant(message.rule)
            elif gate is not None:
                gate.revoke_always_rule(message.rule)
            else:
                if message.scope == "session":
                    stored = await asyncio.to_thread(self.store.events, session_id)
                    held = session_grants(e for _, e in stored)
                    if all(g.rule.text != message.rule for g in held):
                        raise KeyError(f"this session has no grant {message.rule!r}")
                else:
                    remove_rule(self.paths, "allow", message.rule)
                event = GrantRevoked(session_id, rule=message.rule, scope=message.scope,
                                     revoked_by="user", revoked_at=time.time())
                await asyncio.wrap_future(self.store.submit_event(event))
                self.send(p.EventMessage(event))
        except KeyError as exc:
            raise ValueError(f"nothing to revoke: {exc.args[0] if exc.args else exc}"
                             ) from None
        await self._list_grants(p.ListGrants(session_id))

    # ---- MCP servers ------------------------------------------------------------------------

    def _list_mcp_servers(self, _message: p.ListMcpServers) -> None:
        self._send_mcp()

    def _mcp_server_action(self, message: p.McpServerAction) -> None:
        mcp = self.runtime.mcp
        if mcp is None or all(s.name != message.name for s in mcp.states()):
            raise ValueError(f"no MCP server named {message.name!r} is configured")
        if message.action == "restart" and mcp.state(message.name).status == "disabled":
            raise ValueError(f"the MCP server {message.name!r} is disabled; enable it first")
        if message.action != "restart":
            from kernel.policy.settings import set_mcp_server_disabled

            self.settings = set_mcp_server_disabled(self.paths, message.name,
                                                    message.action == "disable")
            self.settings_file.saved(self.settings)
        self._spawn(self._mcp_act(message))

    async def _mcp_act(self, message: p.McpServerAction) -> None:
        mcp = self.runtime.mcp
        if mcp is None:
            return
        act = {"enable": mcp.enable, "disable": mcp.disable, "restart": mcp.restart}
        try:
            await act[message.action](message.name)
        except KeyError as exc:  # the server was removed from settings meanwhile
            self.send(p.CommandFailed(message.kind, str(exc.args[0] if exc.args else exc)))
        self._send_mcp()

    def _mcp_asks(self) -> ServerAsks:
        """Servers' forms go to the UI as McpFormRequest, their sampling requests as
        McpSamplingRequest (to the model of the run calling the server, once the user
        approved); roots follow the running sessions (`_set_roots`)."""
        from kernel.mcp.app import ElicitationChannel, SamplingChannel
        from kernel.mcp.asks import ServerAsks
        from kernel.mcp.sampling import sampler

        self.forms = ElicitationChannel(self.send)
        self.sampling = SamplingChannel(self.send)
        return ServerAsks(elicit=self.forms.ask, sample=sampler(
            self._sampling_target, self.sampling.approve, self._record))

    def _sampling_target(self, server: str) -> SamplingTarget | None:
        """The run a server's sampling request is for: the latest started that is calling
        one of the server's tools (None: no run is)."""
        from kernel.agent.run_budget import RunBudget
        from kernel.mcp.naming import server_prefix
        from kernel.mcp.sampling import SamplingTarget

        prefix = server_prefix(server)
        for session_id in reversed(list(self.runs)):
            if any(name.startswith(prefix)
                   for name in self.tool_calls.get(session_id, {}).values()):
                agent = self.runs[session_id].agent
                return SamplingTarget(session_id, agent.provider, RunBudget(agent, session_id))
        return None

    def _record(self, event: Event) -> None:
        """Store an event of the kernel's own (not of a run's loop) and show it."""
        self.store.append_event(event)
        self.send(p.EventMessage(event))

    def _mcp_sampling_answer(self, message: p.McpSamplingAnswer) -> None:
        if self.sampling is None:
            raise ValueError(f"no sampling request {message.request_id!r} is waiting for an "
                             "answer")
        self.sampling.answer(message.request_id, message.approve)

    async def _set_roots(self) -> None:
        if self.runtime.mcp is not None:
            await self.runtime.mcp.set_roots(
                [Path(self.store.get_session(s).workspace) for s in list(self.runs)])

    def _mcp_form_answer(self, message: p.McpFormAnswer) -> None:
        if self.forms is None:
            raise ValueError(f"no form {message.request_id!r} is waiting for an answer")
        self.forms.answer(message.request_id, message.action, message.content)

    def _list_mcp_prompts(self, _message: p.ListMcpPrompts) -> None:
        self._spawn(self._send_prompts())

    async def _send_prompts(self) -> None:
        from kernel.mcp.app import list_prompts

        mcp = self.runtime.mcp
        self.send(p.McpPromptList(await list_prompts(mcp) if mcp is not None else ()))

    def _get_mcp_prompt(self, message: p.GetMcpPrompt) -> None:
        arguments = message.arguments if message.arguments is not None else {}
        if not isinstance(arguments, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in arguments.items()):
            raise ValueError("the prompt's arguments must be an object of name → text")
        self._spawn(self._send_prompt(message, arguments))

    async def _send_prompt(self, message: p.GetMcpPrompt, arguments: dict[str, str]) -> None:
        from kernel.mcp.prompts import get_prompt
        from kernel.tools.spec import ToolError

        mcp = self.runtime.mcp
        try:
            if mcp is None:
                raise ValueError("no MCP servers are configured")
            text = await get_prompt(mcp, message.server, message.name, arguments)
        except (ValueError, ToolError) as exc:
            self.send(p.CommandFailed(message.kind, str(exc)))
            return
        self.send(p.McpPromptText(message.server, message.name, text))

    # ---- runs ---------------------------------------------------------------------------------

    def _launch(self, session_id: str,
                start: Callable[[Agent, Callable[[Event], None]], Coroutine[Any, Any, Any]],
                ) -> None:
        if session_id in self.runs or session_id in self._restoring:
            raise ValueError("this session already has a run in progress; stop it first")
        self._refresh_settings()
        agent = self.agent(self.store.get_session(session_id).model or self.model)
        task = asyncio.get_running_loop().create_task(self._run(session_id, agent, start))
        self.runs[session_id] = _ActiveRun(task, agent)
        self._spawn(self._set_roots())
        self.send(p.RunStatus(session_id, "running"))

    async def _run(self, session_id: str, agent: Agent,
                   start: Callable[[Agent, Callable[[Event], None]],
                                   Coroutine[Any, Any, Any]]) -> None:
        state: p.RunState = "idle"
        try:
            await self._report_mcp(session_id)
            await start(agent, self._sink)
            if self.store.get_session(session_id).run_state is RunState.INTERRUPTED:
                state = "interrupted"  # it failed unexpectedly, and said so in its events
        except asyncio.CancelledError:
            state = "interrupted"
        except Exception as exc:  # a bug must not kill the kernel: the run is retryable
            log.exception("run of session %s failed", session_id)
            state = "interrupted"
            self.send(p.CommandFailed("start_run", f"the run stopped unexpectedly: "
                                      f"{type(exc).__name__}: {exc}", session_id))
        finally:
            self.runs.pop(session_id, None)
            self.gates.pop(session_id, None)
            self.asking.pop(session_id, None)
            self.tool_calls.pop(session_id, None)
        self.send(p.RunStatus(session_id, state))

    def _sink(self, event: Event) -> None:
        if isinstance(event, ApprovalRequest):
            self.asking.setdefault(event.session_id, set()).add(event.call_id)
        elif isinstance(event, ApprovalDecision):
            self.asking.get(event.session_id, set()).discard(event.call_id)
        elif isinstance(event, ToolCallStarted):
            self.tool_calls.setdefault(event.session_id, {})[event.call_id] = event.name
        elif isinstance(event, ToolResultEvent):
            self.tool_calls.get(event.session_id, {}).pop(event.call_id, None)
        self.send(p.EventMessage(event))

    async def _report_mcp(self, session_id: str) -> None:
        """Record the MCP servers' outcomes this session has not seen (a failed server shows
        in the chat, kernel.mcp.report); the history is read in a thread."""
        from kernel.mcp.report import unseen_outcomes

        if self.runtime.mcp is None:
            return
        seen = (event for _, event in await asyncio.to_thread(self.store.events, session_id))
        for event in unseen_outcomes(session_id, self.runtime.mcp.states(), seen):
            await asyncio.wrap_future(self.store.submit_event(event))
            self.send(p.EventMessage(event))

    async def _answer_early_requests(self) -> None:
        """Requests reach the UI as events; here they only meet answers given early."""
        while True:
            request: ApprovalRequest = await self.channel.requests.get()
            answer = self.early_answers.pop(request.call_id, None)
            if answer is not None:
                self.channel.answer(request.call_id, answer)


_HANDLERS: dict[type[p.Message], Callable[[KernelService, Any], Awaitable[None] | None]] = {
    p.SetApiKey: KernelService._set_api_key,
    p.GetSettings: KernelService._get_settings,
    p.UpdateSettings: KernelService._update_settings,
    p.GetDiagnostics: KernelService._get_diagnostics,
    p.ImportMcpServers: KernelService._import_mcp_servers,
    p.ListAllGrants: KernelService._list_all_grants,
    p.ListSessions: KernelService._list_sessions,
    p.NewSession: KernelService._new_session,
    p.OpenSession: KernelService._open_session,
    p.RenameSession: KernelService._rename_session,
    p.DeleteSession: KernelService._delete_session,
    p.SetMode: KernelService._set_mode,
    p.SetSessionModel: KernelService._set_session_model,
    p.ListModels: KernelService._list_models,
    p.SetWorkspace: KernelService._set_workspace,
    p.CheckConnection: KernelService._check_connection,
    p.StartRun: KernelService._start_run,
    p.EditLastMessage: KernelService._edit_last_message,
    p.RegenerateAnswer: KernelService._regenerate_answer,
    p.RestoreVersion: KernelService._restore_version,
    p.ResumeRun: KernelService._resume_run,
    p.CompactSession: KernelService._compact_session,
    p.ExportSession: KernelService._export_session,
    p.CancelRun: KernelService._cancel_run,
    p.CancelCall: KernelService._cancel_call,
    p.ApprovalAnswer: KernelService._approval_answer,
    p.Shutdown: KernelService._shutdown_command,
    p.ListGrants: KernelService._list_grants,
    p.RevokeGrant: KernelService._revoke_grant,
    p.ListMcpServers: KernelService._list_mcp_servers,
    p.McpServerAction: KernelService._mcp_server_action,
    p.McpFormAnswer: KernelService._mcp_form_answer,
    p.McpSamplingAnswer: KernelService._mcp_sampling_answer,
    p.ListMcpPrompts: KernelService._list_mcp_prompts,
    p.GetMcpPrompt: KernelService._get_mcp_prompt,
    p.ListSteps: list_steps,
    p.UndoCall: undo_call,
    p.RewindTo: rewind_to,
    p.GetStepDiff: get_step_diff,
    p.GetPromptImages: get_prompt_images,
}


def _usable_workspace(folder: str, confirmed: bool, refused: str) -> Path:
    """The folder a session may work in: an existing one, and a broad one (the home folder,
    /, a system folder) only when the user confirmed it; else ValueError, `refused` first."""
    workspace = Path(folder).expanduser()
    if not folder.strip() or not workspace.is_dir():
        raise ValueError(f"{refused}: the workspace {workspace} is not an existing folder")
    broad = broad_workspace_reason(workspace)
    if broad is not None and not confirmed:
        raise ValueError(f"{refused}: {broad}. Choose a project folder, or confirm this "
                         f"workspace explicitly")
    return workspace


def _check_model_name(model: str, typed: str | None = None) -> None:
    if not model or any(c.isspace() or not c.isprintable() for c in model):
        raise ValueError(f"{typed if typed is not None else model!r} is not a model name")


def _attachments(sent: tuple[p.AttachmentData, ...]) -> list[Attachment]:
    """The attachments the UI sent, each checked (kernel.shared.attachments); ValueError naming
    the first that cannot be attached."""
    import base64
    import binascii

    from kernel.shared.attachments import MAX_ATTACHMENTS, read_attachment

    if len(sent) > MAX_ATTACHMENTS:
        raise ValueError(f"at most {MAX_ATTACHMENTS} files can be attached to one prompt")
    out = []
    for item in sent:
        try:
            data = base64.b64decode(item.data, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{item.name}: the attachment's data is not base64") from None
        out.append(read_attachment(item.name, data))
    return out


_GONE = {
    "stopped": "it was stopped before it was answered",
    "ok": "it has already run", "error": "it has already ended, with an error",
    "denied": "it was denied", "timeout": "it has already ended: it timed out",
    "running": "it was already answered",
}
"""Why an answered call waits for no answer, by its status (`_check_still_asked`)."""


def _session_words(words: str) -> str:
    """A rule's words (said for an always rule) for a grant of this session only."""
    return words.removesuffix(", in every session") + " — in this session only"
