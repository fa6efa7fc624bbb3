"""Protected links pinned inside the sandbox while its command runs.

A marked link (`.vscode -> cfg`, `.git/hooks -> ../hooks`, `.envrc -> sub/envrc`, a link on the
way to where one leads) lies in a folder the command may write, and bubblewrap cannot bind a
link (it follows it): without more, a command could remove it and make it again leading
elsewhere, and an editor, direnv or git reading it outside while the command runs would take
what the command put there (kernel.sandbox.revert undoes it only after the command). So the
kernel binds every such link onto itself inside the sandbox's mount namespace: a mount point
cannot be removed, renamed or replaced (EBUSY), and nothing outside changes.

The binding needs the sandbox made (bubblewrap's mounts done) and its command not yet
started; bubblewrap says neither, so its program is then a shell stage (`staged_shell`) that
says it is ready on one pipe and waits on another before it becomes the command's shell.
Meanwhile a forked copy of the kernel enters the user namespace that owns the sandbox's mount
namespace (the user who started bubblewrap owns it, so has every capability there: no
privilege is needed) and then the mount namespace, and binds each link onto itself without
following it (open_tree + move_mount). A fork, not a helper program: it costs a millisecond
where an interpreter costs tens, and needs no interpreter the user can run (an unprivileged
user cannot always run the one Reins was started with). The copy calls only system calls
resolved before the fork and ends with os._exit; it inherits the kernel's non-dumpable flag.
Fail closed: when the stage does not say it is ready or a link cannot be bound, the sandbox is
stopped before its command starts.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shlex
import signal
import stat
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernel.sandbox.marks import Mark

if TYPE_CHECKING:
    import asyncio

PIN_TIMEOUT_S = 10.0
"""How long the stage may take to be ready and the links to be bound (milliseconds, usually)."""
MAX_MESSAGE = 2000

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
NS_GET_USERNS = 0xB701
AT_FDCWD = -100
OPEN_TREE_CLONE = 1
AT_SYMLINK_NOFOLLOW = 0x100
AT_RECURSIVE = 0x8000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
SYS_OPEN_TREE = 428
SYS_MOVE_MOUNT = 429
"""Both have these numbers on every architecture (added after the tables were unified)."""

_LIBC = ctypes.CDLL(None, use_errno=True)
_SETNS = _LIBC.setns
_SYSCALL = _LIBC.syscall
_SYSCALL.restype = ctypes.c_long
"""Resolved here, so the forked copy looks nothing up."""


class PinError(Exception):
    """A link could not be pinned; the command must not start."""


@dataclass(frozen=True)
class Pin:
    path: str
    """Absolute, as the sandbox sees it (the workspace is bound at its own path)."""
    text: str
    """What the link holds (Mark.led): a link changed since the workspace was indexed is not
    pinned but refused, and the next index sees it. Empty for a folder."""
    folder: bool = False
    """A folder of the workspace above a marked link: bound onto itself with what is mounted
    below it, so it cannot be renamed away with the link and a new link made in its place
    (`mv deep deep2 && mkdir -p deep/sub && ln -s evil deep/sub/.idea`)."""


def links_to_pin(workspace: str, marks: Iterable[Mark]) -> tuple[Pin, ...]:
    """Every marked link of the workspace, in path order, then every folder above one
    inside the workspace, the outermost first. A link inside a hidden secret folder is not
    there in the sandbox (kernel.sandbox.bwrap.mark_mounts), so it is not pinned."""
    marks = list(marks)
    hidden = [m.path + "/" for m in marks if m.kind == "secret" and m.entry == "dir"]
    shown = [m for m in marks if m.entry == "link"
             and not any(m.path.startswith(folder) for folder in hidden)]
    links = sorted(m.path for m in shown)
    texts = {m.path: m.led for m in shown}
    folders = sorted({"/".join(parts[:depth]) for parts in (p.split("/") for p in links)
                      for depth in range(1, len(parts))}, key=lambda f: (f.count("/"), f))
    return (*(Pin(os.path.join(workspace, p), texts[p]) for p in links),
            *(Pin(os.path.join(workspace, f), "", folder=True) for f in folders))


def staged_shell(ready_fd: int, go_fd: int, shell: Sequence[str]) -> tuple[str, ...]:
    """`shell`, run once the stage has written one byte to `ready_fd` and read a line from
    `go_fd` (through /proc/self/fd: the shell may not take a descriptor above 9)."""
    stage = (f"printf r >/proc/self/fd/{ready_fd} && read -r _ </proc/self/fd/{go_fd} "
             f"&& exec {shlex.join(shell)}")
    return ("/bin/sh", "-c", stage)


class PinStage:
    """The two pipes of the stage and the binding of `pins` between them."""

    def __init__(self, pins: tuple[Pin, ...]) -> None:
        self.pins = pins
        self._ready_read, self._ready_write = os.pipe()
        self._go_read, self._go_write = os.pipe()
        self._binder: tuple[int, int] | None = None
        """(pid, read end of its report) of the forked copy, once `prepare` made it."""

    @property
    def child_fds(self) -> tuple[int, int]:
        """(ready fd, go fd) as the stage sees them (pass them with `pass_fds`)."""
        return self._ready_write, self._go_read

    def started(self) -> None:
        """Close the child's ends here once bubblewrap has them."""
        for name in ("_ready_write", "_go_read"):
            self._close(name)

    def prepare(self, pid: int) -> None:
        """Fork the copy that binds the links of the sandbox whose init is `pid`; it waits
        until the stage is ready. As soon as bubblewrap reports the sandbox (for one made
        ahead, long before its command comes), so the fork is off the command's way.
        Raises OSError."""
        if self._binder is None:
            self._binder = _fork_binder(pid, self.pins, self._ready_read)

    async def run(self, pid: int) -> None:
        """Pin every link in the sandbox whose init is `pid` once the stage is ready (the
        go-ahead has been given to bubblewrap), then let the stage go. Raises PinError (the
        caller stops the sandbox, then calls `close`)."""
        import asyncio  # the loop's caller has it loaded; `reins doctor` needs none

        self.prepare(pid)
        assert self._binder is not None
        child, report = self._binder
        code = await _exit_code(asyncio.get_running_loop(), child)
        self._binder = None
        try:
            why = os.read(report, MAX_MESSAGE).decode("utf-8", "replace")
        finally:
            os.close(report)
        if code != 0 or why:
            raise PinError("a protected link could not be pinned in the sandbox: "
                           f"{why or f'exit status {code}'}")
        try:
            os.write(self._go_write, b"\n")
        except OSError as exc:
            raise PinError(f"the sandbox ended before its command started ({exc})") from exc
        self.close()

    def close(self) -> None:
        """Close every end; a copy still waiting is killed."""
        binder, self._binder = self._binder, None
        if binder is not None:
            child, report = binder
            with contextlib.suppress(OSError):
                os.kill(child, signal.SIGKILL)
                os.waitpid(child, 0)  # at once: killed while it waits
            os.close(report)
        for name in ("_ready_read", "_ready_write", "_go_read", "_go_write"):
            self._close(name)

    def _close(self, name: str) -> None:
        fd = getattr(self, name)
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
            setattr(self, name, -1)


