"""Where the files an apply or an undo displaces go to be freed later, off the call's path.

Freeing a file's inode is what a replace or a removal costs most on a journalling file
system (2-4 ms a file on the disk the bench ran on, where a rename costs 50 µs): so a file
that is replaced (swapped out with renameat2's RENAME_EXCHANGE) or removed is renamed into
the trash folder instead, and a thread removes what is there afterwards. The trash lies in
the checkpoints' folder; a file on another file system is unlinked at once. Nothing in the
trash is ever read again: a crash leaves it to the next `empty`.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
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
        self._again = False

    def take(self, dir_fd: int, name: str) -> None:
        """Move the entry `name` of the folder `dir_fd` into the trash; unlink it where it
        cannot go there (another file system; a folder is then left where it is)."""
        try:
            os.rename(name, f"{os.getpid()}-{next(_NAMES)}", src_dir_fd=dir_fd,
                      dst_dir_fd=self._fd)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            with contextlib.suppress(IsADirectoryError):
                os.unlink(name, dir_fd=dir_fd)

    def discard(self, path: Path) -> None:
        """Move `path` (a file or a whole folder) into the trash and have it emptied later;
        removed at once where it cannot be moved there."""
        parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self.take(parent, path.name)
        except OSError:
            remove_tree(path)
        finally:
            os.close(parent)
        self.empty_later()

    def empty_later(self) -> None:
        """Remove what is in the trash in a thread (one at a time: a call while it runs has
        it go over the trash once more when it is done)."""
        with self._lock:
            if self._emptying is not None:
                self._again = True
                return
            self._emptying = threading.Thread(target=self._empty_until_done,
                                              name="reins-trash", daemon=True)
            self._emptying.start()

    def _empty_until_done(self) -> None:
        while True:
            self.empty()
            with self._lock:
                if not self._again:
                    self._emptying = None
                    return
                self._again = False

    def empty(self) -> None:
        """Remove what is in the trash now (through a descriptor of its own, so `close`
        never waits for it)."""
        try:
            fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return
        try:
            for name in os.listdir(fd):
                try:
                    os.unlink(name, dir_fd=fd)
                except IsADirectoryError:
                    remove_tree(self.folder / name)
                except OSError:
                    continue
        finally:
            os.close(fd)

    def close(self) -> None:
        """Stop taking; a thread still emptying goes on (a daemon: what it leaves, the
        next `empty` removes)."""
        os.close(self._fd)


def remove_tree(folder: Path) -> None:
    """Remove a folder and all in it, as a call's folder is removed (its folders made
    enterable first: an overlay's work folder holds folders of mode 0, a command's upper
    layer read-only ones)."""
    from kernel.sandbox.call_folders import remove_transaction

    remove_transaction(folder)
