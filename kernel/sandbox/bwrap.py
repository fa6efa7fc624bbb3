"""The bubblewrap command line for one command.

Mounts, in order (later ones lie on top of earlier ones):
1. the root read-only, a minimal /dev, a fresh /proc (only the sandbox's own processes; the
   keyrings' listings hidden), a private /tmp;
2. the user's home hidden under an empty tmpfs (except the toolchain folders the user lists
   in `read_only_paths`, shown read-only), and the sockets of the user's session
   (/run/user: D-Bus, keyring and agent sockets; the Docker socket) hidden;
3. the workspace bound read-write;
4. inside it, at any depth, the marks of the workspace index (kernel.sandbox.marks): every
   secret hidden, every protected entry and every entry of a git directory git reads as
   code bound read-only, every git directory bound onto itself (it cannot be renamed or
   replaced; a missing `hooks/` in one is created empty and read-only);
5. Reins' own config and data folders hidden (unless the hidden home already hides them and
   nothing bound above shows them again), then the sandbox home (HOME) bound read-write;
6. the hiding tmpfs mounts remounted read-only, so writes into the real home fail.
What a command makes anew among these is undone after it (kernel.sandbox.revert). The marked
links, which bubblewrap cannot bind (it follows them), are bound onto themselves by the
kernel before the command starts (kernel.sandbox.pin; the program is then a shell stage).
The command is its own session (`--new-session`), in a user namespace of its own with no
capability (`--cap-drop ALL`; no nested user namespace where bubblewrap can forbid it), the
init of a new PID namespace dies with Reins (`--die-with-parent`), the network is a
private, empty namespace unless allowed, and a seccomp filter refuses the system calls a
command never needs (kernel.sandbox.seccomp: keyrings, mounts, namespaces, bpf, …).
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from kernel.hardlinks import anchored
from kernel.pathrules import SECRET_PATTERNS
from kernel.paths import AppPaths
from kernel.sandbox.marks import Mark
from kernel.sandbox.seccomp import seccomp_args

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
SESSION_SOCKETS = ("/run/user", "/var/run/docker.sock", "/run/docker.sock")


def base_mounts() -> list[str]:
    return ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]


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


@functools.cache
def _session_sockets() -> tuple[str, ...]:
    """The session socket paths with symlinks resolved (/var/run is often /run)."""
    return tuple(dict.fromkeys(os.path.realpath(p) for p in SESSION_SOCKETS))


def _inside(path: str, root: str) -> bool:
    """`path` is `root` or below it (both absolute and normalized)."""
    return path == root or root == "/" or path.startswith(root + "/")


def _overlaps(path: str, others: Iterable[str]) -> bool:
    """`path` lies under or above one of `others`."""
    return any(_inside(path, other) or _inside(other, path) for other in others)


def _hide(path: str) -> list[str]:
    """Mount something empty over `path` (a tmpfs for a folder, /dev/null for a file)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return []
    if stat.S_ISDIR(mode):
        return ["--tmpfs", path]
    if stat.S_ISLNK(mode):
        return []
    return ["--ro-bind", "/dev/null", path]


def home_secrets(home: str) -> list[str]:
    """The secret locations of kernel.pathrules anchored at the home folder (`~/.ssh`,
    `~/.cargo/credentials.toml`, `~/.bash_history`), as they exist now."""
    return anchored(home, SECRET_PATTERNS)


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
            argv += (["--tmpfs", target, "--remount-ro", target] if mark.entry == "dir"
                     else ["--ro-bind", "/dev/null", target])
        elif mark.kind == "git-dir":
            argv += ["--bind", target, target]
            hooks = os.path.join(target, "hooks")
            if not os.path.lexists(hooks):
                argv += ["--tmpfs", hooks, "--remount-ro", hooks]
        else:
            argv += ["--ro-bind", target, target]
    return argv


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
    handshake_fds: tuple[int, int],
    disable_userns: bool = True,
    resolv_conf: Path | None = None,
    marks: Iterable[Mark] = (),
    seccomp_fd: int | None = None,
) -> list[str]:
    """The full argv: `bwrap … -- PROGRAM`. Paths must be absolute and resolved.

    `handshake_fds` are bwrap's `--info-fd` and `--block-fd` (see `kernel.sandbox.handshake`).
    `network` shares the host's network namespace (the user's `exec.local_network`); without
    it the command has a namespace of its own, empty, or given the internet by pasta during
    the handshake, in which case `resolv_conf` (kernel.sandbox.network) is its resolv.conf.
    `marks` are the workspace index's (kernel.sandbox.workspace_index). `seccomp_fd` holds
    the filter bwrap installs on PROGRAM (kernel.sandbox.seccomp.open_program).
    """
    ws, home = str(workspace), str(real_home)
    info_fd, block_fd = handshake_fds
    argv = [bwrap, *NAMESPACE_FLAGS, *(NO_NESTED_USERNS if disable_userns else ()),
            "--info-fd", str(info_fd), "--block-fd", str(block_fd)]
    argv += seccomp_args(seccomp_fd)
    if not network:
        argv.append("--unshare-net")
    argv += base_mounts()
    argv += proc_hides()
    if resolv_conf is not None:
        argv += resolv_mounts(resolv_conf)
    read_only_later: list[str] = []
    shown = [ws]  # bound over hidden folders: what lies under or above them shows again
    home_hidden = home != "/" and os.path.isdir(home) and not _inside(home, ws)
    if home_hidden:
        argv += ["--tmpfs", home]
        read_only_later.append(home)
        extras = [e for e in map(str, read_only_paths) if _inside(e, home)
                  and os.path.exists(e)]
        for extra in extras:
            argv += ["--ro-bind", extra, extra]
            shown.append(extra)
        for secret in home_secrets(home) if extras else ():
            if any(_inside(secret, extra) for extra in extras) and not _inside(secret, ws):
                argv += _hide(secret)
    for real in _session_sockets():
        if not _inside(ws, real):
            argv += _hide(real)
    argv += ["--bind", ws, ws, *mark_mounts(ws, marks)]
    for own in (os.path.realpath(paths.config), os.path.realpath(paths.data)):
        if _inside(ws, own) or not os.path.isdir(own):
            continue
        if home_hidden and _inside(own, home) and not _overlaps(own, shown):
            continue  # already hidden with the home (Reins' default layout)
        argv += ["--tmpfs", own]
        read_only_later.append(own)
    argv += ["--bind", str(sandbox_home), str(sandbox_home)]
    for hidden in read_only_later:
        argv += ["--remount-ro", hidden]
    argv += ["--chdir", str(cwd), "--", *program]
    return argv
