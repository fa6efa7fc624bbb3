"""`reins doctor`: the sandbox state, in words, with the reason and the fix."""

from __future__ import annotations

from kernel.sandbox.detect import detect_sandbox
from kernel.sandbox.hardening import is_dumpable
from kernel.sandbox.settings import ExecSettings

_DEFAULT = ExecSettings()


def report(settings: ExecSettings = _DEFAULT) -> str:
    """A few lines for a terminal: sandbox kind, why, how to fix, limits, network."""
    status = detect_sandbox(settings.bwrap)
    lines = [f"sandbox: {status.kind}" + ("" if status.available else " (commands NOT sandboxed)")]
    lines.append(f"  reason: {status.reason}")
    if status.bwrap_path:
        version = f" ({status.version})" if status.version else ""
        lines.append(f"  bubblewrap: {status.bwrap_path}{version}")
    if status.available:
        lines.append(
            "  commands see: the workspace read-write, the rest read-only, an empty home, "
            "a private /tmp, no other processes"
        )
    else:
        lines.append(f"  fix: {status.fix}")
        lines.append("  until then: every command needs your explicit approval, in every mode")
    lines.append(f"  limits: {settings.limits.words()}")
    lines.append("  network: off unless you allow it for a call or a session")
    dumpable = is_dumpable()
    if dumpable is not None:
        lines.append(
            "  this process: "
            + ("dumpable (the kernel makes itself non-dumpable when it starts commands)"
               if dumpable else "non-dumpable")
        )
    return "\n".join(lines)
