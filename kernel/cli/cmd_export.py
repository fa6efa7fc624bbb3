"""`reins export SESSION`: the session's trace as JSON lines (kernel.agent.export.trace_text)."""

from __future__ import annotations

from typing import TextIO

from kernel.agent.export import trace_text
from kernel.agent.runlock import session_lock
from kernel.agent.store import SessionStore, UnknownSession
from kernel.cli.errors import EXIT_OK, UsageError
from kernel.paths import AppPaths


def export_command(session_id: str, out: TextIO) -> int:
    paths = AppPaths.from_env()
    if not paths.database.exists():
        raise UsageError(f"no session {session_id!r} (no database at {paths.database})")
    with SessionStore(paths.database) as store:
        store.settle_dead_runs(lambda sid: session_lock(paths, sid), [session_id])
        try:
            info = store.get_session(session_id)
        except UnknownSession as exc:
            raise UsageError(str(exc)) from None
        out.write(trace_text(store, info.session_id))
    return EXIT_OK
