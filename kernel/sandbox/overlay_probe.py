"""Can commands run as transactions here? Checked once per process by really mounting one.

A command's workspace is an overlayfs mounted in its sandbox's user namespace
(kernel.sandbox.binder). That needs a kernel that lets an unprivileged user mount overlayfs
inside a user namespace of its own (Linux 5.11 and later, unless switched off). The probe
does exactly that, in a throwaway namespace (util-linux's `unshare`), over empty folders.
Where it fails, commands still run in bubblewrap with the workspace writable and its
protected entries read-only (kernel.sandbox.bwrap), and every command asks: what a command
changes can then not be held for review nor undone.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

PROBE_TIMEOUT_S = 10.0
FIX = ("use Linux 5.11 or later with unprivileged user namespaces allowed, and util-linux's "
       "unshare and mount installed")


@dataclass(frozen=True)
class OverlayStatus:
    available: bool
    reason: str
    """Why commands can (not) run as transactions, in one sentence."""


@functools.cache
def overlay_status() -> OverlayStatus:
    """The overlay state for this process (the probe runs once)."""
    unshare, mount = shutil.which("unshare"), shutil.which("mount")
    if unshare is None or mount is None:
        return OverlayStatus(False, f"util-linux's unshare or mount is missing ({FIX})")
    with tempfile.TemporaryDirectory(prefix="reins-overlay-probe-") as root:
        layers = [Path(root, name) for name in ("lower", "upper", "work", "merged")]
        for layer in layers:
            layer.mkdir()
        lower, upper, work, merged = map(str, layers)
        try:
            done = subprocess.run(
                [unshare, "--user", "--map-root-user", "--mount", mount, "-t", "overlay",
                 "overlay", "-o", f"lowerdir={lower},upperdir={upper},workdir={work}", merged],
                capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return OverlayStatus(False, f"the overlay probe could not run ({exc}; {FIX})")
        finally:
            for leftover in Path(work).iterdir():  # the overlay's work folder has mode 0
                leftover.chmod(0o700)
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return OverlayStatus(False, f"an overlay cannot be mounted in a user namespace here "
                                    f"({said}; {FIX})")
    return OverlayStatus(True, "each command's workspace is an overlay: what it changes is "
                               "judged after it, held or applied, and undoable")
