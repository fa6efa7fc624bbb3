"""Call ids come from the model and may hold lone surrogates (not UTF-8): the store keeps
events and results under them (a real SQLite file), progress of such a call is still kept
once, and other ids are stored as they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel.agent.store import SessionStore
from kernel.events import ToolProgress
from kernel.tools.spec import ToolResult


@pytest.mark.parametrize("call_id", ["toolu_\ud800", "\udfff", "a\udc80b\ud83d", "é_ok",
                                     "toolu_01", "\U0001f600"])
def test_any_call_id_is_stored_and_found(tmp_path: Path, call_id: str) -> None:
    store = SessionStore(tmp_path / "reins.sqlite3")
    try:
        session = store.create_session(str(tmp_path), "claude-x", "auto")
        for n in range(3):
            store.append_event(ToolProgress(session, call_id, bytes_so_far=n))
        progress = [e for _, e in store.events(session) if isinstance(e, ToolProgress)]
        assert [(e.call_id, e.bytes_so_far) for e in progress] == [(call_id, 2)]
        store.put_result(session, ToolResult(call_id, "out"))
        found = store.get_result(session, call_id)
        assert found is not None and found.text == "out"
    finally:
        store.close()
