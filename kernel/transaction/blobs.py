"""Content-addressed file bytes of the checkpoints: `<root>/<sha256[:2]>/<sha256>`.

A file is copied in with its hash computed on the way (one read, a chunk at a time), written
under a temporary name and renamed to its hash: a blob is whole or absent. The same bytes
are kept once however many steps keep them.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
from pathlib import Path

from kernel.transaction.fsat import CHUNK

_LIBC = ctypes.CDLL(None, use_errno=True)


def syncfs(fd: int) -> None:
    """Write out every change of the file system `fd` is on (one call for many files)."""
    if _LIBC.syncfs(fd) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


class Blobs:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def has(self, digest: str) -> bool:
        return self.path(digest).is_file()

    def put_fd(self, fd: int) -> tuple[str, int]:
        """Keep the bytes of the open file `fd` (read from its start): (sha256, size)."""
        os.lseek(fd, 0, os.SEEK_SET)
        root = str(self.root)
        tmp = f"{root}/.in-{os.getpid()}-{os.urandom(6).hex()}"
        digest = hashlib.sha256()
        size = 0
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            try:
                while chunk := os.read(fd, CHUNK):
                    digest.update(chunk)
                    os.write(out, chunk)
                    size += len(chunk)
            finally:
                os.close(out)
            name = digest.hexdigest()
            folder = f"{root}/{name[:2]}"
            if os.path.exists(f"{folder}/{name}"):
                os.unlink(tmp)
            else:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(folder)
                os.replace(tmp, f"{folder}/{name}")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return name, size

    def open(self, digest: str) -> int:
        """A read descriptor of a kept blob (FileNotFoundError when it was dropped)."""
        return os.open(self.path(digest), os.O_RDONLY | os.O_CLOEXEC)

    def drop(self, digest: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path(digest).unlink()

    def sync(self) -> None:
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            syncfs(fd)
        finally:
            os.close(fd)
