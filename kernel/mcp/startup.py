"""Starting the configured MCP servers with a kernel, each in the user's own environment.

    manager = await start_mcp_servers(registry, paths, settings.mcp_servers)
    ...                                   # servers start in the background
    await manager.aclose()                # at kernel shutdown: every process group ends

A stdio server's environment is the user's own, minus secrets, with the real HOME and the
user's login PATH, plus exactly the variables its entry names in `env`
(`kernel.mcp.environment`); nothing a sandboxed command can write reaches it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernel.mcp.asks import ServerAsks
from kernel.mcp.config import parse_mcp_servers
from kernel.mcp.launch import launch_builder
from kernel.mcp.manager import Backoff, McpManager, StateListener
from kernel.mcp.resources import make_resources_tool
from kernel.paths import AppPaths
from kernel.sandbox.guard import WorkspaceGuards
from kernel.sandbox.settings import ExecSettings
from kernel.tools.registry import ToolRegistry


def mcp_logs_dir(paths: AppPaths) -> Path:
    """Where each server's stderr is kept (`<server>.stderr.log`, rewritten at each start)."""
    return paths.logs / "mcp"


async def start_mcp_servers(
    registry: ToolRegistry,
    paths: AppPaths,
    mcp_servers: Mapping[str, Any],
    *,
    exec_settings: ExecSettings | None = None,
    on_state: StateListener | None = None,
    backoff: Backoff | None = None,
    asks: ServerAsks | None = None,
) -> McpManager:
    """A manager for `mcp_servers` (the settings' `mcpServers`), every enabled server
    launched; returns at once; `asks` answers the servers' own requests (roots, elicitation,
    sampling; by default no roots, and every request declined). Raises McpConfigError for
    an unusable entry (nothing starts).
    """
    configs = parse_mcp_servers(mcp_servers)
    manager = McpManager(registry, launch_for=launch_builder(paths, exec_settings),
                         logs_dir=mcp_logs_dir(paths), backoff=backoff, on_state=on_state,
                         asks=asks, guards=WorkspaceGuards(paths))
    manager.resources_tool = make_resources_tool(manager)
    await manager.start(configs)
    return manager
