"""The binder: the process that pins one sandbox's links (kernel.sandbox.pin), forked for
each sandbox from the zygote (kernel.sandbox.zygote), never from the kernel.

It keeps only the four descriptors of its `Request` and the standard ones (/dev/null in the
zygote), dies with the zygote (PR_SET_PDEATHSIG), reads its pins, and waits until the
sandbox's shell stage says it is ready. Then it enters the user namespace that owns the
sandbox's mount namespace (the user who started bubblewrap owns it, so has every capability
there: no privilege is needed) and the mount namespace, and binds each link onto itself
without following it (open_tree + move_mount), and each folder above one with what is
mounted below it: a mount point cannot be removed, renamed or replaced (EBUSY). It writes
one report, `OK` or `FAILED` and why, and ends with os._exit. For a command's sandbox it
first mounts the transaction's overlay on the workspace (`Overlay`: the workspace bound
read-only is the lower layer, the call's folder the upper one, so nothing the command
writes reaches the real workspace), hides the workspace's secrets again on top of it (an
overlay shows its lower layer without the mounts on it) and detaches the call's folder, so
the command never sees the upper layer but through the overlay. It calls only what was loaded
before the zygote was forked, and it is non-dumpable, as the zygote. A binder of
`set_read_only` enters the same way and sets or clears MOUNT_ATTR_RDONLY on the mounts it
is given (kernel.sandbox.workspace_gate: a sandboxed server's workspace between calls).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import re
import stat
from collections.abc import Callable, Sequence
from typing import NamedTuple, NoReturn

from kernel.sandbox.hardening import die_with_parent, name_process

OK = b"+"
FAILED = b"-"
"""A report is OK, or FAILED followed by what failed (UTF-8); nothing at all means the
binder ended before it could say (kernel.sandbox.pin asks the zygote why)."""
MAX_MESSAGE = 2000

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
NS_GET_USERNS = 0xB701
AT_FDCWD = -100
OPEN_TREE_CLONE = 1
AT_SYMLINK_NOFOLLOW = 0x100
AT_RECURSIVE = 0x8000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
AT_EMPTY_PATH = 0x1000
MOUNT_ATTR_RDONLY = 0x1
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MNT_DETACH = 0x2
SYS_OPEN_TREE = 428
SYS_MOVE_MOUNT = 429
SYS_MOUNT_SETATTR = 442
"""These have these numbers on x86_64, arm64 and every architecture of the unified table
(added after the tables were unified; alpha and mips add their own offsets)."""

_LIBC = ctypes.CDLL(None, use_errno=True)
_SETNS = _LIBC.setns
_MOUNT = _LIBC.mount
_UMOUNT2 = _LIBC.umount2
_SYSCALL = _LIBC.syscall
_SYSCALL.restype = ctypes.c_long
"""Resolved here, so the binder looks nothing up."""


class _MountAttr(ctypes.Structure):
    """struct mount_attr (MOUNT_ATTR_SIZE_VER0)."""

    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


class BindError(Exception):
    """What the binder reports when a link cannot be pinned."""


class Request(NamedTuple):
    """The descriptors of one binder, in the order they travel to the zygote."""

    namespace: int
    """The sandbox's mount namespace (/proc/PID/ns/mnt of its init)."""
    ready: int
    """The read end of the stage's pipe: one byte once bubblewrap's mounts are done."""
    report: int
    """The write end of the pipe the report goes to."""
    pins: int
    """A file holding the work as JSON: {"pins": [[path, text, folder], …]
    (kernel.sandbox.pin.Pin), "overlay": Overlay's fields or null}."""


class Overlay(NamedTuple):
    """The transaction's overlay of a command's sandbox, as the sandbox sees its paths."""

    workspace: str
    """Where the workspace is bound read-only: the lower layer, and where the overlay goes."""
    folder: str
    """Where the call's folder is bound: `upper/` and `work/` in it; detached after."""
    hide: list[tuple[str, bool]]
    """The workspace's secrets (absolute; True for a folder), hidden again on the overlay."""
    volatile: bool
    """Mount it `volatile` (kernel.sandbox.overlay_probe found the kernel takes it)."""