def _fork_binder(pid: int, pins: tuple[Pin, ...], ready: int) -> tuple[int, int]:
    """Fork the copy that binds `pins` in the sandbox of `pid` once `ready` is written;
    (its pid, the read end of its report)."""
    report_read, report_write = os.pipe()
    try:
        with warnings.catch_warnings():  # the copy runs only system calls, then _exit
            warnings.simplefilter("ignore", DeprecationWarning)
            child = os.fork()
    except BaseException:
        os.close(report_read)
        os.close(report_write)
        raise
    if child == 0:  # pragma: no cover - the copy; its parent checks what it did
        _child(report_write, pid, pins, ready)
    os.close(report_write)
    return child, report_read


async def _exit_code(loop: asyncio.AbstractEventLoop, child: int) -> int:
    """Wait for the forked copy (killed after PIN_TIMEOUT_S, or when cancelled)."""
    import asyncio

    pidfd = os.pidfd_open(child)
    exited: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not exited.done():
            exited.set_result(None)

    loop.add_reader(pidfd, readable)
    try:
        await asyncio.wait_for(exited, PIN_TIMEOUT_S)
    except BaseException as exc:
        os.kill(child, signal.SIGKILL)
        if isinstance(exc, TimeoutError):
            raise PinError(f"the sandbox did not start, or its protected links could not be "
                           f"pinned, in {PIN_TIMEOUT_S:g} s") from None
        raise
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(child, 0)  # at once: it has exited or was killed
    return os.waitstatus_to_exitcode(status)


