"""How a stdio MCP server is started: its argv, its environment and its folder.

`launch_builder` gives the manager one async function per kernel: for each stdio server it
builds the environment (`kernel.mcp.environment.server_env`, with the login PATH asked at
the first start), finds the command on that PATH, and picks the folder; a server whose
entry says `"sandbox": true` is wrapped in bubblewrap (`kernel.sandbox.server`) with its own
state folder for caches and the internet through pasta (`kernel.sandbox.server_start`; the
host's network only with the user's `exec.local_network`), and fails to start, saying why,
when no sandbox (or no pasta) is available here.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kernel.mcp.config import McpServerConfig
from kernel.mcp.environment import login_path, real_home, real_roots, server_env
from kernel.mcp.naming import sanitize
from kernel.paths import AppPaths
from kernel.sandbox.detect import detect_sandbox
from kernel.sandbox.network import FIX_PASTA, find_pasta, resolv_conf
from kernel.sandbox.pin import PinStage, links_to_pin
from kernel.sandbox.server import safe_workspace, server_bwrap_argv, server_marks
from kernel.sandbox.server_start import ServerStart
from kernel.sandbox.settings import ExecSettings


@dataclass(frozen=True)
class ServerLaunch:
    """Everything the stdio transport needs to start one server."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str
    start: ServerStart | None = None
    """A sandboxed server's start: its internet (pasta) attached, its links pinned and its
    workspace made read-only between calls once its process is started
    (kernel.sandbox.server_start)."""


LaunchBuilder = Callable[[McpServerConfig], Awaitable[ServerLaunch]]


class ServerSandboxUnavailable(RuntimeError):
    """The entry asks for a sandbox and none can be made here: the server is not started."""


def resolve_command(command: str, path: str) -> str:
    """`command` as an absolute path, looked up in the server's PATH (the user's login PATH,
    so `npx`/`uvx` installed in the home are found as Claude Desktop finds them). Unchanged
    when not found (the start then fails with "No such file")."""
    if "/" in command:
        return command
    return shutil.which(command, path=path) or command


def direct_launch(config: McpServerConfig, env: Mapping[str, str]) -> ServerLaunch:
    """An unsandboxed server: started in its `cwd`, else in its HOME (never in the kernel's
    current folder, which may be a workspace that commands write)."""
    command = resolve_command(config.command, env.get("PATH", ""))
    return ServerLaunch((command, *config.args), env, config.cwd or env.get("HOME") or "/")


def mcp_state_dir(paths: AppPaths, server: str) -> Path:
    """The folder a sandboxed server may write (its caches and state)."""
    return paths.data / "mcp-state" / sanitize(server)


def sandboxed_env(env: Mapping[str, str], state: Path) -> dict[str, str]:
    """The server's environment with its HOME, caches, state and data in its state folder
    (the home itself is not shown: kernel.sandbox.server) and TMPDIR the sandbox's private
    /tmp."""
    return {**env, "HOME": str(state), "XDG_CACHE_HOME": f"{state}/cache",
            "XDG_STATE_HOME": f"{state}/state",
            "XDG_DATA_HOME": f"{state}/data", "npm_config_cache": f"{state}/npm",
            "UV_CACHE_DIR": f"{state}/uv", "TMPDIR": "/tmp"}


def sandboxed_launch(config: McpServerConfig, env: Mapping[str, str], *, paths: AppPaths,
                     bwrap: str, disable_userns: bool, pasta: str | None,
                     settings: ExecSettings | None = None) -> ServerLaunch:
    """A server under bubblewrap: the internet through `pasta` (None: the host's network,
    the user's own `exec.local_network`), its `cwd` as its workspace, its state folder
    writable as its HOME, and of the rest what a command sees (its PATH's tool folders and
    `exec.read_only_paths` of `settings`) with what its entry names
    (kernel.sandbox.server)."""
    settings = settings or ExecSettings()
    state = mcp_state_dir(paths, config.name)
    state.mkdir(parents=True, exist_ok=True)
    state = state.resolve()  # where the sandbox shows it
    inner = sandboxed_env(env, state)
    program = (resolve_command(config.command, env.get("PATH", "")), *config.args)
    home = Path(env["HOME"])
    workspace = safe_workspace(config.cwd, home, paths) if config.cwd else None
    marks = server_marks(workspace, home, paths) if workspace is not None else {}
    stage = PinStage(links_to_pin(workspace, marks.values())) if workspace is not None else None
    start = ServerStart(pasta, stage, (workspace, str(state)) if workspace else None)
    argv = server_bwrap_argv(bwrap, program=program, state=state, workspace=workspace,
                             real_home=home, paths=paths, disable_userns=disable_userns,
                             handshake_fds=start.child_fds,
                             own_network=pasta is not None,
                             resolv_conf=resolv_conf(paths.data / "sandbox-net"),
                             marks=marks,
                             stage_fds=start.stage.child_fds if start.stage else None,
                             seccomp_fd=start.seccomp_fd,
                             path_vars=settings.path_vars(env),
                             read_only_paths=map(str, settings.shown_paths()))
    return ServerLaunch(tuple(argv), inner, config.cwd or str(state), start)


def launch_builder(paths: AppPaths, exec_settings: ExecSettings | None = None,
                   source: Mapping[str, str] | None = None) -> LaunchBuilder:
    """How each stdio server of this kernel starts (see the module docstring)."""
    settings = exec_settings or ExecSettings()

    async def launch_for(config: McpServerConfig) -> ServerLaunch:
        environ = dict(os.environ if source is None else source)
        writable = (paths.sandbox_homes,)
        found = await login_path(environ, real_home(environ, real_roots(writable)))
        env = server_env(config, source=environ, login_path=found, writable=writable,
                         settings=settings)
        if not config.sandbox:
            return direct_launch(config, env)
        status = await asyncio.to_thread(detect_sandbox, settings.bwrap)
        if not status.available:
            raise ServerSandboxUnavailable(f"the entry asks for a sandbox and none is "
                                           f"available here: {status.reason} ({status.fix})")
        pasta = None if settings.local_network else find_pasta(settings.pasta)
        if pasta is None and not settings.local_network:
            raise ServerSandboxUnavailable(f"the entry asks for a sandbox, whose network needs "
                                           f"pasta, which is not installed ({FIX_PASTA})")
        return await asyncio.to_thread(  # it walks the folders it shows: off the loop
            functools.partial(sandboxed_launch, config, env, paths=paths,
                              bwrap=status.bwrap_path,
                              disable_userns=status.nested_userns_blocked, pasta=pasta,
                              settings=settings))

    return launch_for
