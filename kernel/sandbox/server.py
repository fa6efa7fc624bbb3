"""The bubblewrap command line for an MCP server its entry sandboxes (`"sandbox": true`).

A server is not a command: it lives as long as the kernel, speaks over stdin and stdout,
needs the network (APIs, fetchers, package downloads) and a place for its caches. So it gets
the same namespaces as a command (`NAMESPACE_FLAGS`: its own user namespace with no
capability, pid, ipc, uts; no nested user namespace where bubblewrap can forbid it) and,
with `own_network`, a network namespace of its own that kernel.sandbox.server_start gives
the internet through pasta (not this machine's loopback services or abstract sockets);
without it, it shares the host's network (the user's `exec.local_network`). Its mounts, in
order (later ones lie on top of earlier ones):
1. the root read-only, the user's home with it (git identity and the user's tools are
   read, nothing in the home can be changed), a minimal /dev, a fresh /proc, a private /tmp;
2. the secret locations of kernel.pathrules in the home hidden, and the sockets of the
   user's session (/run/user: D-Bus, keyring, agents; the Docker socket);
3. its workspace (the entry's `cwd`, when it has one) read-write, with the secrets in it
   hidden and its protected entries (git directories and what git reads in them as code,
   editor folders, …) read-only at any depth, as for commands (kernel.sandbox.marks), since
   those run outside the sandbox later, and its marked links bound onto themselves before
   it starts (kernel.sandbox.pin); between calls all of it is read-only, writable only
   while a call is in flight (kernel.sandbox.workspace_gate: a server lives long, and what
   a thread of its own made between calls would not be undone);
4. Reins' own config and data folders hidden (the sandbox homes commands write lie there);
5. its own state folder (under Reins' data) read-write: its HOME-independent caches;
6. the hiding tmpfs mounts of step 4 remounted read-only.
The seccomp filter of commands (kernel.sandbox.seccomp) is installed on it too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from kernel.paths import AppPaths
from kernel.sandbox.bwrap import (
    NAMESPACE_FLAGS,
    NO_NESTED_USERNS,
    _hide,
    _session_sockets,
    base_mounts,
    home_secrets,
    mark_mounts,
    proc_hides,
    resolv_mounts,
)
from kernel.sandbox.git_named import named_paths
from kernel.sandbox.marks import Mark
from kernel.sandbox.pin import staged_shell
from kernel.sandbox.samefiles import look_up, same_marks
from kernel.sandbox.seccomp import seccomp_args
from kernel.sandbox.view import inside
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
) -> list[str]:
    """`bwrap … -- PROGRAM` for one server (see the module docstring); it starts in its
    workspace, else in its state folder. Raises UnsafeServerSandbox for a workspace that is
    the home, or lies above it or in one of Reins' folders.

    With `handshake_fds` (info fd, block fd: kernel.sandbox.server_start) bwrap reports the
    sandbox and waits, and with `own_network` the server has a network namespace of its own.
    `marks` are `server_marks(...)` (made here when None); with a workspace, PROGRAM runs
    after the stage of `stage_fds` (kernel.sandbox.pin: its links pinned, the workspace made
    read-only), which needs `handshake_fds`. `seccomp_fd` holds the filter bwrap installs on
    PROGRAM (kernel.sandbox.seccomp, as for a command)."""
    home = os.path.realpath(real_home)
    ws = safe_workspace(workspace, real_home, paths)
    argv = [bwrap, *NAMESPACE_FLAGS, *(NO_NESTED_USERNS if disable_userns else ())]
    if handshake_fds is not None:
        info_fd, block_fd = handshake_fds
        argv += [*(["--unshare-net"] if own_network else []), "--info-fd", str(info_fd),
                 "--block-fd", str(block_fd)]
    argv += seccomp_args(seccomp_fd)
    argv += base_mounts()
    argv += proc_hides()
    if handshake_fds is not None and own_network and resolv_conf is not None:
        argv += resolv_mounts(resolv_conf)
    for secret in home_secrets(home):
        argv += _hide(secret)
    for socket in _session_sockets():
        argv += _hide(socket)
    if ws is not None:
        if marks is None:
            marks = server_marks(ws, real_home, paths)
        if stage_fds is None or handshake_fds is None:
            raise ValueError("a server's workspace is made read-only from a stage")
        program = staged_shell(*stage_fds, program)
        argv += ["--bind", ws, ws, *mark_mounts(ws, marks.values())]
    hidden = [folder for folder in _own_folders(paths) if os.path.isdir(folder)]
    for folder in hidden:
        argv += ["--tmpfs", folder]
    argv += ["--bind", str(state), str(state)]
    for folder in hidden:
        argv += ["--remount-ro", folder]
    argv += ["--chdir", ws or str(state), "--", *program]
    return argv


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
