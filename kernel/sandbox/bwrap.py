"""The bubblewrap command line for one command.

Mounts, in order (later ones lie on top of earlier ones):
1. the view of the machine, built from nothing (kernel.sandbox.view: the system's program
   and library folders, /etc minus what others may not read, the folders the login PATH
   and `exec.read_only_paths` show, all read-only with their secret locations hidden; a
   minimal /dev, a fresh /proc (the keyrings' listings hidden), a private /tmp; no /run,
   /var, /srv, /opt, /home, ...);
2. for a command with the internet, the resolv.conf of kernel.sandbox.network;
3. the workspace: for a command run as a transaction (the kernel's), bound read-only with
   its secrets hidden, and the call's folder at TRANSACTION_FOLDER; the binder then mounts
   the overlay on it whose upper layer is that folder (kernel.sandbox.binder), so what the
   command writes is a change set judged after it (kernel.transaction), never a write to
   the workspace. Otherwise (a sandbox without transactions) bound read-write, with the
   marks of the workspace index at any depth (kernel.sandbox.marks): secrets hidden,
   protected entries and git's code entries read-only, git directories bound onto
   themselves; what such a command makes anew among them is undone after it
   (kernel.sandbox.revert), and its marked links are pinned (kernel.sandbox.pin);
4. the rest of the view: Reins' own config and data folders hidden where something shown
   holds them, the sandbox home (HOME) bound read-write, and the root sealed read-only.
The command is its own session (`--new-session`), in a user namespace of its own with no
capability (`--cap-drop ALL`; no nested user namespace where bubblewrap can forbid it), the
init of a new PID namespace dies with Reins (`--die-with-parent`), the network is a
private, empty namespace unless allowed, and a seccomp filter refuses the system calls a
command never needs (kernel.sandbox.seccomp: keyrings, mounts, namespaces, bpf, …).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from kernel.paths import AppPaths
from kernel.sandbox.marks import Mark
from kernel.sandbox.seccomp import seccomp_args
from kernel.sandbox.view import (
    SEALED_ROOT,
    View,
    host_facts,
    plan_view,
    system_mounts,
    view_facts,
)

NAMESPACE_FLAGS = (
    "--die-with-parent",
    "--new-session",
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--cap-drop",
    "ALL",
)
"""A user namespace of its own and no capability in it, for root as for anyone: without
`--unshare-user --cap-drop ALL`, bubblewrap started by uid 0 keeps every capability inside
(umount /proc, remount / read-write, nsenter into the host)."""
NO_NESTED_USERNS = ("--disable-userns",)
"""No user namespace can be made inside (where it would bring a full set of capabilities
back, if only over namespaces of its own): bubblewrap 0.8 and later."""
TRANSACTION_FOLDER = "/tmp/.reins-transaction"
"""Where a command's sandbox shows the call's folder until the binder has mounted the
overlay from it and detached it (on the sandbox's private /tmp)."""


def probe_mounts() -> list[str]:
    """The system part of a command's view, sealed: what a probe of the sandbox runs in
    (kernel.sandbox.detect, kernel.sandbox.doctor)."""
    return [arg for mount in (*system_mounts(host_facts()), SEALED_ROOT)
            for arg in mount.argv()]


def command_view(*, workspace: str, sandbox_home: str, real_home: str, paths: AppPaths,
                 read_only_paths: Iterable[str] = (), path_vars: Iterable[str] = ()
                 ) -> View:
    """The view of a command in `workspace` (kernel.sandbox.view), as the machine is now.
    `path_vars` are PATH-like strings (the kernel's PATH, the user's `exec.path`)."""
    return plan_view(view_facts(
        workspace=workspace, sandbox_home=sandbox_home, home=real_home,
        own_folders=(os.path.realpath(paths.config), os.path.realpath(paths.data)),
        path_vars=path_vars, read_only_paths=read_only_paths))


PROC_KEYS = ("/proc/keys", "/proc/key-users")
"""The kernel keyrings' listings: the name of every key the caller's session keyring holds
(the keyring calls themselves are refused by kernel.sandbox.seccomp)."""


def proc_hides() -> list[str]:
    """Mounts (after the sandbox's /proc) that hide `PROC_KEYS`."""
    return [arg for path in PROC_KEYS for arg in ("--ro-bind", "/dev/null", path)]


def resolv_mounts(resolv_conf: Path) -> list[str]:
    """`resolv_conf` (kernel.sandbox.network) shown as the system's resolv.conf."""
    target = os.path.realpath("/etc/resolv.conf")
    return ["--ro-bind", str(resolv_conf), target] if os.path.isfile(target) else []


def hidden_secrets(workspace: str, marks: Iterable[Mark]) -> list[tuple[str, bool]]:
    """The workspace's secrets to hide, outermost first: (absolute path, is a folder). One
    inside a hidden folder is hidden with it."""
    hidden: list[tuple[str, bool]] = []
    folders: list[str] = []
    for mark in sorted(marks, key=lambda m: m.path):
        if mark.kind != "secret" or mark.entry not in ("dir", "file"):
            continue
        if any(mark.path.startswith(folder + "/") for folder in folders):
            continue
        if mark.entry == "dir":
            folders.append(mark.path)
        hidden.append((os.path.join(workspace, mark.path), mark.entry == "dir"))
    return hidden


def mark_mounts(workspace: str, marks: Iterable[Mark]) -> list[str]:
    """The mounts of the workspace index's marks (paths relative to `workspace`). A mark
    inside a hidden secret folder (where a protected link or a git config leads:
    `.vscode -> .ssh/sub`) is hidden with it: binding it would show it again (and the empty
    folder hiding the secret cannot hold its mount point)."""
    argv: list[str] = []
    hidden: list[str] = []
    for mark in sorted(marks, key=lambda m: m.path):
        target = os.path.join(workspace, mark.path)
        if mark.entry not in ("dir", "file"):
            continue  # a socket or fifo holds nothing; where a link leads is a mark itself
        if any(mark.path.startswith(folder + "/") for folder in hidden):
            continue
        if mark.kind == "secret":
            hidden.append(mark.path)
            argv += hide_secret(target, mark.entry == "dir")
        elif mark.kind == "git-dir":
            argv += ["--bind", target, target]
            hooks = os.path.join(target, "hooks")
            if not os.path.lexists(hooks):
                argv += ["--tmpfs", hooks, "--remount-ro", hooks]
        else:
            argv += ["--ro-bind", target, target]
    return argv


def hide_secret(target: str, folder: bool) -> list[str]:
    return (["--tmpfs", target, "--remount-ro", target] if folder
            else ["--ro-bind", "/dev/null", target])


def secret_mounts(folder: str, marks: Iterable[Mark]) -> list[str]:
    """The mounts that hide the secrets among `marks` (a workspace index's, relative to
    `folder`, at any depth)."""
    return [arg for target, is_folder in hidden_secrets(folder, marks)
            for arg in hide_secret(target, is_folder)]


def transaction_mounts(workspace: str, marks: Iterable[Mark], folder: Path) -> list[str]:
    """The workspace of a command run as a transaction: bound read-only with its secrets
    hidden (the lower layer of the overlay the binder mounts on it, kernel.sandbox.binder),
    and the call's `folder` (its `upper/` and `work/`) at TRANSACTION_FOLDER for the binder.
    No protected entry needs a mark: the lower layer cannot be written, and what the
    command changed is judged from the upper layer after it (kernel.transaction)."""
    return ["--ro-bind", workspace, workspace, *secret_mounts(workspace, marks),
            "--bind", str(folder), TRANSACTION_FOLDER]


def bwrap_argv(
    bwrap: str,
    *,
    program: Sequence[str],
    cwd: Path,
    workspace: Path,
    network: bool,
    paths: AppPaths,
    sandbox_home: Path,
    real_home: Path,
    read_only_paths: Iterable[Path] = (),
    path_vars: Iterable[str] = (),
    handshake_fds: tuple[int, int],
    disable_userns: bool = True,
    resolv_conf: Path | None = None,
    marks: Iterable[Mark] = (),
    transaction: Path | None = None,
    seccomp_fd: int | None = None,
    shown_secrets: Iterable[tuple[str, bool]] = (),
) -> list[str]:
    """The full argv: `bwrap … -- PROGRAM`. Paths must be absolute and resolved.

    `handshake_fds` are bwrap's `--info-fd` and `--block-fd` (see `kernel.sandbox.handshake`).
    `network` shares the host's network namespace (the user's `exec.local_network`); without
    it the command has a namespace of its own, empty, or given the internet by pasta during
    the handshake, in which case `resolv_conf` (kernel.sandbox.network) is its resolv.conf.
    `read_only_paths` and the folders of `path_vars` (PATH-like strings) are shown read-only
    (kernel.sandbox.view). `marks` are the workspace index's (kernel.sandbox.workspace_index).
    With `transaction` (the call's folder) the workspace is the lower layer of an overlay
    (`transaction_mounts`). `shown_secrets` (absolute path, is a folder) are the secret
    locations at any depth of `read_only_paths`, hidden on them.
    `seccomp_fd` holds the filter bwrap installs on PROGRAM
    (kernel.sandbox.seccomp.open_program).
    """
    ws = str(workspace)
    view = command_view(workspace=ws, sandbox_home=str(sandbox_home), real_home=str(real_home),
                        paths=paths, read_only_paths=map(str, read_only_paths),
                        path_vars=path_vars)
    info_fd, block_fd = handshake_fds
    argv = [bwrap, *NAMESPACE_FLAGS, *(NO_NESTED_USERNS if disable_userns else ()),
            "--info-fd", str(info_fd), "--block-fd", str(block_fd)]
    argv += seccomp_args(seccomp_fd)
    if not network:
        argv.append("--unshare-net")
    argv += view.system_argv()
    argv += [arg for target, folder in shown_secrets for arg in hide_secret(target, folder)]
    argv += proc_hides()
    if resolv_conf is not None:
        argv += resolv_mounts(resolv_conf)
    argv += (transaction_mounts(ws, marks, transaction) if transaction is not None
             else ["--bind", ws, ws, *mark_mounts(ws, marks)])
    argv += view.after_argv()
    argv += ["--chdir", str(cwd), "--", *program]
    return argv