def encode_pins(pins: list[tuple[str, str, bool]], overlay: Overlay | None = None) -> bytes:
    """What `Request.pins` holds."""
    return json.dumps({"pins": pins, "overlay": overlay}).encode()


def overlay_options(overlay: Overlay) -> bytes:
    """The overlay's mount options: each path with `\\`, `,` and `:` escaped (the option
    parser splits on them). `userxattr`: the overlay keeps its marks (opaque folders,
    whiteouts) in `user.overlay.*` xattrs, which the sandbox's user may set; without it, it
    tries `trusted.overlay.*`, which needs a capability of the host's namespace, and
    removing a folder of the workspace (`rm -rf build`, `mv dir x`) fails with EIO.

    `volatile`, where the kernel takes it: the overlay never syncs its upper layer, neither
    each file it copies up (a command appending to a 1,000 MiB file: 0.72-0.82 s with the
    copy-up's fsync, 0.31-0.35 s without, `cp` 0.30-0.37 s) nor when a command calls fsync
    or syncfs. The bytes of a change that is applied are written once, by the apply's
    syncfs; those of one discarded or refused never need be. Nothing durable rests on the
    upper layer. What a command changes reaches the workspace
    only through kernel.transaction.apply: each file is renamed in (same file system) or
    copied in, and a durable apply then calls syncfs on the workspace's file system, which
    writes every dirty page of it, the renamed files' included. A call folder whose kernel
    died (a crash, a power cut, after which its upper layer may miss bytes a command had
    synced) is never applied, only kept for the user to copy from
    (kernel.transaction.orphans and kernel.transaction.upper read only its `upper/`; the
    overlay's `work/work/incompat/volatile`, which makes it refuse that work folder again,
    is never read, and a call folder is mounted once)."""
    def escaped(path: str) -> str:
        return re.sub(r"([\\,:])", r"\\\1", path)

    return os.fsencode(f"userxattr,{'volatile,' if overlay.volatile else ''}"
                       f"lowerdir={escaped(overlay.workspace)},"
                       f"upperdir={escaped(overlay.folder + '/upper')},"
                       f"workdir={escaped(overlay.folder + '/work')}")


def report(fd: int, failure: str = "") -> None:
    """Write the one report: OK without `failure`, else FAILED and `failure`."""
    text = FAILED + (failure.encode("utf-8", "replace")[:MAX_MESSAGE] or b"failed") \
        if failure else OK
    with contextlib.suppress(OSError):  # nobody reads it any more: the sandbox is gone
        os.write(fd, text)


def bind(request: Request, zygote: int) -> NoReturn:
    """In the binder, forked by the zygote whose pid is `zygote`: pin, report, _exit."""

    def pin_all() -> str:
        work = json.loads(os.pread(request.pins, os.fstat(request.pins).st_size, 0))
        if not os.read(request.ready, 1):
            raise BindError("the sandbox ended before its command started")
        _enter(request.namespace)
        if work["overlay"] is not None:
            _mount_overlay(Overlay(*work["overlay"]))
        for path, text, folder in work["pins"]:
            _pin(path, text, folder)
        return ""

    _serve(zygote, request, request.report, pin_all)


def set_read_only(fds: list[int], read_only: bool, zygote: int) -> NoReturn:
    """In a binder forked by the zygote whose pid is `zygote`: `fds` are a sandbox's mount
    namespace, the write end of the report and the mounts (each its root, opened O_PATH);
    set MOUNT_ATTR_RDONLY on each (`read_only`) or clear it, each mount alone (not the
    mounts below it), report, _exit. Every mount is tried; the first failure is reported
    as `INDEX strerror`."""
    namespace, report_fd, *mounts = fds

    def set_each() -> str:
        _enter(namespace)
        attr = _MountAttr(MOUNT_ATTR_RDONLY if read_only else 0,
                          0 if read_only else MOUNT_ATTR_RDONLY, 0, 0)
        long = ctypes.c_long
        failure = ""
        for index, mount in enumerate(mounts):
            if _SYSCALL(long(SYS_MOUNT_SETATTR), long(mount), b"", long(AT_EMPTY_PATH),
                        ctypes.byref(attr), long(ctypes.sizeof(attr))) < 0 and not failure:
                failure = f"{index} {os.strerror(ctypes.get_errno())}"
        return failure

    _serve(zygote, fds, report_fd, set_each)


