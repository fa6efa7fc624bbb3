"""Where a value sits in a JSON text: the line of a JSON path, for error messages."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from json.decoder import scanstring  # type: ignore[attr-defined]  # public, not in typeshed

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def line_of(text: str, path: Sequence[str | int]) -> int | None:
    """The 1-based line where the value at `path` starts (keys and array indexes), or, when
    the path goes deeper than the text, the line of its deepest existing part. None when the
    text is not valid JSON."""
    try:
        return text.count("\n", 0, _locate(text, path)) + 1
    except (ValueError, IndexError):
        return None


def _skip_ws(text: str, idx: int) -> int:
    match = _WS.match(text, idx)
    return match.end() if match else idx


def _locate(text: str, path: Sequence[str | int]) -> int:
    idx = _skip_ws(text, 0)
    for step in path:
        found = _child(text, idx, step)
        if found is None:
            return idx
        idx = found
    return idx


def _child(text: str, idx: int, step: str | int) -> int | None:
    """Start of the member `step` of the container starting at `idx`, or None."""
    opener = text[idx]
    if opener not in "{[":
        return None
    closer = "}" if opener == "{" else "]"
    pos = _skip_ws(text, idx + 1)
    index = 0
    while text[pos] != closer:
        if opener == "{":
            key, pos = scanstring(text, pos + 1)
            pos = _skip_ws(text, pos)
            pos = _skip_ws(text, pos + 1)
            hit = key == step
        else:
            hit = index == step
        if hit:
            return pos
        _, pos = _DECODER.raw_decode(text, pos)
        pos = _skip_ws(text, pos)
        if text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
        index += 1
    return None
