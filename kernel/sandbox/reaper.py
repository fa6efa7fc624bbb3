"""Runs one command without a sandbox and leaves nothing behind (a standalone script).

Used only when no sandbox is available and the user approved that very call. Run as
`python -I -S reaper.py GRACE AS FSIZE NPROC CPU CPU_HARD -- argv...`: it applies the resource
limits to itself (inherited by the command), becomes a child subreaper so orphaned
descendants (`nohup … &`, `setsid …`) stay below it instead of escaping to init, and runs the
command. When the command exits, or it is told to stop (SIGTERM, or its parent dying; both
taken synchronously with sigwaitinfo), it sends SIGTERM to everything below it, waits GRACE
seconds, then SIGKILL. It exits with the command's status (128+N for a signal). It imports
nothing from Reins.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def _descendants() -> list[int]:
    """Live processes below this one (read from /proc; zombies excluded)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    queue = [os.getpid()]
    while queue:
        for child in children.get(queue.pop(), ()):
            found.append(child)
            queue.append(child)
    return found


def _signal_tree(sig: int) -> None:
    for pid in _descendants():
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            continue


_exits: dict[int, int] = {}
"""Exit codes of reaped children by pid (128+N for a signal)."""


def _exit_code(wait_status: int) -> int:
    code = os.waitstatus_to_exitcode(wait_status)
    return 128 - code if code < 0 else code


def _reap() -> None:
    while True:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _exits[pid] = _exit_code(wait_status)


def _end_all(grace: float) -> None:
    _signal_tree(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap()
        if not _descendants():
            _reap()  # a child that ended since the last reap is a zombie, not a descendant
            return
        time.sleep(0.02)
    _signal_tree(signal.SIGKILL)
    while _descendants():
        _reap()
        time.sleep(0.01)
    _reap()


def main(argv: list[str]) -> int:
    grace = float(argv[1])
    address_space, file_size, processes, cpu, cpu_hard = (int(v) for v in argv[2:7])
    command = argv[8:]
    waited = {signal.SIGTERM, signal.SIGCHLD}
    signal.pthread_sigmask(signal.SIG_BLOCK, waited)  # taken with sigwaitinfo: no races
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() == 1:
        return 143
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu_hard))
    try:
        main_pid = os.posix_spawn(command[0], command, os.environ, setsigmask=())
    except OSError as exc:
        os.write(2, f"reins: could not start the command: {exc}\n".encode())
        return 126
    while main_pid not in _exits:
        if signal.sigwaitinfo(waited).si_signo == signal.SIGTERM:
            break
        _reap()
    _end_all(grace)
    return _exits.get(main_pid, 143)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
