"""Undo in the timeline, in words (pure): what an undo or a rewind did, or exactly which
files stopped it and why; and each change of a call, one line each.

A stopped undo changed nothing of the call it stopped at (kernel.transaction.checkpoints);
a rewind may have undone later calls before it stopped, and says which.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernel.transaction.changeset import Change, ChangeSet
from kernel.visible import one_line

if TYPE_CHECKING:
    from kernel.protocol import UndoOutcome

MAX_PATHS = 20
"""Paths listed in an outcome; the rest are counted."""


def outcome_words(outcome: UndoOutcome) -> str:
    """The outcome as a person reads it, one path a line."""
    lines: list[str] = []
    if outcome.undone:
        verb = "Undone" if outcome.action == "undo" else "Rewound: undid"
        lines.append(f"{verb} {_calls(outcome.undone)}; put back:")
        lines += _paths(outcome.restored)
    elif outcome.ok:
        lines.append("Nothing to undo after this call." if outcome.action == "rewind"
                     else "Nothing was undone.")
    if not outcome.ok:
        head = f"Call {outcome.stopped_at} was not undone; nothing of it was changed"
        if outcome.refused:
            lines.append(f"{head}: {one_line(outcome.refused)}")
        else:
            lines.append(f"{head}. These files are not what it left:")
            lines += [f"  {one_line(b.path)}: {one_line(b.reason)}"
                      for b in outcome.blocked[:MAX_PATHS]]
            if len(outcome.blocked) > MAX_PATHS:
                lines.append(f"  … and {len(outcome.blocked) - MAX_PATHS} more")
    return "\n".join(lines)


def _calls(calls: tuple[str, ...]) -> str:
    return f"call {calls[0]}" if len(calls) == 1 else f"{len(calls)} calls ({', '.join(calls)})"


def _paths(paths: tuple[str, ...]) -> list[str]:
    shown = [f"  {one_line(p)}" for p in paths[:MAX_PATHS]]
    if len(paths) > MAX_PATHS:
        shown.append(f"  … and {len(paths) - MAX_PATHS} more")
    return shown


def change_line(change: Change) -> str:
    """One change: 'modified  src/a.py  +3 −1' ('renamed  new ← old', 'binary', …)."""
    path = one_line(change.path)
    if change.kind == "renamed":
        path = f"{path} ← {one_line(change.previous)}"
    details = []
    if change.added or change.removed:
        details.append(f"+{change.added} \u2212{change.removed}")
    if change.binary:
        details.append("binary")
    if change.executable and change.kind in ("created", "mode"):
        details.append("executable")
    if change.entry in ("dir", "link"):
        details.append("folder" if change.entry == "dir" else "link")
    return "  ".join([f"{change.kind:<9}", path, *details])


def changes_text(changes: ChangeSet) -> str:
    return "\n".join(change_line(c) for c in changes)
