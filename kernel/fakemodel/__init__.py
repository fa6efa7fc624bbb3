"""A loopback fake of the Anthropic Messages API (tests, benchmarks, `reins --self-test`)."""

from kernel.fakemodel.script import (
    Failure,
    Reply,
    Silence,
    Text,
    Thinking,
    ToolUse,
    Turn,
    last_user_text,
    reply,
)
from kernel.fakemodel.server import FakeAnthropicServer, RecordedRequest

__all__ = [
    "Failure",
    "FakeAnthropicServer",
    "RecordedRequest",
    "Reply",
    "Silence",
    "Text",
    "Thinking",
    "ToolUse",
    "Turn",
    "last_user_text",
    "reply",
]
