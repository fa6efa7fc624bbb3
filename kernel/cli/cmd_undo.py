"""`reins undo [--session ID] [--json] [CALL]`: undo one applied step headless.

Without CALL, the latest step of the session not undone yet (so a second `reins undo` takes
the one before); without `--session`, the session of the newest step. Prints the paths put
back, or exactly which paths blocked the undo and why (then nothing changed and the exit
code is 1). `--json` prints the UndoResult as one JSON object.
"""

from __future__ import annotations

import json
from typing import TextIO

from kernel.cli.errors import EXIT_ERROR, EXIT_OK, UsageError
from kernel.paths import AppPaths, UnsafeIdentifier, check_call_id, check_session_id
from kernel.policy.settings import load_settings
from kernel.transaction.checkpoints import CheckpointError, Checkpoints, UndoResult


def undo_command(session: str | None, call: str | None, as_json: bool, out: TextIO) -> int:
    paths = AppPaths.from_env()
    try:
        if session is not None:
            check_session_id(session)
        if call is not None:
            check_call_id(call)
    except UnsafeIdentifier as exc:
        raise UsageError(str(exc)) from None
    if not (paths.checkpoints / "index.sqlite3").exists():
        raise UsageError(f"nothing has been applied yet (no checkpoints in {paths.checkpoints})")
    try:
        with Checkpoints(paths.checkpoints, load_settings(paths).checkpoint_bytes) as kept:
            session = session or kept.latest_session()
            if session is None:
                raise UsageError("nothing has been applied yet")
            if call is None:
                latest = kept.latest_undoable(session)
                if latest is None:
                    raise UsageError(f"session {session} has no step left to undo")
                call = latest.call_id
            result = kept.undo(session, call)
    except CheckpointError as exc:
        raise UsageError(str(exc)) from None
    out.write(json.dumps(result.to_json()) + "\n" if as_json else said(result, session))
    return EXIT_OK if result.ok else EXIT_ERROR


def said(result: UndoResult, session: str) -> str:
    """The result in words, one path a line."""
    if result.ok:
        lines = [f"Undid call {', '.join(result.undone)} of session {session}; put back:"]
        lines += [f"  {path!r}" if _odd(path) else f"  {path}" for path in result.restored]
        return "\n".join(lines) + "\n"
    head = f"Call {result.stopped_at} was not undone; nothing was changed"
    if result.refused:
        return f"{head}: {result.refused}\n"
    lines = [f"{head}. These paths are not what the call left:"]
    lines += [f"  {b.path!r}: {b.reason}" if _odd(b.path) else f"  {b.path}: {b.reason}"
              for b in result.blocked]
    return "\n".join(lines) + "\n"


def _odd(path: str) -> bool:
    """A path that would not print as itself (a newline, a byte that is not UTF-8, …)."""
    return not path.isprintable()
