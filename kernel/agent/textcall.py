"""A tool call written as text: an answer that calls a tool in JSON instead of a tool_use block.

Small local models (through llama.cpp or Ollama) sometimes write the call they mean to make
as text, and a server that does not recognise their spelling passes it on as the answer:
Qwen/Hermes `<tool_call>{json}</tool_call>` tags (one or several, closed or not, with prose
before or after), SmolLM2's list inside such a tag, Mistral's `[TOOL_CALLS][...]` and
`[TOOL_CALLS]name[ARGS]{...}`, Llama's `<|python_tag|>`, a fenced ```json object, an
OpenAI-style `{"function": {"name": ...}}`, or a bare call object inside a sentence. Run as
it is, that ends the run with the JSON as its answer. `text_tool_call` recognizes such an
answer (pure; table-tested); the loop then tells the model once, with TOOL_INTERFACE_PROMPT,
and goes on.

What counts: the whole answer as one call (or a list of calls); anything inside a tool-call
tag or after a `[TOOL_CALLS]`/`<|python_tag|>` marker (the marker says it is a call); and, in
prose, a fenced or bare JSON object that names a registered tool *and* carries its arguments
(`{"name": "read_file"}` quoted in a sentence is not taken for a call).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

TOOL_INTERFACE_PROMPT = (
    "Your last answer was a call to the tool {name!r} written as text, so nothing was run. "
    "Tools are called only through the tool interface (a tool_use block), never by writing "
    "JSON in the answer. Make the call that way now if you still need it, or answer in "
    "words.")

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)\n?```", re.DOTALL)
_WHOLE_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)
_TAG_NAMES = "tool_call|function_call|tool_use|invoke|functioncall|tool_calls"
_TAG = re.compile(rf"<({_TAG_NAMES})\b[^>]*>(.*?)(?:</\1\s*>|(?=<(?:{_TAG_NAMES})\b)|$)",
                  re.DOTALL | re.IGNORECASE)
_MARKER = re.compile(r"\[TOOL_CALLS\]|<\|python_tag\|>|\bfunctools(?=\[)")
_MISTRAL_ARGS = re.compile(r"\s*([A-Za-z0-9_.:-]+)\s*\[ARGS\]")
_NAME_KEYS = ("name", "tool", "tool_name", "function", "recipient_name")
_ARG_KEYS = ("input", "arguments", "args", "parameters", "params", "tool_input")
_MAX_CHARS = 200_000
_MAX_OBJECTS = 64
"""Bare objects tried in one answer's prose (each a JSON parse from a `{`)."""
_DECODER = json.JSONDecoder()


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


def _with_arguments(value: Any) -> bool:
    """A call object that carries its arguments (itself or in its `function`)."""
    if not isinstance(value, Mapping):
        return False
    if any(k in value for k in _ARG_KEYS):
        return True
    inner = value.get("function")
    return isinstance(inner, Mapping) and any(k in inner for k in _ARG_KEYS)


def _call_in(value: Any, names: frozenset[str], *, strict: bool) -> str | None:
    """The tool `value` calls: an object, or a list whose every item is a call. `strict`
    (prose): the object must carry its arguments too."""
    if isinstance(value, list):
        found = [_call_in(v, names, strict=strict) for v in value]
        return found[0] if found and all(found) else None
    name = _named(value, names)
    if name is not None and strict and not _with_arguments(value):
        return None
    return name


def _parse(text: str, *, prefix: bool = False) -> Any:
    """The JSON value `text` is (inside fences, repeatedly), or None; `prefix`: the value
    it starts with, whatever follows (a tag's content)."""
    inner = text.strip()
    for _ in range(3):
        found = _WHOLE_FENCE.match(inner)
        if not found:
            break
        inner = found.group(1).strip()
    if not inner.startswith(("{", "[")):
        return None
    try:
        return json.loads(inner)
    except ValueError:
        return _first_value(inner) if prefix else None


def _first_value(text: str) -> Any:
    """The JSON value at the start of `text`, whatever follows it, or None."""
    try:
        return _DECODER.raw_decode(text.lstrip())[0]
    except ValueError:
        return None


def _bare_objects(text: str) -> Iterator[Any]:
    """Every JSON object that starts at a `{` of `text` and parses (the outermost ones)."""
    position, tried = 0, 0
    while tried < _MAX_OBJECTS:
        start = text.find("{", position)
        if start < 0:
            return
        tried += 1
        try:
            value, end = _DECODER.raw_decode(text, start)
        except ValueError:
            position = start + 1
            continue
        yield value
        position = end


def _marked(text: str, names: frozenset[str]) -> Iterator[str | None]:
    """The calls a tag or a marker says are calls."""
    for tag in _TAG.finditer(text):
        yield _call_in(_parse(tag.group(2), prefix=True), names, strict=False)
    for marker in _MARKER.finditer(text):
        rest = text[marker.end():]
        mistral = _MISTRAL_ARGS.match(rest)
        if mistral and mistral.group(1) in names:
            yield mistral.group(1)
        else:
            yield _call_in(_first_value(rest), names, strict=False)


def _in_prose(text: str, names: frozenset[str]) -> Iterator[str | None]:
    """Fenced blocks and bare objects in prose that are whole calls with arguments."""
    for fence in _FENCE.finditer(text):
        yield _call_in(_parse(fence.group(1)), names, strict=True)
    for value in _bare_objects(text):
        yield _call_in(value, names, strict=True)


def text_tool_calls(text: str, tool_names: Iterable[str]) -> tuple[str, ...]:
    """The registered tools an answer calls in text: the whole answer as a call, else the
    tagged or marked calls, then those in prose (a call found in two spellings is listed
    twice); empty for every other answer."""
    if not text or len(text) > _MAX_CHARS:
        return ()
    names = frozenset(tool_names)
    whole = _call_in(_parse(text), names, strict=False)
    if whole is not None:
        return (whole,)
    found = [n for n in _marked(text, names) if n is not None]
    found += [n for n in _in_prose(text, names) if n is not None]
    return tuple(found)


def text_tool_call(text: str, tool_names: Iterable[str]) -> str | None:
    """The first registered tool an answer calls in text (`text_tool_calls`), else None."""
    found = text_tool_calls(text, tool_names)
    return found[0] if found else None
