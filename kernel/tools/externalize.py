"""The one externalization store: large tool outputs live on disk, the model gets a preview.

Full outputs are written to `<data>/sessions/<session>/tool-results/<call_id>.txt`; the
context keeps a head and a tail cut on character boundaries and a marker that says how much
was left out and where the rest is. The call id is checked before it becomes part of a path,
so a path is never built from model input.
"""

from __future__ import annotations

import codecs
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kernel.paths import AppPaths, check_call_id

HEAD_CHARS = 6_000
TAIL_CHARS = 24_000
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_SURROGATES = re.compile(r"[\ud800-\udfff]+")
_UNPAIRED = re.compile(r"[\ud800-\udc7f\udd00-\udfff]")
"""Surrogates that do not stand for an undecodable byte (those are U+DC80..U+DCFF)."""


def clean_for_model(text: str) -> str:
    """Strip ANSI escapes and show undecodable bytes (and stray surrogates) as U+FFFD."""
    return _SURROGATES.sub("\ufffd", _ANSI.sub("", text))


def encode_text(text: str) -> bytes:
    """UTF-8 bytes of tool output: undecodable bytes kept, stray surrogates as U+FFFD."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return _UNPAIRED.sub("\ufffd", text).encode("utf-8", "surrogateescape")


def split_budget(limit: int) -> tuple[int, int]:
    """Head and tail sizes (characters) for a preview that fits in `limit` characters."""
    head = min(HEAD_CHARS, limit // 5)
    tail = min(TAIL_CHARS, limit - head)
    return head, tail


def omission_marker(omitted_bytes: int, omitted_lines: int | None, path: Path) -> str:
    lines = f", {omitted_lines} lines" if omitted_lines is not None else ""
    return (
        f"\n[… {omitted_bytes} bytes{lines} omitted; full output at {path} "
        f"— page through it with read_tool_output …]\n"
    )


_TEXT_BYTES = bytes(range(32, 127)) + b"\n\r\t\f\b\x1b"
_NOT_CONTROL = _TEXT_BYTES + bytes(range(128, 256))
"""Bytes that do not count against text: printable ASCII, common whitespace, and any byte of
a multi-byte character (>= 128)."""


def looks_binary(sample: bytes) -> bool:
    """A NUL byte, or mostly non-text bytes (ASCII controls), in the first block."""
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    head = sample[:4096]
    nontext = len(head.translate(None, _NOT_CONTROL))  # the controls left, counted in C
    return nontext / len(head) > 0.3


@dataclass(frozen=True)
class Preview:
    text: str
    """What the model sees."""
    path: Path | None
    """Where the full output is, when it was externalized."""
    total_bytes: int


@dataclass(frozen=True)
class Page:
    """One page of a stored output, cut on character boundaries."""

    text: str
    start: int
    """Byte offset where the page starts (moved back to the start of a character)."""
    end: int
    """Byte offset just after the page: the offset of the next page."""
    total: int
    """Size of the whole stored output in bytes."""


def _is_continuation(byte: int) -> bool:
    return (byte & 0xC0) == 0x80


def _char_length(lead: int) -> int:
    """Bytes of the UTF-8 sequence a lead byte announces (1 for anything else)."""
    if 0xF0 <= lead < 0xF8:
        return 4
    if 0xE0 <= lead < 0xF0:
        return 3
    if 0xC0 <= lead < 0xE0:
        return 2
    return 1


def _char_end(data: bytes, start: int) -> int:
    """End of the character starting at `start`: its lead byte and the continuation bytes
    that really follow it (a broken sequence ends early, as a decoder would cut it)."""
    stop = min(len(data), start + _char_length(data[start]))
    end = start + 1
    while end < stop and _is_continuation(data[end]):
        end += 1
    return end


def _char_start(data: bytes, i: int, floor: int) -> int:
    """`i`, or the start of the multi-byte character `i` falls inside of (not before floor)."""
    if i >= len(data) or not _is_continuation(data[i]):
        return i
    for k in range(i - 1, max(floor, i - 3) - 1, -1):
        if not _is_continuation(data[k]):
            return k if _char_end(data, k) > i else i
    return i


class SpoolWriter:
    """Streams a running command's output to its file; memory stays flat.

    Writes are unbuffered: what a command printed is in the file as soon as `write`
    returns, so the output viewer can follow a file that is still being written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = open(path, "wb", buffering=0)  # noqa: SIM115 - closed by close()
        self.bytes_written = 0
        self._tail = b""

    def write(self, data: bytes | memoryview) -> None:
        view = memoryview(data).cast("B")
        if not view:
            return
        done = 0
        while done < len(view):
            written = self._file.write(view[done:])
            if not written:
                raise OSError(f"could not write to the spool file {self.path}")
            done += written
        self.bytes_written += len(view)
        self._tail = (self._tail + bytes(view[-4096:]))[-4096:]

    @property
    def last_line(self) -> str:
        lines = self._tail.rstrip(b"\n").rsplit(b"\n", 1)
        line = lines[-1].decode("utf-8", "replace")
        return clean_for_model(line)[-200:]

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> SpoolWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class OutputStore:
    """Full outputs of one session's tool calls, and the previews the model gets."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def for_session(cls, paths: AppPaths, session_id: str) -> OutputStore:
        return cls(paths.tool_results_dir(session_id))

    def path_for(self, call_id: str) -> Path:
        return self.root / f"{check_call_id(call_id)}.txt"

    def spool(self, call_id: str) -> SpoolWriter:
        self.root.mkdir(parents=True, exist_ok=True)
        return SpoolWriter(self.path_for(call_id))

    def keep_beside(self, call_id: str, kind: str, text: str) -> Path:
        """Store `text` beside the call's output as `<call>.<kind>.txt` (what a person may
        open in full: a change set's whole diff) and give its path."""
        path = self.root / f"{check_call_id(call_id)}.{kind}.txt"
        self.root.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, encode_text(text))
        return path

    def externalize(self, call_id: str, text: str, limit: int) -> Preview:
        """Keep `text` inline when it fits in `limit` characters, else store it in full."""
        data = encode_text(text)
        if len(text) <= limit:
            return Preview(clean_for_model(text), None, len(data))
        path = self.path_for(call_id)
        self.root.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, data)
        head_n, tail_n = split_budget(limit)
        head, tail = text[:head_n], text[len(text) - tail_n :]
        middle = text[head_n : len(text) - tail_n]
        omitted = len(encode_text(middle))
        body = head + omission_marker(omitted, middle.count("\n"), path) + tail
        return Preview(clean_for_model(body), path, len(data))

    def read_page(self, call_id: str, offset: int, limit: int) -> Page:
        """About `limit` bytes of a stored output from byte `offset`, whole characters only.

        A page never splits a UTF-8 character: a start inside a character moves back to its
        first byte and the end moves back to the last whole character (forward, when
        `limit` is smaller than one character), so following `end` from page to page yields
        every byte exactly once. FileNotFoundError when nothing is stored for `call_id`.
        """
        if offset < 0 or limit < 1:
            raise ValueError(f"offset must be ≥ 0 and limit ≥ 1, got {offset} and {limit}")
        path = self.path_for(call_id)
        with open(path, "rb") as f:
            total = os.fstat(f.fileno()).st_size
            offset = min(offset, total)
            lo = max(0, offset - 3)
            f.seek(lo)
            data = f.read(offset - lo + limit + 4)
        start = _char_start(data, offset - lo, 0)
        end = min(len(data), start + limit)
        if end < len(data):
            cut = _char_start(data, end, start)
            end = cut if cut > start else _char_end(data, start)
        text = data[start:end].decode("utf-8", "surrogateescape")
        return Page(clean_for_model(text), lo + start, lo + end, total)

    def preview_file(self, path: Path, limit: int) -> Preview:
        """A preview of a file already on disk (a spooled command output).

        Reads only the head and the tail, so a 1 GB file costs the same as a small one.
        """
        size = path.stat().st_size
        head_n, tail_n = split_budget(limit)
        with open(path, "rb") as f:
            sample = f.read(min(size, max(limit * 4, 4096)))
            if looks_binary(sample):
                return Preview(
                    f"[binary output, {size} bytes, not shown; full output at {path}]",
                    path,
                    size,
                )
            if size <= limit * 4:
                text = sample.decode("utf-8", "surrogateescape")
                if len(text) <= limit:
                    return Preview(clean_for_model(text), None, size)
            head = _decode_head(sample, head_n)
            head_bytes = len(encode_text(head))
            f.seek(max(0, size - tail_n * 4))
            tail = _decode_tail(f.read(), tail_n)
        tail_bytes = len(encode_text(tail))
        omitted = max(0, size - head_bytes - tail_bytes)
        body = head + omission_marker(omitted, None, path) + tail
        return Preview(clean_for_model(body), path, size)


def remove_session_outputs(paths: AppPaths, session_id: str) -> bool:
    """Delete what is kept on disk for a session (`<data>/sessions/<session>`: its
    externalized outputs, spool files, kept media); False when it had nothing there.
    Symbolic links inside are removed, never followed (shutil.rmtree works on fds)."""
    folder = paths.session_dir(session_id)
    try:
        shutil.rmtree(folder)
    except FileNotFoundError:
        return False
    return True


def _decode_head(data: bytes, chars: int) -> str:
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    return decoder.decode(data, final=False)[:chars]


def _decode_tail(data: bytes, chars: int) -> str:
    start = 0
    while start < min(3, len(data)) and (data[start] & 0xC0) == 0x80:
        start += 1
    text = data[start:].decode("utf-8", "surrogateescape")
    return text[len(text) - chars :] if len(text) > chars else text


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
