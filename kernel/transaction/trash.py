"""Where the files an apply or an undo displaces go to be freed later, off the call's path.

Freeing a file's inode is what a replace or a removal costs most on a journalling file
system (2-4 ms a file on the disk the bench ran on, where a rename costs 50 µs): so a file
that is replaced (swapped out with renameat2's RENAME_EXCHANGE) or removed is renamed into
the trash folder instead, and a thread removes what is there afterwards. The trash lies in
the checkpoints' folder; a file on another file system is unlinked at once. Nothing in the
trash is ever read again: a crash leaves it to the next `empty`.
"""

from __future__ import annotations

import errno
import itertools
import os
import shutil
import threading
from pathlib import Path

_NAMES = itertools.count()


class Trash:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._lock = threading.Lock()
        self._emptying: threading.Thread | None = None

    def take(self, dir_fd: int, name: str) -> None:
        """Move the entry `name` of the folder `dir_fd` (not a folder) into the trash;
        unlink it where it cannot go there (another file system)."""
        try:
            os.rename(name, f"{os.getpid()}-{next(_NAMES)}", src_dir_fd=dir_fd,
                      dst_dir_fd=self._fd)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            os.unlink(name, dir_fd=dir_fd)

    def empty_later(self) -> None:
        """Remove what is in the trash in a thread (one at a time; a second call while one
        runs is folded into it)."""
        with self._lock:
            if self._emptying is not None and self._emptying.is_alive():
                return
            self._emptying = threading.Thread(target=self.empty, name="reins-trash",
                                              daemon=True)
            self._emptying.start()

    def empty(self) -> None:
        """Remove what is in the trash now."""
        for name in os.listdir(self._fd):
            try:
                os.unlink(name, dir_fd=self._fd)
            except IsADirectoryError:
                shutil.rmtree(self.folder / name, ignore_errors=True)
            except OSError:
                continue

    def close(self) -> None:
        if self._emptying is not None:
            self._emptying.join()
        os.close(self._fd)
