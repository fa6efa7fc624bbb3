"""How a command is started on this platform: the argv that wraps the shell.

Every launcher ends its argv with `SHELL` (`/bin/sh -s`): the shell reads its script from
its stdin, a file the executor fills with `shell_script(command)`, one line that replaces it
with `/bin/sh -c COMMAND` (stdin /dev/null). So the command runs exactly as under
`/bin/sh -c`, and a sandbox can be made before its command is known (kernel.sandbox.standby).

- `BwrapLauncher` (Linux): bubblewrap builds the sandbox (see `kernel.sandbox.bwrap`) and
  waits, before it starts the command, until the kernel has set the resource limits on it
  (see `kernel.sandbox.handshake`). The command sees a private /tmp.
- `UnsandboxedLauncher`: only for a call the user explicitly approved while no sandbox is
  available. The `reaper.py` script applies the limits and makes sure nothing outlives the
  call; it confines nothing else (the environment is still built from the allowlist).

Slots for the other platforms (not implemented; `detect_sandbox` reports `none` there, so
every command needs an explicit approval):
- macOS: a `SandboxExecLauncher` will run `sandbox-exec -p PROFILE /bin/sh -c COMMAND` with a
  profile generated per call: `(deny default)`, reads allowed except the home folder and
  Reins' folders, writes only to the workspace, the sandbox home and a private TMPDIR,
  `(deny network*)` unless allowed, git hooks/config read-only. Limits via `setrlimit` in a
  reaper like `reaper.py`; process cleanup by process group (macOS has no PID namespaces).
- Windows: an `AppContainerLauncher` will start the command in an AppContainer (or a
  restricted token) inside a Job Object with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE (lifetime),
  JOB_OBJECT_LIMIT_PROCESS_MEMORY and ACTIVE_PROCESS limits, with capability SIDs for the
  workspace only and no internetClient capability unless allowed.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kernel.paths import AppPaths
from kernel.sandbox.bwrap import bwrap_argv
from kernel.sandbox.limits import ResourceLimits
from kernel.sandbox.marks import Mark
from kernel.sandbox.network import NetworkScope
from kernel.sandbox.pin import links_to_pin, staged_shell

REAPER = Path(__file__).with_name("reaper.py")
SHELL = ("/bin/sh", "-s")


def shell_script(command: str) -> bytes:
    """What `SHELL` reads: one simple command, so the shell reads all of it before it runs
    any of it (the redirection of stdin cannot cut the rest of the script off)."""
    return f"exec /bin/sh -c {shlex.quote(command)} </dev/null\n".encode()


@dataclass(frozen=True)
class LaunchRequest:
    cwd: Path
    workspace: Path
    network: NetworkScope
    limits: ResourceLimits
    """With the CPU limit filled in."""
    grace_s: float
    sandbox_home: Path
    real_home: Path
    paths: AppPaths
    read_only_paths: tuple[Path, ...] = ()
    path_vars: tuple[str, ...] = ()
    """PATH-like strings whose folders the sandbox shows read-only (kernel.sandbox.view)."""
    handshake_fds: tuple[int, int] | None = None
    """(info fd, block fd) of the start handshake, for a launcher whose `kernel_sets_limits`."""
    resolv_conf: Path | None = None
    """The resolv.conf of a command with the internet (kernel.sandbox.network)."""
    marks: tuple[Mark, ...] = ()
    """The workspace's secret and protected entries (kernel.sandbox.guard)."""
    stage_fds: tuple[int, int] | None = None
    """(ready fd, go fd) of the stage that waits while the kernel pins the marked links
    (kernel.sandbox.pin), for a launcher whose `kernel_sets_limits` when there are any,
    or mounts the transaction's overlay."""
    seccomp_fd: int | None = None
    """The seccomp filter (kernel.sandbox.seccomp), for a launcher whose `kernel_sets_limits`."""
    transaction: Path | None = None
    """The call's folder (`upper/`, `work/`) when the command runs as a transaction: the
    workspace is then an overlay whose upper layer is there (kernel.sandbox.bwrap)."""
    shown_secrets: tuple[tuple[str, bool], ...] = ()
    """The secret locations at any depth of `read_only_paths` (absolute; True for a
    folder), hidden (kernel.sandbox.guard.WorkspaceGuards.shown_secrets)."""

    @property
    def staged(self) -> bool:
        """The sandbox's program is a stage the binder works before (kernel.sandbox.pin)."""
        return self.transaction is not None or bool(
            links_to_pin(str(self.workspace), self.marks))


class Launcher(Protocol):
    @property
    def kind(self) -> str:
        """"bwrap", "none", … (reported to the model and the user)."""

    @property
    def private_tmp(self) -> bool:
        """The launcher gives the command its own /tmp; otherwise the executor makes a TMPDIR."""

    @property
    def signal_leader_first(self) -> bool:
        """On stop, SIGTERM only the launcher process (it forwards it and waits the grace);
        otherwise every process below it gets SIGTERM directly."""

    @property
    def isolates_network(self) -> bool:
        """Without network permission the command has no network (else it always has it)."""

    @property
    def kernel_sets_limits(self) -> bool:
        """The kernel sets the limits during a start handshake (else the launcher sets them)."""

    def argv(self, request: LaunchRequest) -> list[str]: ...


@dataclass(frozen=True)
class BwrapLauncher:
    bwrap: str
    disable_userns: bool = True
    """bubblewrap can forbid user namespaces inside (`--disable-userns`, 0.8 and later)."""
    kind: str = "bwrap"
    private_tmp: bool = True
    isolates_network: bool = True
    kernel_sets_limits: bool = True
    signal_leader_first: bool = False
    """bwrap dies on SIGTERM and takes the namespace with it at once; the command's own
    processes are signalled instead, so they get the grace period."""

    def argv(self, request: LaunchRequest) -> list[str]:
        if request.handshake_fds is None:
            raise ValueError("bubblewrap needs the start handshake: the limits are set there")
        if request.seccomp_fd is None:
            raise ValueError("bubblewrap needs the seccomp filter (kernel.sandbox.seccomp)")
        program: tuple[str, ...] = SHELL
        if request.staged:
            if request.stage_fds is None:
                raise ValueError("the overlay is mounted and the workspace's marked links "
                                 "are pinned from a stage")
            program = staged_shell(*request.stage_fds, SHELL, str(request.cwd)
                                   if request.transaction is not None else "")
        return bwrap_argv(
            self.bwrap,
            program=program,
            cwd=request.cwd,
            workspace=request.workspace,
            network=request.network == "host",
            resolv_conf=request.resolv_conf if request.network == "internet" else None,
            paths=request.paths,
            sandbox_home=request.sandbox_home,
            real_home=request.real_home,
            read_only_paths=request.read_only_paths,
            path_vars=request.path_vars,
            handshake_fds=request.handshake_fds,
            disable_userns=self.disable_userns,
            marks=request.marks,
            transaction=request.transaction,
            seccomp_fd=request.seccomp_fd,
            shown_secrets=request.shown_secrets,
        )


@dataclass(frozen=True)
class UnsandboxedLauncher:
    kind: str = "none"
    private_tmp: bool = False
    isolates_network: bool = False
    signal_leader_first: bool = True
    kernel_sets_limits: bool = False

    def argv(self, request: LaunchRequest) -> list[str]:
        limits = request.limits
        return [
            sys.executable, "-I", "-S", str(REAPER), f"{request.grace_s:g}",
            str(limits.address_space), str(limits.file_size), str(limits.processes),
            str(limits.cpu_s or 1), str(limits.cpu_hard()),
            "--", *SHELL,
        ]  # fmt: skip
