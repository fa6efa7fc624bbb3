"""Searching a file of any size in the background: plain text or a regular expression.

    pattern = compile_pattern("ERROR", regex=False, case=False)   # raises PatternError
    scan = SearchScan(path, pattern)
    scan.start()                      # background thread; follows the file's growth
    scan.count, scan.scanned, scan.done, scan.offsets()  # read any time from the UI thread
    scan.stop()

The file is read in 256 KB chunks cut at newlines (`os.pread`, never the whole file), so a
match never spans two lines and each C-level search call holds the GIL for well under a
millisecond: the UI thread is never stalled by the scan. Match byte offsets are kept in an
`array('q')` up to `MAX_STORED` (8 MB); past that only the count goes on. When the scan reaches
the end it waits for the file to grow and goes on from there; matches found in a last line
that is still being written are provisional and are found again once the line is complete.

A plain search is `bytes.find` (over `bytes.lower()` of the chunk when case does not matter),
about 1 GB/s; a regular expression runs `re` over the bytes (slower, above all with
case-insensitive patterns). Limits: a match inside a line longer than a chunk (256 KB) that
straddles a chunk boundary is missed; case-insensitive matching of non-ASCII letters is not
done (the scan is over bytes). Plain matches do not overlap ("aa" in "aaaa" counts 2).
Patterns that can match empty text are refused (they would match at every position).
"""

from __future__ import annotations

import os
import re
import threading
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from pathlib import Path

CHUNK = 1 << 18
MAX_STORED = 1_000_000
FOLLOW_POLL_S = 0.25


class PatternError(ValueError):
    """A search the viewer cannot run, with a message for the user."""


@dataclass(frozen=True)
class Pattern:
    text: str
    regex: bool
    case: bool
    compiled: re.Pattern[bytes]
    display: re.Pattern[str]
    """The same search over decoded text, for highlighting the rows on screen."""
    needle: bytes
    """For a plain search: the bytes to find (lower-cased when case does not matter)."""


def compile_pattern(text: str, *, regex: bool, case: bool) -> Pattern:
    if not text:
        raise PatternError("type something to search for")
    flags = re.MULTILINE | (0 if case else re.IGNORECASE)
    source = text if regex else re.escape(text)
    try:
        compiled = re.compile(source.encode("utf-8", "surrogateescape"), flags)
        display = re.compile(source, flags)
    except re.error as exc:
        raise PatternError(f"invalid regular expression: {exc}") from exc
    if compiled.search(b"") is not None:
        raise PatternError("this pattern matches empty text; make it match at least one "
                           "character")
    needle = text.encode("utf-8", "surrogateescape")
    return Pattern(text, regex, case, compiled, display, needle if case else needle.lower())


class SearchScan:
    def __init__(self, path: str | Path, pattern: Pattern, *, chunk: int = CHUNK) -> None:
        self.path = Path(path)
        self.pattern = pattern
        self._chunk = chunk
        self._fd = os.open(self.path, os.O_RDONLY)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._offsets: array[int] = array("q")
        self._count = 0
        self._committed = 0
        """Bytes scanned up to the end of a complete line."""
        self._scanned = 0
        self._provisional = (0, 0)
        """(count, stored) found in an unfinished last line, dropped when it is rescanned."""
        self._done = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="viewer-search", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def count(self) -> int:
        return self._count

    @property
    def scanned(self) -> int:
        return self._scanned

    @property
    def done(self) -> bool:
        """True while the scan has caught up with the end of the file."""
        return self._done

    @property
    def complete(self) -> bool:
        """True when every match found is stored (navigation reaches all of them)."""
        return self._count == len(self._offsets)

    def offsets(self) -> array[int]:
        """Byte offsets of the stored matches, in file order (a snapshot)."""
        with self._lock:
            return array("q", self._offsets)

    def next_after(self, offset: int) -> int | None:
        """The first stored match after byte `offset`, or None."""
        with self._lock:
            k = bisect_right(self._offsets, offset)
            return self._offsets[k] if k < len(self._offsets) else None

    def previous_before(self, offset: int) -> int | None:
        """The last stored match before byte `offset`, or None."""
        with self._lock:
            k = bisect_left(self._offsets, offset)
            return self._offsets[k - 1] if k > 0 else None

    def first_last(self) -> tuple[int, int] | None:
        with self._lock:
            return (self._offsets[0], self._offsets[-1]) if self._offsets else None

    def rank(self, offset: int) -> int:
        """How many stored matches come before byte `offset`."""
        with self._lock:
            return bisect_left(self._offsets, offset)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if not self._step():
                    self._done = True
                    self._stop.wait(FOLLOW_POLL_S)
        except OSError:
            self._done = True

    def _step(self) -> bool:
        """Scan one chunk; False when there was nothing new to scan."""
        size = os.fstat(self._fd).st_size
        start = self._committed
        if size < start:
            with self._lock:
                self._offsets = array("q")
                self._count = 0
                self._committed = start = 0
                self._provisional = (0, 0)
        if size <= self._scanned and size >= start:
            return False
        self._done = False
        data = os.pread(self._fd, min(self._chunk, size - start), start)
        cut = data.rfind(b"\n") + 1
        at_end = start + len(data) >= size
        if cut == 0 and not at_end:
            cut = len(data)  # one line longer than a chunk: cut it anyway
        complete = data[:cut]
        unfinished = data[cut:] if at_end else b""
        self._drop_provisional()
        self._record(complete, start)
        with self._lock:
            self._committed = start + len(complete)
        if unfinished:
            before = (self._count, len(self._offsets))
            self._record(unfinished, start + cut)
            with self._lock:
                self._provisional = (self._count - before[0], len(self._offsets) - before[1])
        self._scanned = start + len(complete) + len(unfinished)
        return True

    def _drop_provisional(self) -> None:
        count, stored = self._provisional
        if count or stored:
            with self._lock:
                self._count -= count
                del self._offsets[len(self._offsets) - stored :]
                self._provisional = (0, 0)

    def _record(self, data: bytes, base: int) -> None:
        if not data:
            return
        room = MAX_STORED - len(self._offsets)
        found: array[int] = array("q")
        extra = 0
        if room <= 0:
            extra = self._count_only(data)
        elif self.pattern.regex:
            for match in self.pattern.compiled.finditer(data):
                if len(found) == room:
                    extra = self._count_only(data[match.start() :])
                    break
                found.append(base + match.start())
        else:
            haystack = data if self.pattern.case else data.lower()
            needle = self.pattern.needle
            at = haystack.find(needle)
            while at >= 0:
                if len(found) == room:
                    extra = haystack.count(needle, at)
                    break
                found.append(base + at)
                at = haystack.find(needle, at + len(needle))
        with self._lock:
            self._offsets.extend(found)
            self._count += len(found) + extra

    def _count_only(self, data: bytes) -> int:
        if not self.pattern.regex:
            haystack = data if self.pattern.case else data.lower()
            return haystack.count(self.pattern.needle)
        return sum(1 for _ in self.pattern.compiled.finditer(data))