def _child(report: int, pid: int, pins: tuple[Pin, ...], ready: int) -> None:
    """In the forked copy: wait for the stage, enter the sandbox, bind every link, report a
    failure, _exit."""
    code = 0
    try:
        _keep_only(report, ready)
        if not os.read(ready, 1):
            raise PinError("the sandbox ended before its command started")
        _enter(pid)
        for pin in pins:
            _pin(pin)
    except BaseException as exc:  # anything: the copy must never return to the kernel
        code = 1
        with contextlib.suppress(BaseException):
            os.write(report, str(exc).encode("utf-8", "replace")[:MAX_MESSAGE] or b"failed")
    os._exit(code)


def _keep_only(*fds: int) -> None:
    """Close every descriptor but `fds` and the standard ones: the copy holds no other
    sandbox's pipe open (its stage would not see its end) and none of the kernel's files."""
    low = 3
    for fd in sorted(fds):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


def _check(result: int, what: str) -> int:
    if result < 0:
        raise PinError(f"{what}: {os.strerror(ctypes.get_errno())}")
    return result


def _enter(pid: int) -> None:
    """Join the sandbox's mount namespace, first the user namespace that owns it."""
    mnt = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
    owner = fcntl.ioctl(mnt, NS_GET_USERNS)
    _check(_SETNS(owner, CLONE_NEWUSER), "entering the sandbox's user namespace")
    _check(_SETNS(mnt, CLONE_NEWNS), "entering the sandbox's mount namespace")


def _pin(pin: Pin) -> None:
    """Bind the link at `pin.path` onto itself, when it is the link holding `pin.text`; or
    the folder there, when it is a folder (not a link), with the mounts below it."""
    what = "folder" if pin.folder else "link"
    try:
        info = os.lstat(pin.path)
        held = os.readlink(pin.path) if stat.S_ISLNK(info.st_mode) else None
    except OSError as exc:
        raise PinError(f"{pin.path}: {exc.strerror}") from exc
    if pin.folder and not stat.S_ISDIR(info.st_mode):
        raise PinError(f"{pin.path} is no longer the folder it was")
    if not pin.folder and held != pin.text:
        raise PinError(f"{pin.path} is no longer the link it was ({pin.text!r})")
    path = os.fsencode(pin.path)
    long = ctypes.c_long  # syscall(2) takes longs: no upper half left undefined
    flags = OPEN_TREE_CLONE | os.O_CLOEXEC | AT_SYMLINK_NOFOLLOW
    tree = _check(_SYSCALL(long(SYS_OPEN_TREE), long(AT_FDCWD), path,
                           long(flags | (AT_RECURSIVE if pin.folder else 0))),
                  f"copying the {what} {pin.path}")
    try:
        _check(_SYSCALL(long(SYS_MOVE_MOUNT), long(tree), b"", long(AT_FDCWD), path,
                        long(MOVE_MOUNT_F_EMPTY_PATH)), f"binding the {what} {pin.path}")
    finally:
        os.close(tree)
