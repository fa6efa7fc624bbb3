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
        tmp = self.root / f".in-{os.getpid()}-{os.urandom(6).hex()}"
        digest = hashlib.sha256()
        size = 0
        try:
            with open(tmp, "xb") as out:
                while chunk := os.read(fd, CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
            name = digest.hexdigest()
            final = self.path(name)
            if final.exists():
                tmp.unlink()
            else:
                final.parent.mkdir(exist_ok=True)
                os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
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
