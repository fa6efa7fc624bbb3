"""What a person reads of a change set: every changed path, and a unified diff of each change,
bounded.

`shown_changes` compares the lower layer (the workspace as it is) with the upper one (what
the command left), before held changes are kept; `change_diff` is the same for any pair of
texts (an applied step's, from the checkpoints: `Checkpoints.diff`). A secret location's
content is never shown, before or after (the diff would be stored and shown); a binary or
very large file is named, not shown; a link shows where it leads.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kernel.pathrules import secret_match
from kernel.transaction.changeset import Change
from kernel.visible import one_line

MAX_LINES = 400
MAX_FILE_BYTES = 1_000_000


@dataclass(frozen=True)
class Shown:
    """What a person is shown of changes under review: every changed path with its kind
    and size (`listing`, never cut: nothing can be pushed out of sight), then the diff
    (`diff`, cut at MAX_LINES in the preview, whole in `full`). Held changes come first in
    both, so no number of ordinary ones can hide one."""

    listing: tuple[str, ...]
    diff: tuple[str, ...]

    @property
    def cut(self) -> int:
        """How many diff lines the preview leaves out."""
        return max(0, len(self.diff) - MAX_LINES)

    def preview(self, full_at: str = "") -> str:
        """The listing and the diff up to MAX_LINES; a cut says so, and where the full
        diff is (`full_at`, a file) when it was kept."""
        lines = [*self.listing, "", *self.diff[:MAX_LINES]]
        if self.cut:
            where = (f" The full diff is in {full_at} (Open the full diff, or `less` it)."
                     if full_at else "")
            lines.append(f"[The diff is cut here: {self.cut:,} of its {len(self.diff):,} "
                         f"lines are not shown. Every changed path is listed above.{where}]")
        return "\n".join(lines)

    def full(self) -> str:
        return "\n".join([*self.listing, "", *self.diff])


def shown_changes(entries: Iterable[tuple[Change, str]], upper: Path, lower: Path) -> Shown:
    """`entries` (each change with why it is held, '' for an ordinary one) as a person
    reviews them: held ones first, each group in path order."""
    ordered = sorted(entries, key=lambda e: (not e[1], e[0].path))
    held = sum(1 for _c, why in ordered if why)
    others = len(ordered) - held
    counts = ", ".join(part for part in (f"{held:,} held" * bool(held),
                                         f"{others:,} ordinary" * bool(others)) if part)
    listing = [f"Every changed path ({len(ordered):,}: {counts}):"]
    diff: list[str] = []
    for change, why in ordered:
        name = one_line(f"{change.previous} → {change.path}" if change.previous
                        else change.path)  # a name with a newline cannot forge a line
        listing.append(f"{'HELD' if why else '    '} {change.kind:<8} {change.entry:<5} "
                       f"{_size(change, upper, lower):>9}  {name}"
                       + (f"  (held: {why})" if why else ""))
        diff.append(f"# {one_line(change.path)}: {change.kind}" + (f" — held because {why}" if why
                                                           else ""))
        diff += _diff(change, upper, lower)
    return Shown(tuple(listing), tuple(diff))


def _size(change: Change, upper: Path, lower: Path) -> str:
    """The size of the file after the change (before it, for a deletion), for a person."""
    if change.entry != "file":
        return {"dir": "folder", "link": "link"}.get(change.entry, "special")
    side = lower / (change.previous or change.path) if change.kind == "deleted" else \
        upper / change.path
    try:
        size = os.lstat(side).st_size
    except OSError:
        return "?"
    return f"{size:,} B"


def bounded(lines: list[str]) -> str:
    """The lines joined, cut at MAX_LINES with the number left out said."""
    if len(lines) > MAX_LINES:
        left = len(lines) - MAX_LINES
        lines = [*lines[:MAX_LINES], f"[… {left} more lines not shown …]"]
    return "\n".join(lines)


def _diff(change: Change, upper: Path, lower: Path) -> list[str]:
    if is_secret(change):
        return [SECRET_NOTE]
    if change.entry == "link" and change.kind != "deleted":
        return [f"link → {_readlink(upper / change.path)}"]
    if change.entry == "dir":
        return []
    before = "" if change.kind == "created" else _text(lower / (change.previous or change.path))
    after = "" if change.kind == "deleted" else _text(upper / change.path)
    return change_diff(change, before, after)


SECRET_NOTE = "(a secret location: its content is not shown)"


def is_secret(change: Change) -> bool:
    """Whether the change's path (or a rename's old path) is a secret location."""
    return any(secret_match(p) is not None for p in (change.path, change.previous) if p)


def change_diff(change: Change, before: str | None, after: str | None) -> list[str]:
    """The unified diff of one file's change from `before` to `after` (None: binary or too
    large to show). The caller has checked the path is not a secret location."""
    if before is None or after is None:
        return ["(binary or over 1 MB: not shown)"]
    diff = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile="/dev/null" if change.kind == "created" else f"a/{change.previous or change.path}",
        tofile="/dev/null" if change.kind == "deleted" else f"b/{change.path}")
    shown = [line.rstrip("\n") for line in diff]
    return shown or [f"(same content; {change.kind})"]


def _readlink(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError as exc:
        return f"(unreadable: {exc.strerror})"


def _text(path: Path) -> str | None:
    """The file's text; None for a binary or too large one. A missing file reads as ''."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return ""
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a fifo the command left: never read
            return None
        data = os.read(fd, MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    return shown_text(data)


def shown_text(data: bytes) -> str | None:
    """Bytes as text to diff; None for a binary or too large file (read at most
    MAX_FILE_BYTES + 1 bytes of it)."""
    if len(data) > MAX_FILE_BYTES or b"\0" in data:
        return None
    return data.decode("utf-8", "replace")
