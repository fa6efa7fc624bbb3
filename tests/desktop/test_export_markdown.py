"""A session's conversation as Markdown (kernel/agent/export.py), built from its stored events:
prompts and answers as written, a line per tool call with the start of its output in a
fence no output can close, the point where an answer was asked for again, errors."""

from __future__ import annotations

import pytest

from kernel.agent.export import conversation_markdown
from kernel.agent.store import RunState, StoredSession
from kernel.events import (
    AssistantText,
    ErrorEvent,
    MessagesSuperseded,
    ToolCallStarted,
    ToolResultEvent,
    UserMessage,
)

S = "s1"
INFO = StoredSession(S, "Fix the build", "/work/project", "claude-x", "ask", 1_700_000_000.0,
                   1_700_000_100.0, RunState.IDLE)


def test_the_conversation_as_markdown() -> None:
    events = [
        UserMessage(S, "Why does `make` fail?", attachments=[{"name": "log.txt"}]),
        AssistantText(S, "Let me look.\n\n```python\nprint(1)\n```"),
        ToolCallStarted(S, "c1", "run_command", {"command": "make"}, "make"),
        ToolResultEvent(S, "c1", "run_command", True, "execution_error", 1500.0, 20,
                        "/data/c1.txt", "exit code 2\n```not a fence\n" +
                        "".join(f"line {i}\n" for i in range(40))),
        ToolCallStarted(S, "c2", "read_file", {"path": "x"}, "x"),
        ToolResultEvent(S, "c2", "read_file", False, None, 3.0, 5, None, "hello"),
        AssistantText(S, "   "),
        MessagesSuperseded(S, "regenerate", 1),
        AssistantText(S, "The build needs `gcc`."),
        ErrorEvent(S, "rate_limited", "too many requests\nslow down"),
    ]
    text = conversation_markdown(INFO, events)
    assert text.startswith("# Fix the build\n\n- Workspace: `/work/project`\n- Model: claude-x")
    sections = text.split("\n\n")
    assert sum(s.startswith("## You · ") for s in sections) == 1
    assert sum(s.startswith("## Reins · ") for s in sections) == 2, "blank answers left out"
    assert "Why does `make` fail?\n\n*Attached: log.txt*" in text
    assert "```python\nprint(1)\n```" in text, "the answer's Markdown as written"
    assert ("**Tool call** `run_command` — make · error (execution_error) · 1.50 s"
            " · full output: `/data/c1.txt`") in text
    assert "**Tool call** `read_file` — x · ok · 3 ms\n\n```\nhello\n```" in text
    block = text[text.index("````\nexit code 2"):]
    assert block.startswith("````\nexit code 2\n```not a fence\nline 0\n"), "a longer fence"
    assert "line 17\n````\n\n*… 22 more lines*" in block
    assert "line 18" not in block.split("*…")[0]
    assert "answered again; what follows replaces" in text
    assert "> **Error:** too many requests slow down" in text
    assert text.index("Let me look") < text.index("run_command") < text.index("needs `gcc`")


@pytest.mark.parametrize(("is_error", "code", "shown"), [
    (False, None, "ok"),
    (True, "execution_error", "error (execution_error)"),
    (True, "approval_denied", "denied (approval_denied)"),
    (True, "permission_denied", "denied (permission_denied)"),
    (True, "approval_unavailable", "error (approval_unavailable)"),
    (True, "timeout", "timeout"),
    (True, "cancelled", "stopped (cancelled)"),
    (True, "invalid_arguments", "error (invalid_arguments)"),
    (True, None, "error"),
])
def test_a_call_is_shown_with_the_status_the_kernel_gave_it(
        is_error: bool, code: str | None, shown: str) -> None:
    """The Markdown says the status the event carries (kernel.events.call_status, as the chat,
    the timeline and --json do), not a reading of its own: a denied call is denied."""
    result = ToolResultEvent(S, "c1", "run_command", is_error, code, 40.0, 0, None, "")
    text = conversation_markdown(INFO, [ToolCallStarted(S, "c1", "run_command", {}), result])
    assert f"**Tool call** `run_command` · {result.status}" in text
    assert f"**Tool call** `run_command` · {shown} · 40 ms" in text
