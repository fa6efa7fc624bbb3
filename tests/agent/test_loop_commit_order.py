"""When a tool runs against when the turn that asked for it is on disk: a call with effects
never before its turn is committed; a built-in read while the commit is under way."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import Any

import pytest

from kernel.events import Risk
from kernel.fakemodel import Reply, Text, ToolUse, reply
from kernel.tools.schema import tool
from kernel.tools.spec import ToolSpec
from tests.agent.conftest import Harness, extra_tool


def _stored_calls(harness: Harness) -> list[str]:
    """The ids of the tool calls in the committed history (read by another connection)."""
    with sqlite3.connect(harness.paths.database) as conn:
        rows = conn.execute("SELECT content FROM messages WHERE role = 'assistant'").fetchall()
    return [block["id"] for (content,) in rows for block in json.loads(content)
            if block.get("type") == "tool_use"]


def _recording(name: str, risk: Risk, origin: str, harness: Harness,
               seen: dict[str, list[str]]) -> ToolSpec:
    @tool(name=name, risk=risk, origin=origin)
    def record(tag: str) -> str:
        """Notes which calls are on disk when it runs."""
        seen[tag] = _stored_calls(harness)
        return f"ran {tag}"

    return record


@pytest.mark.parametrize(("risk", "origin"), [
    (Risk.WRITE, "builtin"), (Risk.EXECUTE, "builtin"), (Risk.DESTRUCTIVE, "builtin"),
    (Risk.READ, "mcp:files"),  # a server's own word that a tool only reads is not trusted
])
def test_a_call_with_effects_runs_only_once_its_turn_is_on_disk(
        harness: Harness, risk: Risk, origin: str) -> None:
    seen: dict[str, list[str]] = {}
    extra_tool(harness, _recording("effect", risk, origin, harness, seen))
    harness.server.add(reply("Doing it.", ToolUse("effect", {"tag": "e1"}, id="e1")),
                       reply("Again.", ToolUse("read_file", {"path": "a.txt"}, id="r1"),
                             ToolUse("effect", {"tag": "e2"}, id="e2")),
                       reply("Done."))
    _, finished = harness.run("go")
    assert finished.stop_reason == "end_turn"
    assert seen == {"e1": ["e1"], "e2": ["e1", "r1", "e2"]}


def test_a_builtin_read_runs_while_its_turn_is_being_committed(harness: Harness) -> None:
    """The database's write lock is taken (by another connection) as the model is asked,
    and given back only by the read: the loop waiting for its turn's commit would wait
    for the read, and the store would give up (SQLITE_BUSY) instead."""
    seen: dict[str, list[str]] = {}
    lock = sqlite3.connect(harness.paths.database, isolation_level=None,
                           check_same_thread=False, timeout=30)

    def hold_the_writer(body: Mapping[str, Any]) -> Reply:
        lock.execute("BEGIN IMMEDIATE")
        return reply("Reading.", ToolUse("look", {"tag": "r1"}, id="r1"))

    @tool(name="look", risk=Risk.READ)
    def look(tag: str) -> str:
        """Reads while the writer is held."""
        seen[tag] = _stored_calls(harness)
        lock.execute("ROLLBACK")
        return f"ran {tag}"

    extra_tool(harness, look)
    harness.server.add(hold_the_writer, reply("Done."))
    try:
        sid, finished = harness.run("go")
    finally:
        lock.close()
    assert finished.stop_reason == "end_turn"
    assert seen == {"r1": []}
    assert _stored_calls(harness) == ["r1"]
    assert harness.stored(sid) == harness.reported()


def test_streamed_deltas_are_reported_in_place_between_stored_events(harness: Harness) -> None:
    """A delta is not stored: it is reported right after the event before it (no trip
    through the store's writer), still in order with everything around it."""
    text = "a streamed answer in many small pieces " * 5
    harness.server.add(Reply((Text(text), ToolUse("read_file", {"path": "a.txt"}, id="r1")),
                             chunk_chars=3),
                       Reply((Text("done " * 20),), chunk_chars=4))
    sid, finished = harness.run("go")
    assert finished.stop_reason == "end_turn"
    kinds = [e.type for e in harness.seen]
    deltas = [n for n, kind in enumerate(kinds) if kind == "assistant_delta"]
    texts = [n for n, kind in enumerate(kinds) if kind == "assistant_text"]
    assert len(deltas) > 40 and len(texts) == 2
    first = [n for n in deltas if n < texts[0]]
    assert first == list(range(kinds.index("user_message") + 1, texts[0]))
    assert "".join(harness.seen[n].text for n in first) == text
    second = [n for n in deltas if n > texts[0]]
    assert second == list(range(kinds.index("tool_result") + 1, texts[1]))
    assert harness.stored(sid) == harness.reported()
