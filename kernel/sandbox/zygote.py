"""The zygote: a small process forked from the kernel once, which forks each sandbox's link
binder (kernel.sandbox.binder) from itself.

Why: a fork copies the page tables of the whole process, so a binder forked from the kernel
cost more the more the kernel held (60 made-ahead pinned sandboxes: +2.6 ms each, +35.5 ms
with 800 MB held), and the fork blocked the kernel's event loop. A binder forked from the
zygote costs what forking the zygote costs, whatever the kernel holds by then, and the
kernel only sends a message. Not a program of its own: an interpreter costs tens of
milliseconds to start and an unprivileged user cannot always run the one Reins was started
with; a fork needs neither.

When: the desktop's kernel worker starts it at its start, before it loads the SDK and any
session (kernel.worker.service), so it stays as small as the kernel was then however long the
session. Elsewhere (`reins exec`, which holds at its first command about what it holds at
its end; tests, benchmarks) the first sandbox with links to pin starts it, so a run that
never pins never forks it. One per process: the kernel's commands and its sandboxed MCP
servers share it.

How: one SOCK_SEQPACKET socket pair. A request is one message, `REQUEST`, carrying the
descriptors of a `Request` (SCM_RIGHTS), or `READ_ONLY` or `WRITABLE`, carrying a sandbox's
mount namespace, a report pipe and mounts whose MOUNT_ATTR_RDONLY the binder sets or clears
(kernel.sandbox.binder.set_read_only, for kernel.sandbox.workspace_gate); the zygote forks
a binder that keeps them, closes
its own copies and answers nothing on the socket: the binder's report, or the zygote's when
it could not fork, comes on the report pipe, and a pipe that ends without one means the
binder or the zygote ended (kernel.sandbox.pin asks `Zygote.ended` which). The zygote keeps
no descriptor but its socket (and /dev/null as 0-2), is non-dumpable (it holds a copy of
the kernel's memory as it was when forked), runs no collector (nothing of the kernel's it
holds is ever finalized there), has every Python signal handler back at its default and no
signal blocked, is in a process group of its own (a Ctrl-C in the terminal is the
kernel's) and reaps its binders at once (SIGCHLD ignored).

Lifetime: it ends when the kernel ends, at the end of file on its socket (the kernel's end
is close-on-exec and closed in any process forked from the kernel) and, when it was forked
from the main thread, by SIGKILL when that thread ends (PR_SET_PDEATHSIG); each binder dies
with it. A zygote that ended anyway (killed, out of memory) fails closed: the pin that
finds it gone fails saying so (its command or server does not start), and the next pin
starts a new one, forked from the kernel as it is then.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import socket
import threading
import warnings
from typing import NoReturn

from kernel.sandbox.binder import Request, bind, report, set_read_only
from kernel.sandbox.hardening import die_with_parent, make_non_dumpable, name_process

REQUEST = b"bind"
READ_ONLY = b"ro"
WRITABLE = b"rw"
MAX_FDS = 253
"""The most descriptors one message carries (SCM_MAX_FD)."""
SEND_TIMEOUT_S = 10.0
"""How long a request may wait for room on the socket (the zygote takes each in a fork's time)."""


class ZygoteError(OSError):
    """The zygote could not take a request: the binder was not started."""


class Zygote:
    """The kernel's side of one zygote: its pid and its socket."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self._sock = sock
        self._ended = ""
        """How it ended, once it was reaped (it is then no longer used)."""

    def send(self, request: Request | list[int], kind: bytes = REQUEST) -> None:
        """Hand `request` over, a `Request` or (`READ_ONLY`, `WRITABLE`) the descriptors of
        a mount toggle (they stay the caller's to close). Raises ZygoteError when the
        zygote has ended or does not take it in SEND_TIMEOUT_S."""
        if not self.ended():
            try:
                socket.send_fds(self._sock, [kind], list(request))
                return
            except TimeoutError:
                self._end(f"it took no request for {SEND_TIMEOUT_S:g} s: stopped")
            except OSError:
                self._end()
        raise ZygoteError(self.ended())

    def ended(self) -> str:
        """That the zygote has ended, and how, in words ('' while it runs). It never writes
        to its socket, so a socket with something to read has reached its end: the zygote
        is then reaped."""
        with _lock:
            if not self._ended:
                poller = select.poll()
                poller.register(self._sock, select.POLLIN)
                if poller.poll(0):
                    self._reap()
        return self._ended and (f"the zygote that starts the link binders (pid {self.pid}) "
                                f"has ended ({self._ended}); a new one is started for the "
                                f"next sandbox")

    def _end(self, why: str = "") -> None:
        with _lock:
            if not self._ended:
                self._reap(why)

    def _reap(self, why: str = "") -> None:
        """Kill (if it is still there), reap and forget the zygote; `why` it ended, else how
        it did. With the lock held."""
        global _running
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        how = _reaped(self.pid)
        self._ended = why or how
        self._sock.close()
        if _running is self:
            _running = None

    def forget(self) -> None:
        """In a process forked from the kernel: the zygote is the kernel's, not this one's."""
        self._ended = "the zygote of another process"
        self._sock.close()


def _reaped(pid: int) -> str:
    """Reap `pid` at once (it had ended, or was killed just now): how it ended."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # reaped by someone else
        return "ended"
    code = os.waitstatus_to_exitcode(status)
    return f"killed by signal {-code}" if code < 0 else f"exit status {code}"


_lock = threading.Lock()
_running: Zygote | None = None


def start() -> Zygote:
    """The zygote of this process, forked now when none is running."""
    global _running
    with _lock:
        if _running is None:
            _running = _fork()
        return _running


def _fork() -> Zygote:
    kernel_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    parent = os.getpid()
    from_main = threading.current_thread() is threading.main_thread()
    try:
        with warnings.catch_warnings():  # the zygote runs no thread of the kernel's
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except BaseException:
        kernel_end.close()
        zygote_end.close()
        raise
    if pid == 0:  # pragma: no cover - the zygote; the kernel's side checks what it does
        _serve(zygote_end, parent if from_main else 0)
    zygote_end.close()
    kernel_end.settimeout(SEND_TIMEOUT_S)
    return Zygote(pid, kernel_end)


def _forget_after_fork() -> None:
    """In every process forked from this one (the zygote and its binders included): the
    zygote and the lock are not theirs."""
    global _running, _lock
    _lock = threading.Lock()
    running, _running = _running, None
    if running is not None:
        running.forget()


os.register_at_fork(after_in_child=_forget_after_fork)


def _serve(sock: socket.socket, parent: int) -> NoReturn:
    """The zygote: set itself apart, then fork a binder for each request until the kernel's
    end of the socket closes. `parent`: the kernel's pid when it forked from the main
    thread (0: from another thread, whose end must not end the zygote)."""
    code = 0
    try:
        if parent and not die_with_parent(parent):
            os._exit(0)
        gc.disable()
        _set_apart(sock.fileno())
        while True:
            message, fds, flags, _ = socket.recv_fds(sock, len(REQUEST) + 1, MAX_FDS)
            if not message and not fds:
                break  # the kernel ended
            _spawn(message, fds, flags)
    except BaseException:  # anything: the zygote must never return into the kernel's code
        code = 1
    os._exit(code)


def _set_apart(keep: int) -> None:
    """Everything the zygote is unlike the kernel: its name, flags, signals, descriptors."""
    name_process(b"reins-zygote")
    make_non_dumpable()
    os.setpgid(0, 0)
    signal.set_wakeup_fd(-1)
    for sig in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError):
            if callable(signal.getsignal(sig)):
                signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))


def _spawn(message: bytes, fds: list[int], flags: int) -> None:
    """Fork the binder of one request; close the zygote's copies of its descriptors."""
    try:
        if flags & socket.MSG_CTRUNC or not (
                (message == REQUEST and len(fds) == len(Request._fields))
                or (message in (READ_ONLY, WRITABLE) and len(fds) >= 2)):
            return  # not the kernel's: its report pipe, if any, ends without a report
        request = Request(*fds) if message == REQUEST else None
        zygote = os.getpid()
        try:
            child = os.fork()
        except OSError as exc:
            report(request.report if request else fds[1],
                   f"the binder could not be started: {exc}")
            return
        if child == 0:
            if request is not None:
                bind(request, zygote)
            set_read_only(fds, message == READ_ONLY, zygote)
    finally:
        for fd in fds:
            os.close(fd)
