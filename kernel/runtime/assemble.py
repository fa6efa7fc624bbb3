"""Assembling a kernel: the store, the tools, the command executor, and Agents over them.

`open_kernel()` is what `reins exec` and the desktop kernel worker both start from, so the
two run the same registry (built-in tools + run_command) against the same database:

    kernel = open_kernel(AppPaths.from_env())
    agent = kernel.agent(AnthropicProvider(config), limits=..., gate_factory=...)
    ...
    await agent.provider.close(); kernel.close()
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernel.agent.limits import LoopLimits
from kernel.agent.loop import Agent
from kernel.agent.ports import GateFactory, Provider
from kernel.agent.store import SessionStore
from kernel.paths import AppPaths
from kernel.sandbox.detect import SandboxStatus
from kernel.sandbox.executor import CommandExecutor
from kernel.sandbox.hardening import make_non_dumpable
from kernel.sandbox.overlay_probe import overlay_status
from kernel.sandbox.settings import ExecSettings
from kernel.setting_records import DEFAULT_CHECKPOINT_BYTES
from kernel.tools.builtin import builtin_tools
from kernel.tools.builtin.command import make_run_command
from kernel.tools.compose import Declarations
from kernel.tools.find_tools import DEFAULT_THRESHOLD, make_find_tools
from kernel.tools.registry import RegistrationError, ToolRegistry
from kernel.transaction.checkpoints import Checkpoints
from kernel.transaction.orphans import recover_orphans

if TYPE_CHECKING:
    from kernel.mcp.asks import ServerAsks
    from kernel.mcp.manager import McpManager, StateListener


class SandboxFacts:
    """The sandbox status as the permission policy reads it (its SandboxState protocol).
    Without transactions (kernel.sandbox.overlay_probe) a command's changes can be neither
    held nor undone, so the policy treats commands as unconfined: every one asks."""

    def __init__(self, status: SandboxStatus, transactions: bool = True) -> None:
        self._status = status
        self._transactions = transactions

    @property
    def available(self) -> bool:
        return self._status.available and self._transactions

    def describe(self) -> str:
        if self._status.available and self._transactions:
            return "bubblewrap, each command a transaction"
        if self._status.available:
            return (f"bubblewrap without transactions ({overlay_status().reason}): every "
                    f"command asks")
        return f"none ({self._status.reason}; {self._status.fix})"


@dataclass
class Kernel:
    paths: AppPaths
    store: SessionStore
    registry: ToolRegistry
    executor: CommandExecutor
    sandbox: SandboxStatus
    checkpoints: Checkpoints
    mcp: McpManager | None = None
    tool_search_threshold: int = DEFAULT_THRESHOLD

    def agent(self, provider: Provider, *, limits: LoopLimits | None = None,
              gate_factory: GateFactory | None = None) -> Agent:
        return Agent(self.store, self.registry, provider, paths=self.paths, limits=limits,
                     gate_factory=gate_factory, sandbox=self.sandbox.kind,
                     prepare=self.executor.prepare,
                     protected_links=self.executor.protected_links,
                     checkpoints=self.checkpoints,
                     tool_search_threshold=self.tool_search_threshold)

    def declare_tools(self, declarations: Declarations) -> str:
        """Hold settings.json's composite and fallback tools in the registry: '' when done,
        else what is wrong (nothing is declared then)."""
        try:
            self.registry.declare(declarations)
        except RegistrationError as exc:
            return str(exc)
        return ""

    @property
    def sandbox_facts(self) -> SandboxFacts:
        return SandboxFacts(self.sandbox, self.executor.transactions)

    async def start_mcp(self, mcp_servers: Mapping[str, Any], *,
                        on_state: StateListener | None = None,
                        asks: ServerAsks | None = None) -> McpManager:
        """Launch the configured MCP servers (settings' `mcpServers`) in the background; the
        tools of each join the registry when it is ready (kernel.mcp); `asks` answers the
        servers' own requests (roots, elicitation, sampling). Raises McpConfigError. The MCP
        SDK is imported only then: a run with no server configured never loads it."""
        from kernel.mcp.startup import start_mcp_servers

        self.mcp = await start_mcp_servers(self.registry, self.paths, mcp_servers,
                                           exec_settings=self.executor.settings,
                                           on_state=on_state, asks=asks)
        return self.mcp

    async def stop_mcp(self, grace_s: float = 1.0) -> None:
        """End every MCP server (each one's whole process group) and remove their tools; a
        server gets `grace_s` to exit by itself after its stdin closes, then it is ended."""
        if self.mcp is not None:
            await self.mcp.aclose(grace_s)
            self.mcp = None

    def close(self) -> None:
        """End every running command, then close the store (pending writes finish)."""
        self.executor.shutdown()
        self.checkpoints.close()
        self.store.close()


def open_kernel(paths: AppPaths, exec_settings: ExecSettings | None = None, *,
                tool_search_threshold: int = DEFAULT_THRESHOLD,
                checkpoint_bytes: int = DEFAULT_CHECKPOINT_BYTES) -> Kernel:
    """The kernel over `paths`; commands run with the user's `exec` settings (PATH
    additions, passed-through variables, limits) from settings.json. What a dead kernel's
    commands left is recovered first (kernel.transaction.folders); above
    `tool_search_threshold` tools, find_tools searches the rest."""
    make_non_dumpable()
    store = SessionStore(paths.database)
    recover_orphans(paths, store.append_event)
    executor = CommandExecutor(paths, exec_settings or ExecSettings(),
                               transactions=overlay_status().available)
    registry = ToolRegistry([*builtin_tools(), make_run_command(executor)])
    registry.register(make_find_tools(
        lambda: [s for n in registry.names() if (s := registry.get(n)) is not None]))
    return Kernel(paths, store, registry, executor, executor.status(),
                  Checkpoints(paths.checkpoints, checkpoint_bytes),
                  tool_search_threshold=tool_search_threshold)
