"""A Messages API request as the JSON bytes that are sent, each message encoded once.

The SDK's `messages.stream(**params)` copies the whole params tree (every dict and list of
the conversation) and encodes the copy as JSON on every request. In a long session that is
the same messages again each round: at round 400 of `bench rounds` about 16 ms of pure
Python a request, a session of N rounds doing N² work, and the copy lived on as garbage
(the SDK's stream is a reference cycle) until the collector walked it. So the provider
sends the body itself (`client.post(..., content=body)`, the SDK's public call for a raw
body) and `RequestEncoder` keeps each message's encoding: a message that was in the last
request as the very same object is not encoded again (the history grows by appending; a
message trimmed or repaired is replaced by a new object, which is encoded once), and the
body is one join of bytes.

The text is what the SDK sends for the same params: compact separators, not ASCII-escaped,
NaN and infinities refused (`ValueError`), mappings as objects and sequences as arrays, the
keys in the params' order and `"stream": true` last. Before encoding, every lone surrogate
(JSON can carry `\\ud800`: a tool's output, a model's answer) is replaced by U+FFFD, so one
such character never makes every later request fail; the history keeps it as it was.
"""

from __future__ import annotations

import itertools
import json
import operator
import re
from collections.abc import Mapping, Sequence, Set
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub_text(value: Any) -> Any:
    """`value` with every lone surrogate in its strings (keys too) replaced by U+FFFD; the
    same object when there is none (the common case costs one regex search per string)."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, Mapping):
        items = [(scrub_text(k), scrub_text(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(),
                                                                strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        scrubbed = [scrub_text(v) for v in value]
        return value if all(a is b for a, b in zip(scrubbed, value, strict=True)) else scrubbed
    return value


class _Encoder(json.JSONEncoder):
    """The SDK's JSON: a mapping that is not a dict as an object, any other sequence or set
    (not text) as an array."""

    def default(self, o: Any) -> Any:
        if isinstance(o, Mapping):
            return dict(o)
        if isinstance(o, Sequence | Set) and not isinstance(o, str | bytes | bytearray):
            return list(o)
        return super().default(o)


_ENCODER = _Encoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode(value: Any) -> bytes:
    """`value`, scrubbed, as UTF-8 JSON text."""
    return _ENCODER.encode(scrub_text(value)).encode()


def _same_value(old: Any, new: Any) -> bool:
    """The same object, or two lists of the same objects (a run sends the same tools and
    system prompt every round; `request_params` makes each request its own list)."""
    if old is new:
        return True
    return (type(old) is list and type(new) is list and len(old) == len(new)
            and all(map(operator.is_, old, new)))


class RequestEncoder:
    """The bodies of one provider's requests. A message keeps its encoding while it is the
    same object: the messages are compared with the last request's place by place in C (a
    message newly trimmed is replaced in place; those after it are still the same), so a
    round encodes what is new since the last one, and costs about the same at round 400 as
    at round 20. The other params are encoded again only when they are other objects."""

    def __init__(self) -> None:
        self._seen: list[Any] = []
        self._encoded: list[bytes] = []
        self._known: dict[int, tuple[Any, bytes]] = {}
        self._params: dict[str, tuple[Any, bytes]] = {}

    def body(self, params: Mapping[str, Any]) -> bytes:
        """The request's JSON text, with `"stream": true`: one join of the pieces (each
        concatenation would copy the whole text again, 1.4 MB a request at round 400)."""
        pieces = [b"{"]
        for key, value in params.items():
            if key == "stream":
                continue
            pieces.append(encode(key) + b":")
            if key == "messages":
                pieces.append(b"[")
                pieces.extend(self._messages(value))
                pieces.append(b"],")
            else:
                pieces.extend((self._param(key, value), b","))
        pieces.append(b'"stream":true}')
        return b"".join(pieces)

    def _param(self, key: str, value: Any) -> bytes:
        last = self._params.get(key)
        if last is None or not _same_value(last[0], value):
            last = self._params[key] = (value, encode(value))
        return last[1]

    def _messages(self, messages: Sequence[Any]) -> list[bytes]:
        """Each message's text with a comma between them."""
        seen = self._seen
        common = min(len(seen), len(messages))
        out = self._encoded[:common]
        for index in itertools.compress(range(common), map(operator.is_not, seen, messages)):
            out[index] = self._message(messages[index])
        out.extend(self._message(message) for message in messages[common:])
        if len(self._known) > 2 * len(messages) + 16:
            self._known = {id(m): (m, e) for m, e in zip(messages, out, strict=True)}
        self._seen, self._encoded = list(messages), out
        if not out:
            return []
        pieces = [b","] * (2 * len(out) - 1)
        pieces[::2] = out
        return pieces

    def _message(self, message: Any) -> bytes:
        entry = self._known.get(id(message))
        if entry is None or entry[0] is not message:
            entry = self._known[id(message)] = (message, encode(message))
        return entry[1]
