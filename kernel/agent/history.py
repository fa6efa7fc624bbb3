"""The session's messages as the model sees them, held by the run and written through the
store's writer in order with the events (a message is kept in memory at once and committed
with what came before it); and the tool calls read out of them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from kernel.agent.store import SessionStore
from kernel.paths import UnsafeIdentifier, check_call_id
from kernel.tools.spec import ToolCall


class History:
    """One session's messages, each change queued for commit as it is made."""

    def __init__(self, messages: list[dict[str, Any]], store: SessionStore, session_id: str,
                 track: Callable[[Future[Any]], None]) -> None:
        self.messages = messages
        self._store = store
        self._session_id = session_id
        self._track = track

    def append(self, message: dict[str, Any]) -> None:
        """Queue the message for commit (in order with everything else) and keep it."""
        self._track(self._store.submit_message(self._session_id, message))
        self.messages.append(message)

    def add_user_blocks(self, blocks: list[dict[str, Any]]) -> None:
        """Append a user turn, merged into the previous one if that is a user turn too."""
        if self.messages and self.messages[-1]["role"] == "user":
            previous = self.messages[-1]["content"]
            old = [{"type": "text", "text": previous}] if isinstance(previous, str) else previous
            merged = {"role": "user", "content": [*old, *blocks]}
            self._track(self._store.submit_replace_last_message(self._session_id, merged))
            self.messages[-1] = merged
        else:
            self.append({"role": "user", "content": blocks})

    def replace(self, fixed: Sequence[Mapping[str, Any]], changed: Sequence[int]) -> None:
        """Take the `changed` messages of `fixed` for good (media made sendable)."""
        for index in changed:
            self.messages[index] = dict(fixed[index])
            self._track(self._store.submit_replace_message(self._session_id, index,
                                                           self.messages[index]))

    def pending_calls(self) -> list[ToolCall]:
        """The calls of a last assistant turn, which have no results yet."""
        if not self.messages or self.messages[-1]["role"] != "assistant":
            return []
        content = self.messages[-1]["content"]
        return [] if isinstance(content, str) else tool_calls(content)


def tool_calls(content: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    """The tool calls of one message's blocks, in order."""
    return [ToolCall(b["id"], b["name"], b.get("input")) for b in content
            if b.get("type") == "tool_use"]


def call_ids(messages: Sequence[Mapping[str, Any]]) -> set[str]:
    """The ids of the tool calls in these messages."""
    return {str(b.get("id")) for m in messages if isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, Mapping) and b.get("type") == "tool_use"}


def safe_call_id(call_id: Any) -> bool:
    """The id can name a stored result or file (the model chose it)."""
    try:
        check_call_id(call_id)
    except UnsafeIdentifier:
        return False
    return True
