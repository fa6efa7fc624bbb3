"""A sandbox made ahead: bubblewrap builds the next command's sandbox while the model thinks.

Building a sandbox (namespaces, a read-only root, a fresh /dev and /proc, the workspace and
the hidden home) is most of what a sandboxed command costs to start. bubblewrap builds it
and then waits on its block fd (kernel.sandbox.handshake) before it starts the shell, and
the shell reads its command from a file that is filled only when the command is known
(kernel.sandbox.launcher.SHELL). So the executor starts the sandbox of the next command
when a command ends (or once it has run `AHEAD_AFTER_S`, so a long one's successor is ready
when it ends), and a call that finds it ready only checks it, sets the limits, writes the
command and lets it go.

A sandbox made ahead shows the file system as it was when it was made: its mounts hold the
folders and files that were there then. It is used only if nothing it was made from has
changed since, which `Fingerprint` captures:
- the argv the call would get now (`bwrap_argv` looks at the file system: which protected
  files exist, the workspace, the working folder, the network, Reins' folders, settings);
- the environment the call would get now (settings may have changed);
- the identity (device, inode) of every path the argv names: a folder or file replaced
  since (git renames a new `.git/config` into place) is not the one that was mounted;
- the kernel's mount table: a file system mounted or unmounted since.
Anything else, or a sandbox that died while it waited, and the call builds a fresh sandbox
as if there were none. A sandbox made ahead runs nothing until a call takes it, waits at
most `IDLE_S`, and ends when the executor shuts down or is dropped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

IDLE_S = 120.0
"""A sandbox made ahead that no call took in this time is ended (it pins the file systems
it mounts; the next call then builds its own)."""
MOUNT_TABLE = "/proc/self/mountinfo"


@dataclass(frozen=True)
class Fingerprint:
    """What a sandbox is made from; equal fingerprints make equal sandboxes."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    identities: tuple[tuple[int, int] | None, ...]
    """(device, inode) of each absolute path in the launcher's options; None if missing."""
    mounts: bytes


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _mount_table() -> bytes:
    try:
        with open(MOUNT_TABLE, "rb") as table:
            return table.read()
    except OSError:
        return b""


def fingerprint(argv: Sequence[str], env: Mapping[str, str]) -> Fingerprint:
    """The fingerprint of a sandbox started now with `argv` (options, `--`, program)."""
    options = argv[: argv.index("--")] if "--" in argv else argv
    return Fingerprint(
        argv=tuple(argv),
        env=tuple(sorted(env.items())),
        identities=tuple(_identity(arg) for arg in options if arg.startswith("/")),
        mounts=_mount_table(),
    )
