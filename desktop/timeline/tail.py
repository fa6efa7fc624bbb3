"""The last lines of a file that may still be growing (a running command's output)."""

from __future__ import annotations

import os
from pathlib import Path

TAIL_LINES = 20
TAIL_BYTES = 64 * 1024


def tail_lines(path: Path, count: int = TAIL_LINES, max_bytes: int = TAIL_BYTES) -> str | None:
    """The last `count` lines among the file's last `max_bytes` (None if it cannot be read).
    A line cut by the window's start is dropped; invalid UTF-8 is replaced."""
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            start = max(0, size - max_bytes)
            f.seek(start)
            data = f.read(max_bytes)
    except OSError:
        return None
    lines = data.decode("utf-8", "replace").split("\n")
    if start > 0 and len(lines) > 1:
        lines = lines[1:]
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return "\n".join(lines[-count:])
