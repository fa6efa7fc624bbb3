"""What the user configures about running commands (filled by the settings loader)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kernel.sandbox.limits import ResourceLimits

DEFAULT_GRACE_S = 2.0
DEFAULT_MAX_OUTPUT = 1 << 30


@dataclass(frozen=True)
class ExecSettings:
    extra_path: tuple[str, ...] = ()
    """Folders put in front of the fixed PATH (shown read-only in the sandbox, with the
    tool folder they belong to: kernel.sandbox.view)."""
    env_passthrough: tuple[str, ...] = ()
    """Variables passed to commands by exact name (secret-looking ones need an opt-in too)."""
    env_secret_opt_in: tuple[str, ...] = ()
    """Secret-looking variables the user explicitly allows (each must also be passed through)."""
    read_only_paths: tuple[str, ...] = ()
    """Folders (or files) shown read-only inside the sandbox, which shows nothing of the
    machine it is not told to (kernel.sandbox.view): toolchains not in the login PATH
    (`~/.rustup`), data under /srv or /opt a command should read."""
    limits: ResourceLimits = field(default_factory=ResourceLimits)
    grace_s: float = DEFAULT_GRACE_S
    """Time between SIGTERM and SIGKILL when a command is stopped."""
    bwrap: str = "bwrap"
    """The bubblewrap program (a name looked up in PATH, or a path)."""
    pasta: str = "pasta"
    """The pasta program (from `passt`) that gives a command the internet."""
    local_network: bool = False
    """A command allowed the network shares this machine's network namespace (its loopback
    services, X11 and D-Bus sockets too) instead of getting the internet only through pasta
    (kernel.sandbox.network)."""
    max_output_bytes: int = DEFAULT_MAX_OUTPUT
    """What the spool file of one command keeps; the rest is drained and counted, and only
    its last 4 KiB kept (a `yes` for the allowed 600 s would fill a disk)."""

    def shown_paths(self) -> tuple[Path, ...]:
        """`read_only_paths` with `~` expanded, resolved."""
        return tuple(Path(p).expanduser().resolve() for p in self.read_only_paths)

    def path_vars(self, environ: Mapping[str, str]) -> tuple[str, ...]:
        """The PATH-like strings whose folders the sandbox shows: the login PATH (the one
        Reins was started with) and `extra_path`."""
        return environ.get("PATH", ""), os.pathsep.join(self.extra_path)
