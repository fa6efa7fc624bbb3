"""Is a sandbox available here? Checked once per configuration by really creating it, with
the seccomp filter (kernel.sandbox.seccomp): where there is none for this architecture, or
the kernel cannot load it, there is no sandbox (fail closed: every command is asked)."""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass

from kernel.sandbox import seccomp
from kernel.sandbox.bwrap import NAMESPACE_FLAGS, NO_NESTED_USERNS, probe_mounts
from kernel.sandbox.handshake import Handshake, HandshakeError
from kernel.sandbox.limits import ResourceLimits
from kernel.sandbox.pids import CgroupError, ProcessLimit, process_limit, remove_when_empty

FIX_INSTALL = (
    "apt-get install bubblewrap  (Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap)"
)
FIX_USERNS = (
    "allow unprivileged user namespaces: `sysctl -w kernel.unprivileged_userns_clone=1` "
    "(Debian), or on Ubuntu 24.04+ `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` "
    "or an AppArmor profile for bwrap; in a container, run it with --privileged or allow "
    "user namespaces"
)
FIX_LIMITS = (
    "use a bubblewrap that is not installed setuid root (the distribution's package, with "
    "user namespaces allowed): Reins sets the resource limits on the sandbox it starts"
)
FIX_ARCH = (
    "none yet: Reins' seccomp filter knows the system calls of x86_64 and aarch64 only; on "
    "this machine every command needs your explicit approval"
)
FIX_PLATFORM = (
    "none yet: on this system every command needs your explicit approval "
    "(macOS sandbox-exec and Windows launchers are planned)"
)
PROBE_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class SandboxStatus:
    kind: str
    """"bwrap" when commands run sandboxed, else "none"."""
    available: bool
    reason: str
    """Why the sandbox is (not) available, in one sentence."""
    fix: str = ""
    """What the user can do to get a sandbox ('' when available)."""
    bwrap_path: str = ""
    version: str = ""
    nested_userns_blocked: bool = False
    """Commands cannot make user namespaces of their own (bubblewrap's `--disable-userns`)."""
    process_limit: ProcessLimit = "none"
    """What enforces the process limit (kernel.sandbox.pids)."""


def detect_sandbox(bwrap: str = "bwrap") -> SandboxStatus:
    """The sandbox state for this program (cached: the probe runs once per program)."""
    return _detect(bwrap)


@functools.lru_cache(maxsize=8)
def _detect(bwrap: str) -> SandboxStatus:
    if sys.platform != "linux":
        return SandboxStatus("none", False, f"no sandbox launcher for {sys.platform} yet",
                             FIX_PLATFORM)
    bwrap_path = shutil.which(bwrap)
    if bwrap_path is None:
        return SandboxStatus("none", False, f"bubblewrap ({bwrap}) is not installed",
                             FIX_INSTALL)
    if seccomp.native_arch() is None:
        return SandboxStatus("none", False, f"Reins has no seccomp filter for the "
                             f"{platform.machine()} architecture", FIX_ARCH, bwrap_path)
    try:
        nested_blocked = True
        returncode, err, limits_error = _probe(bwrap_path, NO_NESTED_USERNS)
        if returncode != 0 and NO_NESTED_USERNS[0] in err:  # an older bubblewrap
            nested_blocked = False
            returncode, err, limits_error = _probe(bwrap_path, ())
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus("none", False, f"bubblewrap could not be started: {exc}",
                             FIX_INSTALL, bwrap_path)
    version = _version(bwrap_path)
    if returncode != 0 and not (limits_error and returncode == -signal.SIGKILL):
        err = err or f"exit code {returncode}"
        return SandboxStatus("none", False, f"bubblewrap cannot create its namespaces: {err}",
                             FIX_USERNS, bwrap_path, version)
    if limits_error:
        return SandboxStatus("none", False, f"Reins cannot limit the sandbox: {limits_error}",
                             FIX_LIMITS, bwrap_path, version)
    return SandboxStatus("bwrap", True,
                         "bubblewrap creates user (no capabilities), pid, ipc, uts, net and "
                         "mount namespaces and loads a seccomp filter here, and Reins sets the "
                         "resource limits inside",
                         "", bwrap_path, version, nested_blocked, process_limit())


def _probe(bwrap_path: str, extra: tuple[str, ...]) -> tuple[int, str, str]:
    """Start a sandbox the way commands start: (exit code, bwrap's message, limits error)."""
    handshake = Handshake()
    info_fd, block_fd = handshake.child_fds
    filter_fd = seccomp.open_program()
    argv = [bwrap_path, *NAMESPACE_FLAGS, *extra, "--info-fd", str(info_fd),
            "--block-fd", str(block_fd), *seccomp.seccomp_args(filter_fd), "--unshare-net",
            *probe_mounts(), "--", "/bin/true"]
    limits_error = ""
    try:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin"},
                                    pass_fds=(*handshake.child_fds, filter_fd),
                                    start_new_session=True)
        finally:
            os.close(filter_fd)
        handshake.started()
        try:
            handshake.complete(ResourceLimits().for_timeout(PROBE_TIMEOUT_S), PROBE_TIMEOUT_S)
        except HandshakeError as exc:
            limits_error = str(exc)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        try:
            _, stderr = proc.communicate(timeout=PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    finally:
        handshake.close()
        if handshake.cgroup is not None:
            with contextlib.suppress(CgroupError):
                remove_when_empty(handshake.cgroup)
    return proc.returncode, stderr.decode("utf-8", "replace").strip(), limits_error


def _version(bwrap_path: str) -> str:
    try:
        done = subprocess.run([bwrap_path, "--version"], capture_output=True, timeout=5,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.decode("utf-8", "replace").strip()
