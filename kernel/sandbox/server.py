"""The bubblewrap command line for an MCP server its entry sandboxes (`"sandbox": true`).

A server is not a command: it lives as long as the kernel, speaks over stdin and stdout,
needs the network (APIs, fetchers, package downloads) and a place for its caches. So it gets
the same namespaces as a command (`NAMESPACE_FLAGS`: its own user namespace with no
capability, pid, ipc, uts; no nested user namespace where bubblewrap can forbid it) and,
with `own_network`, a network namespace of its own that kernel.sandbox.server_start gives
the internet through pasta (not this machine's loopback services or abstract sockets);
without it, it shares the host's network (the user's `exec.local_network`). It sees of the
machine what a command sees, built from nothing (kernel.sandbox.view: the system folders,
`/etc` minus what others may not read, the login PATH's tool folders and
`exec.read_only_paths`, all read-only with the one list of secret locations hidden; no
`/run`, `/var`, `/srv`, `/opt`, `/home`, so no host socket by path and no secret outside),
and besides, read-only, what its entry names: its program's folder, shown as a PATH folder
is, and each argument that is an existing absolute path (a file's folder, or the project
above it: `entry_path`), unless that is too broad (`/`, a top-level folder, the home or
above it), with the secret locations in those folders hidden at any depth (one walk of
each when the server starts, as a workspace's index walks). Its mounts, in order:
1. that view's system part, the secrets of what the entry names hidden, and a fresh /proc
   with the keyrings' listings hidden;
2. its workspace (the entry's `cwd`, when it has one) read-write, with the secrets in it
   hidden and its protected entries (git directories and what git reads in them as code,
   editor folders, …) read-only at any depth, as for commands (kernel.sandbox.marks), since
   those run outside the sandbox later, and its marked links bound onto themselves before
   it starts (kernel.sandbox.pin); between calls all of it is read-only, writable only
   while a call is in flight (kernel.sandbox.workspace_gate: a server lives long, and what
   a thread of its own made between calls would not be undone);
3. the view's rest: Reins' own folders hidden where something shown holds them, its own
   state folder (under Reins' data) read-write as its HOME, and the root sealed.
The seccomp filter of commands (kernel.sandbox.seccomp) is installed on it too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from kernel.paths import AppPaths
from kernel.sandbox.bwrap import (
    NAMESPACE_FLAGS,
    NO_NESTED_USERNS,
    hide_secret,
    mark_mounts,
    proc_hides,
    resolv_mounts,
)
from kernel.sandbox.git_named import named_paths
from kernel.sandbox.guard import folder_secrets
from kernel.sandbox.marks import Mark
from kernel.sandbox.pin import staged_shell
from kernel.sandbox.samefiles import look_up, same_marks
from kernel.sandbox.seccomp import seccomp_args
from kernel.sandbox.view import View, inside, plan_view, too_broad, view_facts
from kernel.sandbox.workspace_index import WorkspaceIndex, sandbox_marks


class UnsafeServerSandbox(ValueError):
    """A workspace that would show what the sandbox hides (Reins' own folders, the home)."""


def server_bwrap_argv(
    bwrap: str,
    *,
    program: Sequence[str],
    state: Path,
    workspace: Path | str | None,
    real_home: Path,
    paths: AppPaths,
    disable_userns: bool = True,
    handshake_fds: tuple[int, int] | None = None,
    own_network: bool = True,
    resolv_conf: Path | None = None,
    marks: Mapping[str, Mark] | None = None,
    stage_fds: tuple[int, int] | None = None,
    seccomp_fd: int | None = None,
    path_vars: Iterable[str] = (),
    read_only_paths: Iterable[str] = (),
) -> list[str]:
    """`bwrap … -- PROGRAM` for one server (see the module docstring); it starts in its
    workspace, else in its state folder. Raises UnsafeServerSandbox for a workspace that is
    the home, or lies above it or in one of Reins' folders.

    With `handshake_fds` (info fd, block fd: kernel.sandbox.server_start) bwrap reports the
    sandbox and waits, and with `own_network` the server has a network namespace of its own.
    `marks` are `server_marks(...)` (made here when None); with a workspace, PROGRAM runs
    after the stage of `stage_fds` (kernel.sandbox.pin: its links pinned, the workspace made
    read-only), which needs `handshake_fds`. `seccomp_fd` holds the filter bwrap installs on
    PROGRAM (kernel.sandbox.seccomp, as for a command). `path_vars` (PATH-like strings: the
    login PATH, `exec.path`) and `read_only_paths` (`exec.read_only_paths`) are shown as for
    a command."""
    ws = safe_workspace(workspace, real_home, paths)
    home = os.path.realpath(real_home)
    named = entry_folders(program, home)
    view = server_view(program=program, state=str(state), workspace=ws, home=home,
                       paths=paths, path_vars=path_vars, read_only_paths=read_only_paths)
    argv = [bwrap, *NAMESPACE_FLAGS, *(NO_NESTED_USERNS if disable_userns else ())]
    if handshake_fds is not None:
        info_fd, block_fd = handshake_fds
        argv += [*(["--unshare-net"] if own_network else []), "--info-fd", str(info_fd),
                 "--block-fd", str(block_fd)]
    argv += seccomp_args(seccomp_fd)
    argv += view.system_argv()
    for folder in named:  # its secrets at any depth, as a workspace's
        index = WorkspaceIndex(folder, watch=False, excluded=tuple(_own_folders(paths)))
        argv += [arg for target, is_folder in folder_secrets(folder, index, home)
                 for arg in hide_secret(target, is_folder)]
    argv += proc_hides()
    if handshake_fds is not None and own_network and resolv_conf is not None:
        argv += resolv_mounts(resolv_conf)
    if ws is not None:
        if marks is None:
            marks = server_marks(ws, real_home, paths)
        if stage_fds is None or handshake_fds is None:
            raise ValueError("a server's workspace is made read-only from a stage")
        program = staged_shell(*stage_fds, program)
        argv += ["--bind", ws, ws, *mark_mounts(ws, marks.values())]
    argv += view.after_argv()
    argv += ["--chdir", ws or str(state), "--", *program]
    return argv


def server_view(*, program: Sequence[str], state: str, workspace: str | None, home: str,
                paths: AppPaths, path_vars: Iterable[str] = (),
                read_only_paths: Iterable[str] = ()) -> View:
    """What a server sees of the machine (see the module docstring): a command's view with
    its state folder as its home, and what its entry names."""
    own = [*path_vars, *([os.path.dirname(program[0])] if program and os.path.isabs(
        program[0]) else [])]
    return plan_view(view_facts(
        workspace=workspace, sandbox_home=os.path.realpath(state), home=home,
        own_folders=_own_folders(paths), path_vars=own,
        read_only_paths=[*map(os.path.realpath, read_only_paths),
                         *entry_folders(program, home)]))


def entry_folders(program: Sequence[str], home: str) -> list[str]:
    """The folders the arguments of an entry's program name (`entry_path`), each once."""
    return list(dict.fromkeys(shown for shown in (entry_path(arg, home) for arg in program[1:])
                              if shown is not None))


PROJECT_MARKERS = ("package.json", "pyproject.toml")
"""What marks the root of a project a server's script may import from: Node resolves a
package in every `node_modules` above the script, Python a project's own modules from its
root (the two languages MCP's SDKs are written in). `node ~/mcp/x/build/index.js` needs
`~/mcp/x/node_modules`, beside `build`, not below it."""


def entry_path(arg: str, home: str) -> str | None:
    """The folder an entry's argument names, shown to its server read-only: the argument
    when it is an existing absolute folder, its folder when a file, or the outermost
    folder above that holds a PROJECT_MARKERS file (below the first folder too broad to
    show: kernel.sandbox.view.too_broad); None for anything else, or a folder too broad."""
    if not os.path.isabs(arg) or not os.path.exists(arg):
        return None
    resolved = os.path.realpath(arg)
    folder = resolved if os.path.isdir(resolved) else os.path.dirname(resolved)
    if too_broad(folder, home):
        return None
    shown, above = folder, os.path.dirname(folder)
    while not too_broad(above, home):
        if any(os.path.isfile(os.path.join(above, marker)) for marker in PROJECT_MARKERS):
            shown = above
        above = os.path.dirname(above)
    return shown


def safe_workspace(workspace: Path | str | None, real_home: Path, paths: AppPaths
                   ) -> str | None:
    """The server's workspace, resolved; UnsafeServerSandbox for one that is the home, or
    lies above it or in one of Reins' folders."""
    if workspace is None:
        return None
    home, ws = os.path.realpath(real_home), os.path.realpath(workspace)
    if inside(home, ws) or any(inside(ws, o) for o in _own_folders(paths)):
        raise UnsafeServerSandbox(
            f"the workspace {ws} of a sandboxed server may not be the home folder, a folder "
            f"above it, or inside Reins' own folders: it would show what the sandbox hides")
    return ws


def server_marks(workspace: Path | str, real_home: Path, paths: AppPaths) -> dict[str, Mark]:
    """The secret and protected entries of a server's workspace (resolved and safe: see
    `safe_workspace`), as a command's sandbox has them (kernel.sandbox.guard)."""
    ws = os.path.realpath(workspace)
    home = os.path.realpath(real_home)
    index = WorkspaceIndex(ws, watch=False, excluded=tuple(_own_folders(paths)))
    named = named_paths(ws, index.marks, home=home, environ=os.environ)
    index.follow(named.names)
    same = same_marks(ws, look_up(home, ws, index.marks), index.linked)
    return sandbox_marks(ws, index, same, named)


def _own_folders(paths: AppPaths) -> list[str]:
    return list(dict.fromkeys(os.path.realpath(p) for p in (paths.config, paths.data)))