def _serve(zygote: int, fds: Sequence[int], report_fd: int, work: Callable[[], str]
           ) -> NoReturn:
    """The binder's life around `work` (what failed, '' when nothing did): die with the
    zygote, keep only `fds`, work, report, _exit."""
    failure = ""
    try:
        if not die_with_parent(zygote):
            raise BindError("the zygote that forked the binder has ended")
        name_process(b"reins-binder")
        _keep_only(*fds)
        failure = work()
    except BaseException as exc:  # anything: the binder must never return to the zygote
        failure = str(exc) or type(exc).__name__
    report(report_fd, failure)
    os._exit(1 if failure else 0)


def _keep_only(*fds: int) -> None:
    """Close every descriptor but `fds` and the standard ones: the binder holds no other
    sandbox's pipe open (its stage would not see its end) and nothing of the kernel's."""
    low = 3
    for fd in sorted(fds):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


def _check(result: int, what: str) -> int:
    if result < 0:
        raise BindError(f"{what}: {os.strerror(ctypes.get_errno())}")
    return result


def _enter(mnt: int) -> None:
    """Join the sandbox's mount namespace, first the user namespace that owns it."""
    owner = fcntl.ioctl(mnt, NS_GET_USERNS)
    _check(_SETNS(owner, CLONE_NEWUSER), "entering the sandbox's user namespace")
    _check(_SETNS(mnt, CLONE_NEWNS), "entering the sandbox's mount namespace")


def _mount(source: bytes | None, target: str, kind: bytes | None, flags: int,
           data: bytes | None, what: str) -> None:
    _check(_MOUNT(source, os.fsencode(target), kind, ctypes.c_ulong(flags), data), what)


def _mount_overlay(overlay: Overlay) -> None:
    """Mount the overlay on the workspace, hide its secrets on it, detach the call's folder."""
    ws = overlay.workspace
    _mount(b"overlay", ws, b"overlay", MS_NOSUID | MS_NODEV, overlay_options(overlay),
           f"mounting the transaction's overlay on {ws}")
    for path, folder in overlay.hide:
        if folder:
            _mount(b"tmpfs", path, b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, b"size=4k",
                   f"hiding the secret folder {path}")
        else:
            _mount(b"/dev/null", path, None, MS_BIND, None, f"hiding the secret {path}")
            _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY, None,
                   f"hiding the secret {path}")
    _check(_UMOUNT2(os.fsencode(overlay.folder), ctypes.c_int(MNT_DETACH)),
           "detaching the transaction's folder")
    os.rmdir(overlay.folder)


def _pin(path: str, text: str, folder: bool) -> None:
    """Bind the link at `path` onto itself, when it is the link holding `text`; or the
    folder there, when it is a folder (not a link), with the mounts below it."""
    what = "folder" if folder else "link"
    try:
        info = os.lstat(path)
        held = os.readlink(path) if stat.S_ISLNK(info.st_mode) else None
    except OSError as exc:
        raise BindError(f"{path}: {exc.strerror}") from exc
    if folder and not stat.S_ISDIR(info.st_mode):
        raise BindError(f"{path} is no longer the folder it was")
    if not folder and held != text:
        raise BindError(f"{path} is no longer the link it was ({text!r})")
    name = os.fsencode(path)
    long = ctypes.c_long  # syscall(2) takes longs: no upper half left undefined
    flags = OPEN_TREE_CLONE | os.O_CLOEXEC | AT_SYMLINK_NOFOLLOW
    tree = _check(_SYSCALL(long(SYS_OPEN_TREE), long(AT_FDCWD), name,
                           long(flags | (AT_RECURSIVE if folder else 0))),
                  f"copying the {what} {path}")
    try:
        _check(_SYSCALL(long(SYS_MOVE_MOUNT), long(tree), b"", long(AT_FDCWD), name,
                        long(MOVE_MOUNT_F_EMPTY_PATH)), f"binding the {what} {path}")
    finally:
        os.close(tree)
