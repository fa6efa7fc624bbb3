"""Is a sandbox available here? Checked once per configuration by really creating it."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from dataclasses import dataclass

from kernel.sandbox.bwrap import NAMESPACE_FLAGS, base_mounts

FIX_INSTALL = (
    "apt-get install bubblewrap  (Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap)"
)
FIX_USERNS = (
    "allow unprivileged user namespaces: `sysctl -w kernel.unprivileged_userns_clone=1` "
    "(Debian), or on Ubuntu 24.04+ `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` "
    "or an AppArmor profile for bwrap; in a container, run it with --privileged or allow "
    "user namespaces"
)
FIX_PRLIMIT = "apt-get install util-linux  (it provides prlimit, which applies the resource limits)"
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
    prlimit_path: str = ""
    version: str = ""


def detect_sandbox(bwrap: str = "bwrap", prlimit: str = "prlimit") -> SandboxStatus:
    """The sandbox state for these programs (cached: the probe runs once per pair)."""
    return _detect(bwrap, prlimit)


@functools.lru_cache(maxsize=8)
def _detect(bwrap: str, prlimit: str) -> SandboxStatus:
    if sys.platform != "linux":
        return SandboxStatus("none", False, f"no sandbox launcher for {sys.platform} yet",
                             FIX_PLATFORM)
    bwrap_path = shutil.which(bwrap)
    if bwrap_path is None:
        return SandboxStatus("none", False, f"bubblewrap ({bwrap}) is not installed",
                             FIX_INSTALL)
    prlimit_path = shutil.which(prlimit)
    if prlimit_path is None:
        return SandboxStatus("none", False, f"prlimit ({prlimit}) is not installed",
                             FIX_PRLIMIT, bwrap_path)
    probe = [bwrap_path, *NAMESPACE_FLAGS, "--unshare-net", *base_mounts(), "--", "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=PROBE_TIMEOUT_S,
                              env={"PATH": "/usr/bin:/bin"}, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus("none", False, f"bubblewrap could not be started: {exc}",
                             FIX_INSTALL, bwrap_path, prlimit_path)
    version = _version(bwrap_path)
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip() or f"exit code {done.returncode}"
        return SandboxStatus("none", False, f"bubblewrap cannot create its namespaces: {err}",
                             FIX_USERNS, bwrap_path, prlimit_path, version)
    return SandboxStatus("bwrap", True,
                         "bubblewrap creates pid, ipc, uts, net and mount namespaces here",
                         "", bwrap_path, prlimit_path, version)


def _version(bwrap_path: str) -> str:
    try:
        done = subprocess.run([bwrap_path, "--version"], capture_output=True, timeout=5,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.decode("utf-8", "replace").strip()
