"""The bubblewrap command line for one command.

Mounts, in order (later ones lie on top of earlier ones):
1. the root read-only, a minimal /dev, a fresh /proc (only the sandbox's own processes), a
   private /tmp;
2. the user's home hidden under an empty tmpfs (except the toolchain folders the user lists
   in `read_only_paths`, shown read-only), and the sockets of the user's session
   (/run/user: D-Bus, keyring and agent sockets; the Docker socket) hidden;
3. the workspace bound read-write (if it contains credential folders of the home, those are
   hidden again);
4. Reins' own config and data folders hidden, then the sandbox home (HOME) bound read-write;
5. inside the workspace, git hooks, git config and the other protected files of the path
   policy re-bound read-only (a missing `.git/hooks` is created empty and protected, since a
   hook written there would later run outside the sandbox);
6. the hiding tmpfs mounts remounted read-only, so writes into the real home fail.
The command is its own session (`--new-session`), the init of a new PID namespace dies with
Reins (`--die-with-parent`), and the network is a private, empty namespace unless allowed.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kernel.paths import AppPaths
from kernel.tools.pathpolicy import DEFAULT_PROTECTED

NAMESPACE_FLAGS = (
    "--die-with-parent",
    "--new-session",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
)
SESSION_SOCKETS = ("/run/user", "/var/run/docker.sock", "/run/docker.sock")
HOME_SECRETS = (
    ".ssh", ".aws", ".gnupg", ".netrc", ".config", ".local/share/keyrings", ".mozilla",
    ".docker", ".kube", ".pki", ".password-store", ".azure", ".gcloud",
)  # fmt: skip


def base_mounts() -> list[str]:
    return ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _hide(path: Path) -> list[str]:
    """Mount something empty over `path` (a tmpfs for a folder, /dev/null for a file)."""
    if path.is_dir() and not path.is_symlink():
        return ["--tmpfs", str(path)]
    if path.exists() or path.is_socket():
        return ["--ro-bind", "/dev/null", str(path)]
    return []


def _protected_in(workspace: Path) -> Iterable[Path]:
    for pattern in DEFAULT_PROTECTED:
        target = workspace / pattern.removesuffix("/**")
        if target.exists() and not target.is_symlink():
            yield target


def bwrap_argv(
    bwrap: str,
    *,
    command: str,
    cwd: Path,
    workspace: Path,
    network: bool,
    paths: AppPaths,
    sandbox_home: Path,
    real_home: Path,
    read_only_paths: Iterable[Path] = (),
) -> list[str]:
    """The full argv: `bwrap … -- /bin/sh -c COMMAND`. Paths must be absolute and resolved."""
    argv = [bwrap, *NAMESPACE_FLAGS]
    if not network:
        argv.append("--unshare-net")
    argv += base_mounts()
    read_only_later: list[Path] = []
    if real_home.is_dir() and real_home != Path("/") and not _inside(real_home, workspace):
        argv += ["--tmpfs", str(real_home)]
        read_only_later.append(real_home)
        for extra in read_only_paths:
            if extra.exists() and _inside(extra, real_home):
                argv += ["--ro-bind", str(extra), str(extra)]
    for socket in SESSION_SOCKETS:
        real = Path(socket).resolve()
        if not _inside(workspace, real):
            argv += _hide(real)
    argv += ["--bind", str(workspace), str(workspace)]
    for name in HOME_SECRETS:
        secret = real_home / name
        if _inside(secret, workspace) and secret != workspace:
            argv += _hide(secret)
    for own in (paths.config, paths.data):
        own = own.resolve()
        if own.is_dir() and not _inside(workspace, own):
            argv += ["--tmpfs", str(own)]
            read_only_later.append(own)
    argv += ["--bind", str(sandbox_home), str(sandbox_home)]
    git = workspace / ".git"
    if git.is_dir() and not git.is_symlink() and not (git / "hooks").exists():
        argv += ["--tmpfs", str(git / "hooks"), "--remount-ro", str(git / "hooks")]
    for target in _protected_in(workspace):
        argv += ["--ro-bind", str(target), str(target)]
    for hidden in read_only_later:
        argv += ["--remount-ro", str(hidden)]
    argv += ["--chdir", str(cwd), "--", "/bin/sh", "-c", command]
    return argv
