"""Can commands run as transactions here? Checked once per process by really mounting one.

A command's workspace is an overlayfs mounted in its sandbox's user namespace
(kernel.sandbox.binder). That needs a kernel that lets an unprivileged user mount overlayfs
inside a user namespace of its own (Linux 5.11 and later, unless switched off). The probe
does exactly that, in a throwaway namespace (util-linux's `unshare`), over empty folders:
first with the `volatile` option (Linux 5.10 and later: the overlay never syncs its upper
layer, see kernel.sandbox.binder.overlay_options), then, only where that mount fails,
without it (a kernel that lets a user mount an overlay but predates the option: a
distribution's backport). Where both fail, commands still run in bubblewrap with the
workspace writable and its protected entries read-only (kernel.sandbox.bwrap), and every
command asks: what a command changes can then not be held for review nor undone.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kernel.sandbox.call_folders import remove_tree

PROBE_TIMEOUT_S = 10.0
FIX = ("use Linux 5.11 or later with unprivileged user namespaces allowed, and util-linux's "
       "unshare and mount installed")


@dataclass(frozen=True)
class OverlayStatus:
    available: bool
    reason: str
    """Why commands can (not) run as transactions, in one sentence."""
    volatile: bool = False
    """Whether the overlay takes the `volatile` option here (only ever with `available`)."""


@functools.cache
def overlay_status() -> OverlayStatus:
    """The overlay state for this process (the probe runs once: one mount where the kernel
    takes `volatile`, two where it refuses it)."""
    unshare, mount = shutil.which("unshare"), shutil.which("mount")
    if unshare is None or mount is None:
        return OverlayStatus(False, f"util-linux's unshare or mount is missing ({FIX})")
    root = Path(tempfile.mkdtemp(prefix="reins-overlay-probe-"))
    try:
        for volatile in (True, False):
            try:
                done = _mount_once([unshare, "--user", "--map-root-user", "--mount", mount],
                                   root / ("volatile" if volatile else "plain"), volatile)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return OverlayStatus(False, f"the overlay probe could not run ({exc}; {FIX})")
            if done.returncode == 0:
                return OverlayStatus(True, "each command's workspace is an overlay: what it "
                                           "changes is judged after it, held or applied, and "
                                           "undoable", volatile)
    finally:
        remove_tree(root)  # the overlay leaves folders of mode 0 in `work/`
    said = (done.stderr.strip().splitlines() or ["no message"])[-1]
    return OverlayStatus(False, f"an overlay cannot be mounted in a user namespace here "
                                f"({said}; {FIX})")


def _mount_once(enter: list[str], folder: Path, volatile: bool
                ) -> subprocess.CompletedProcess[str]:
    """Mount an overlay of empty layers made in `folder`, in a namespace `enter` makes."""
    layers = [folder / name for name in ("lower", "upper", "work", "merged")]
    for layer in layers:
        layer.mkdir(parents=True)
    lower, upper, work, merged = map(str, layers)
    options = f"lowerdir={lower},upperdir={upper},workdir={work}"
    return subprocess.run(
        [*enter, "-t", "overlay", "overlay", "-o",
         f"volatile,{options}" if volatile else options, merged],
        capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False)
