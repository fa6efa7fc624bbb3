"""The API key kept in a file readable only by its owner, for a system with no keyring.

Only when the user chose it in Settings (never as a fallback of its own): the file is
`AppPaths.api_key_file` (in the config folder), mode 0600, as Claude Code keeps its
credentials on Linux. The app writes it (desktop.settings.keystore); the kernel reads it
(kernel.model.provider_config.resolve_api_key, after the keyring, before the environment).
A file that others may read or write, or that is not the user's own regular file, is
refused with a message, never used. Loads nothing heavy: the UI imports it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

MODE = 0o600


class KeyFileError(OSError):
    """The key file exists but may not be used (its mode, owner or type); says why."""


def read_key_file(path: Path) -> str | None:
    """The key in the file; None when there is no file (or it is empty). KeyFileError
    when it is not the user's own regular file readable by nobody else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise KeyFileError(f"the key file {path} cannot be read: {exc.strerror}") from exc
    try:
        problem = _unsafe(os.fstat(fd))
        if problem:
            raise KeyFileError(f"the key file {path} is not used: {problem}")
        key = os.read(fd, 64 * 1024).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)
    return key or None


def _unsafe(info: os.stat_result) -> str:
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if info.st_uid != os.geteuid():
        return "it belongs to another user"
    if info.st_mode & 0o077:
        return (f"others may read or change it (mode {stat.S_IMODE(info.st_mode):04o}); "
                f"make it {MODE:04o} or save the key again in Settings")
    return ""


def write_key_file(path: Path, key: str) -> None:
    """Keep `key` in the file, mode 0600 from its first byte (a new file renamed over the
    old one); the folder is made 0700 when missing."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 MODE)
    try:
        os.fchmod(fd, MODE)  # whatever the umask
        os.write(fd, key.strip().encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise


def remove_key_file(path: Path) -> None:
    path.unlink(missing_ok=True)
