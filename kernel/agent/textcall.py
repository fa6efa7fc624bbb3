"""A tool call written as text: a final answer that is only a JSON object naming a tool.

Small local models (through llama.cpp or Ollama) sometimes answer with the call they mean
to make, as text, instead of a tool_use block: a fenced ```json object, a `<tool_call>`
tag, an OpenAI-style `{"function": {"name": ...}}`. Run as it is, that ends the run with the
JSON as its answer. `text_tool_call` recognizes such an answer (pure; table-tested); the
loop then tells the model once, with TOOL_INTERFACE_PROMPT, and goes on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

TOOL_INTERFACE_PROMPT = (
    "Your last answer was a call to the tool {name!r} written as text, so nothing was run. "
    "Tools are called only through the tool interface (a tool_use block), never by writing "
    "JSON in the answer. Make the call that way now if you still need it, or answer in "
    "words.")

_WRAPPERS = (
    re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL),
    re.compile(r"^<(tool_call|function_call|tool_use|invoke)\b[^>]*>(.*)</\1>$",
               re.DOTALL | re.IGNORECASE),
)
_NAME_KEYS = ("name", "tool", "tool_name", "function", "recipient_name")
_ARG_KEYS = ("input", "arguments", "args", "parameters", "params", "tool_input")
_MAX_CHARS = 200_000


def _unwrap(text: str) -> str:
    """The text inside fences or a tool-call tag (repeatedly: a fence inside a tag)."""
    inner = text.strip()
    for _ in range(3):
        for pattern in _WRAPPERS:
            found = pattern.match(inner)
            if found:
                inner = found.groups()[-1].strip()
                break
        else:
            return inner
    return inner


def _named(value: Any, names: frozenset[str]) -> str | None:
    if not isinstance(value, Mapping):
        return None
    for key in _NAME_KEYS:
        item = value.get(key)
        if isinstance(item, str) and item in names:
            return item
        if isinstance(item, Mapping):
            inner = _named(item, names)
            if inner is not None:
                return inner
    if len(value) == 1:
        (key, item), = value.items()
        if key in names and (isinstance(item, Mapping) or item is None):
            return str(key)
        if key in ("tool_calls", "tool_use", "call") or key in _ARG_KEYS:
            return _named(item[0] if isinstance(item, list) and item else item, names)
    return None


def text_tool_call(text: str, tool_names: Iterable[str]) -> str | None:
    """The registered tool a final answer names, when the answer is nothing but a JSON
    object (or a list of them) calling it; None for every other answer."""
    if not text or len(text) > _MAX_CHARS:
        return None
    inner = _unwrap(text)
    if not inner.startswith(("{", "[")):
        return None
    try:
        value = json.loads(inner)
    except ValueError:
        return None
    names = frozenset(tool_names)
    if isinstance(value, list):
        found = [_named(v, names) for v in value]
        return found[0] if found and all(found) else None
    return _named(value, names)
