"""File system steps relative to a folder's file descriptor that never follow a symlink.

Reading an upper layer, applying it and undoing it all go through here: every folder on
the way to a path is opened with O_NOFOLLOW from the root's descriptor, so a link a command
made (or one the workspace already had) never takes a read or a write outside the root.
A link where a folder is expected is an `OSError` (ELOOP or ENOTDIR), never followed.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import os
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from kernel.transaction.changeset import EntryType

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CHUNK = 1 << 20
"""Files are read, hashed and compared this many bytes at a time: memory stays flat."""
AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
_LIBC = ctypes.CDLL(None, use_errno=True)
_RENAMEAT2 = getattr(_LIBC, "renameat2", None)
"""glibc 2.28 and later; without it every file is copied (`move_in` says so)."""

_FS_ENCODING = sys.getfilesystemencoding()
_FS_ERRORS = sys.getfilesystemencodeerrors()


def fs_bytes(name: str) -> bytes:
    """`os.fsencode` of a str, without its checks: it runs several times a file, thousands
    of times an apply."""
    return name.encode(_FS_ENCODING, _FS_ERRORS)


def fs_text(name: bytes) -> str:
    """`os.fsdecode` of bytes, without its checks (see `fs_bytes`)."""
    return name.decode(_FS_ENCODING, _FS_ERRORS)


StateKind = Literal["absent", "file", "dir", "link", "other"]
"""An EntryType (kernel.transaction.changeset), or nothing there."""


@dataclass(frozen=True)
class State:
    """What a path is: its type, permission bits and, for a file, the sha256 of its bytes;
    for a link, its target (as `os.fsdecode` gives it)."""

    kind: StateKind
    mode: int = 0
    digest: str = ""


ABSENT = State("absent")


def entry_type(mode: int) -> EntryType:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "other"


def split(rel: str) -> tuple[str, str]:
    """('a/b', 'c') for 'a/b/c'; ('', 'c') for 'c'."""
    head, _, name = rel.rpartition("/")
    return head, name


def open_dir(root_fd: int, rel: str, *, create: bool = False, mode: int = 0o700) -> int:
    """A descriptor of the folder `rel` below `root_fd` ('' is the root itself), each
    component opened with O_NOFOLLOW; with `create`, missing folders are made (`mode`)."""
    fd = os.dup(root_fd)
    try:
        for part in rel.split("/") if rel else ():
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, mode, dir_fd=fd)
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def parent_of(root_fd: int, rel: str) -> Iterator[tuple[int, str]]:
    """(descriptor of `rel`'s folder, `rel`'s last name), for the `*at` calls."""
    head, name = split(rel)
    fd = open_dir(root_fd, head)
    try:
        yield fd, name
    finally:
        os.close(fd)


def read_link(dir_fd: int, name: str) -> str:
    return os.fsdecode(os.readlink(name, dir_fd=dir_fd))


def hash_fd(fd: int, size: int | None = None) -> str:
    """The sha256 of an open file's bytes from its start, read in chunks. `size`, its size
    when the caller has just taken it: a small file is read in one call."""
    if size is not None and size < CHUNK:
        data = os.pread(fd, size + 1, 0)
        if len(data) <= size:
            return hashlib.sha256(data).hexdigest()
    digest = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def open_file(dir_fd: int, name: str) -> int:
    """A read descriptor of the regular file `name` (a link, FIFO or device is refused)."""
    fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"{name!r} is not a regular file")
    return fd


class Folders:
    """Folder descriptors below a root, each opened once (never through a link) for a run
    of steps, closed together. A folder replaced meanwhile would be the old one, so a run
    that writes opens them only after its removals, each after it is made (as apply and
    restore do)."""

    def __init__(self, root_fd: int) -> None:
        self.root_fd = root_fd
        self._fds: dict[str, int] = {}

    def __enter__(self) -> Folders:
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def open(self, rel: str) -> int:
        """The descriptor of the folder `rel` ('' the root), kept open until exit."""
        if not rel:
            return self.root_fd
        fd = self._fds.get(rel)
        if fd is None:
            head, name = split(rel)
            fd = os.open(name, DIR_FLAGS, dir_fd=self.open(head))
            self._fds[rel] = fd
        return fd

    def lstat(self, rel: str) -> os.stat_result | None:
        """What `rel` is now, not following a link (None when it or a folder on the way is
        missing)."""
        head, name = split(rel)
        try:
            return os.stat(name, dir_fd=self.open(head), follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def state(self, rel: str, digest: Callable[[int], str] = hash_fd) -> State:
        """The `State` of `rel` now (absent when a folder on the way is missing); a file's
        digest is `digest(its read descriptor)` (by default its sha256)."""
        head, name = split(rel)
        try:
            fd = self.open(head)
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return ABSENT
        kind = entry_type(st.st_mode)
        mode = stat.S_IMODE(st.st_mode)
        if kind == "file":
            file_fd = open_file(fd, name)
            try:
                return State(kind, mode, digest(file_fd))
            finally:
                os.close(file_fd)
        if kind == "link":
            return State(kind, 0, read_link(fd, name))
        return State(kind, mode)


def state_at(root_fd: int, rel: str, digest: Callable[[int], str] = hash_fd) -> State:
    """The `State` of `rel` now (see `Folders.state`)."""
    with Folders(root_fd) as folders:
        return folders.state(rel, digest)


def same_bytes(fd_a: int, fd_b: int) -> bool:
    """Whether two open files hold the same bytes (compared a chunk at a time)."""
    os.lseek(fd_a, 0, os.SEEK_SET)
    os.lseek(fd_b, 0, os.SEEK_SET)
    while True:
        a = os.read(fd_a, CHUNK)
        b = os.read(fd_b, CHUNK)
        if a != b:
            return False
        if not a:
            return True


def copy_fd(src: int, dst: int) -> None:
    """All of `src` (from its start) into `dst`, in the kernel where it can."""
    os.lseek(src, 0, os.SEEK_SET)
    size = os.fstat(src).st_size
    copied = 0
    try:
        while copied < size:
            done = os.copy_file_range(src, dst, min(size - copied, 1 << 30))
            if done == 0:
                break
            copied += done
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise
    while chunk := os.read(src, CHUNK):
        os.write(dst, chunk)


def temp_name(name: str) -> str:
    """A name beside `name` for a file being written (renamed over `name` once whole)."""
    return f".{name[:100]}.reins-{os.getpid()}-{os.urandom(4).hex()}.tmp"


def remove_at(dir_fd: int, name: str, displaced: Displaced | None = None) -> None:
    """Remove the entry `name` (an empty folder, or anything else: to `displaced` when
    given); nothing there is fine."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        os.rmdir(name, dir_fd=dir_fd)
    elif displaced is not None:
        displaced(dir_fd, name)
    else:
        os.unlink(name, dir_fd=dir_fd)


