"""`reins doctor`: how commands are confined for the current user, in words, with what is
weaker than the README says named plainly, and the fix."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

from kernel.paths import AppPaths
from kernel.sandbox.bwrap import NAMESPACE_FLAGS, NO_NESTED_USERNS, command_view, probe_mounts
from kernel.sandbox.detect import SandboxStatus, detect_sandbox
from kernel.sandbox.hardening import is_dumpable
from kernel.sandbox.inotify import Inotify, InotifyError
from kernel.sandbox.network import FIX_PASTA, describe, find_pasta, scope
from kernel.sandbox.overlay_probe import overlay_status
from kernel.sandbox.pids import kernel_uid, usable_hierarchy
from kernel.sandbox.settings import ExecSettings
from kernel.sandbox.view import describe_view

_DEFAULT = ExecSettings()
WEAKER = "WEAKER THAN THE README SAYS"
CAPABILITY_FIELDS = ("CapEff", "CapBnd", "CapPrm")


def _who() -> str:
    uid = os.getuid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = "?"
    outside = kernel_uid()
    mapped = "" if outside in (uid, None) else f", uid {outside} outside this user namespace"
    return f"{name} (uid {uid}{mapped})"


def sandbox_capabilities(status: SandboxStatus) -> dict[str, str]:
    """CapEff, CapBnd and CapPrm of a process in a sandbox made as commands are made."""
    argv = [status.bwrap_path, *NAMESPACE_FLAGS,
            *(NO_NESTED_USERNS if status.nested_userns_blocked else ()), "--unshare-net",
            *probe_mounts(), "--", "/bin/cat", "/proc/self/status"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=15, check=False,
                              env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found: dict[str, str] = {}
    for line in done.stdout.decode("ascii", "replace").splitlines():
        name, _, value = line.partition(":")
        if name in CAPABILITY_FIELDS:
            found[name] = value.strip()
    return found


def _confinement(status: SandboxStatus) -> list[str]:
    caps = sandbox_capabilities(status)
    held = {name: value for name, value in caps.items() if int(value or "0", 16)}
    if len(caps) != len(CAPABILITY_FIELDS):
        lines = [f"  capabilities: could not be read in a sandbox — {WEAKER} until checked"]
    elif held:
        lines = [f"  capabilities: commands HOLD capabilities ({held}) — {WEAKER}"]
    else:
        lines = ["  capabilities: none (CapEff, CapPrm and CapBnd 0): mount, umount, nsenter, "
                 "unshare, chroot, pivot_root and ptrace fail inside; commands run in a user "
                 "namespace of their own and see no process outside the sandbox"]
    if status.nested_userns_blocked:
        lines.append("  nested user namespaces: refused (bubblewrap --disable-userns)")
    else:
        lines.append(f"  nested user namespaces: allowed (bubblewrap older than 0.8) — {WEAKER}: "
                     "a command can make a user namespace of its own (no access to the host "
                     "comes with it); update bubblewrap")
    if status.process_limit == "rlimit":
        lines.append("  process limit: RLIMIT_NPROC (counts every process of this user)")
    elif status.process_limit == "cgroup":
        hierarchy = usable_hierarchy()
        where = f" under {hierarchy.root}" if hierarchy is not None else ""
        lines.append(f"  process limit: a pids cgroup per command{where} (RLIMIT_NPROC does "
                     "not hold for root)")
    else:
        lines.append(f"  process limit: NOT ENFORCED — {WEAKER}: Reins runs as root, for whom "
                     "Linux ignores RLIMIT_NPROC, and no pids cgroup is writable here; run "
                     "Reins as an ordinary user, or give it a writable pids cgroup")
    return lines


def view_lines(settings: ExecSettings, workspace: str | None = None) -> list[str]:
    """What a command in `workspace` (default: the current folder) sees of this machine:
    each path shown, how and why (kernel.sandbox.view); nothing else exists for it."""
    paths = AppPaths.from_env()
    ws = os.path.realpath(workspace or os.getcwd())
    home = os.path.realpath(paths.sandbox_home_for(Path(ws)))
    view = command_view(workspace=ws, sandbox_home=home,
                        real_home=os.path.realpath(Path.home()), paths=paths,
                        read_only_paths=map(str, settings.shown_paths()),
                        path_vars=settings.path_vars(os.environ))
    return [f"  commands see (in a workspace at {ws}), and nothing else:",
            *(f"    {line}" for line in describe_view(view, ws, overlay_status().available))]


WATCH_LIMIT = "/proc/sys/fs/inotify/max_user_watches"


def _protected_words() -> str:
    """How the workspace's protected and secret entries are kept safe and followed."""
    try:
        Inotify().close()
    except InotifyError as exc:
        follow = (f"inotify is unavailable ({exc.strerror}): every command walks the whole "
                  "workspace first (slower, as safe)")
    else:
        try:
            with open(WATCH_LIMIT) as limit:
                watches = f"up to {int(limit.read())} folders"
        except (OSError, ValueError):
            watches = "folders"
        follow = (f"followed with inotify ({watches}; beyond that every command walks the "
                  "workspace first)")
    if overlay_status().available:
        return ("  protected entries: secrets hidden at any depth of the workspace; a change a "
                "command makes to git's hooks and config, a hook manager's scripts, .envrc, "
                ".vscode/, .idea/, .devcontainer/, shell start-up files or a secret is held "
                f"and shown to you as a diff, in every mode; {follow}")
    return ("  protected entries: secrets hidden, and git directories, git hooks and config, "
            ".envrc, .vscode/, .idea/, .devcontainer/ and shell start-up files read-only, at "
            "any depth of the workspace; what a command makes anew among them is moved to "
            f"the quarantine folder in Reins' data and reported; {follow}")


def _network_words(settings: ExecSettings) -> str:
    if settings.local_network:
        return (f"off unless allowed; when allowed: {describe(scope(True, True))} — "
                f"{WEAKER} (exec.local_network is on)")
    if find_pasta(settings.pasta) is None:
        return ("off; a command allowed the network is refused: pasta is missing "
                f"(fix: {FIX_PASTA})")
    return f"off unless allowed; when allowed: {describe('internet')}"


def report(settings: ExecSettings = _DEFAULT) -> str:
    """A few lines for a terminal: sandbox kind, why, how to fix, confinement, limits."""
    status = detect_sandbox(settings.bwrap)
    lines = [f"sandbox: {status.kind}" + ("" if status.available else " (commands NOT sandboxed)")]
    lines.append(f"  reason: {status.reason}")
    lines.append(f"  running as: {_who()}")
    if status.bwrap_path:
        version = f" ({status.version})" if status.version else ""
        lines.append(f"  bubblewrap: {status.bwrap_path}{version}")
    if status.available:
        lines += view_lines(settings)
        lines += _confinement(status)
        overlay = overlay_status()
        lines.append(f"  transactions: {'on' if overlay.available else 'OFF'} — "
                     f"{overlay.reason}"
                     + ("" if overlay.available else "; until then every command asks"))
        lines.append(_protected_words())
    else:
        lines.append(f"  fix: {status.fix}")
        lines.append("  until then: every command needs your explicit approval, in every mode")
    lines.append(f"  limits: {settings.limits.words()}")
    lines.append("  network: " + _network_words(settings))
    dumpable = is_dumpable()
    if dumpable is not None:
        lines.append(
            "  this process: "
            + ("dumpable (the kernel makes itself non-dumpable when it starts commands)"
               if dumpable else "non-dumpable")
        )
    return "\n".join(lines)