Displaced = Callable[[int, str], None]
"""Takes a replaced or removed entry (folder descriptor, name) off the call's path
(kernel.transaction.trash.Trash.take); without one it is unlinked."""


def write_file_at(dir_fd: int, name: str, src_fd: int, mode: int,
                  displaced: Displaced | None = None) -> None:
    """Put a copy of `src_fd`'s bytes at `name` with `mode`: written to a temporary name in
    the same folder, then renamed over (a reader never sees half a file); with
    `displaced`, swapped with what was there, which `displaced` takes. A folder at `name`
    is refused (IsADirectoryError); it must be removed first."""
    _write_at(dir_fd, name, lambda fd: copy_fd(src_fd, fd), mode, displaced)


def write_bytes_at(dir_fd: int, name: str, data: bytes, mode: int,
                   displaced: Displaced | None = None) -> None:
    """Put `data` at `name` with `mode`, as `write_file_at` puts a file's bytes."""
    def fill(fd: int) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]

    _write_at(dir_fd, name, fill, mode, displaced)


def _write_at(dir_fd: int, name: str, fill: Callable[[int], None], mode: int,
              displaced: Displaced | None) -> None:
    tmp = temp_name(name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600, dir_fd=dir_fd)
    try:
        try:
            fill(fd)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        if displaced is not None and _swapped(dir_fd, tmp, name):
            displaced(dir_fd, tmp)
        else:
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def _swapped(dir_fd: int, tmp: str, name: str) -> bool:
    """Swap `tmp` with `name` when `name` is there (a folder is refused); False when it is
    absent or cannot be swapped (then `tmp` is renamed over it)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, f"{name!r} is a folder")
    try:
        rename2(dir_fd, tmp, dir_fd, name, RENAME_EXCHANGE)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.EINVAL, errno.ENOSYS):
            return False
        raise
    return True


def rename2(src_dir: int, src: str, dst_dir: int, dst: str, flags: int) -> None:
    """renameat2(2): `RENAME_EXCHANGE` swaps two entries atomically, `RENAME_NOREPLACE`
    fails (EEXIST) rather than replace one. OSError(ENOSYS) without it."""
    if _RENAMEAT2 is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    if _RENAMEAT2(src_dir, fs_bytes(src), dst_dir, fs_bytes(dst), flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{os.strerror(code)}: {src!r} → {dst!r}")


STRIPPED_XATTRS = ("user.", "trusted.overlay.", "system.posix_acl_")
"""What a file moved in from an upper layer loses, as a copy would: the overlay's marks and
whatever its owner may set (security labels stay: the system sets those)."""


def strip_xattrs(dir_fd: int, name: str) -> None:
    """Remove the extended attributes of the file `name` that a copy would not carry
    (STRIPPED_XATTRS). OSError when one cannot be removed."""
    path = f"/proc/self/fd/{dir_fd}/{os.fsdecode(name)}"
    for attr in os.listxattr(path, follow_symlinks=False):
        if attr.startswith(STRIPPED_XATTRS):
            os.removexattr(path, attr, follow_symlinks=False)


def write_link_at(dir_fd: int, name: str, target: str) -> None:
    """Make `name` a symlink to `target` (made under a temporary name, renamed over)."""
    tmp = temp_name(name)
    os.symlink(os.fsencode(target), tmp, dir_fd=dir_fd)
    try:
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def chmod_at(dir_fd: int, name: str, mode: int) -> None:
    """Set the permission bits of the file or folder `name`, never through a link (opened
    with O_PATH, so a file without read permission can be changed too)."""
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        if stat.S_ISLNK(os.fstat(fd).st_mode):
            raise OSError(errno.ELOOP, f"{name!r} is a symlink")
        os.chmod(f"/proc/self/fd/{fd}", mode)
    finally:
        os.close(fd)
