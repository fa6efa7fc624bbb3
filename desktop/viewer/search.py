"""Searching a file of any size: the pattern, the chunked scan, and the UI's view of it.

    pattern = compile_pattern("ERROR", regex=False, case=False)   # raises PatternError
    scan = index.search(pattern)      # a SearchScan, fed by the file's worker process
    scan.count, scan.scanned, scan.done, scan.next_after(offset), scan.previous_before(offset)
    scan.stop()

`SearchState` does the work in the worker process (desktop/viewer/worker.py): it reads the
file in 256 KB chunks cut at newlines (`os.pread`, never the whole file), so a match never
spans two lines. A plain search is `bytes.find` (over `bytes.lower()` of the chunk when case
does not matter); a regular expression runs `re` over the bytes. Match byte offsets are kept
up to `MAX_STORED` (8 MB); past that only the count goes on. When the scan reaches the end it
waits for the file to grow and goes on from there; matches in a last line still being written
are provisional and are found again once the line is complete.

Limits: a match inside a line longer than a chunk that straddles a chunk boundary is missed;
case-insensitive matching of non-ASCII letters is not done (the scan is over bytes); plain
matches do not overlap ("aa" in "aaaa" counts 2). Patterns that can match empty text are
refused (they would match at every position).
"""

from __future__ import annotations

import os
import re
import threading
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass

CHUNK = 1 << 18
MAX_STORED = 1_000_000


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


def find_in(pattern: Pattern, data: bytes, base: int, room: int) -> tuple[array[int], int]:
    """Offsets (base + position) of up to `room` matches in `data`, and how many more."""
    found: array[int] = array("q")
    if not pattern.regex:
        haystack = data if pattern.case else data.lower()
        at = haystack.find(pattern.needle) if room > 0 else -1
        while at >= 0:
            found.append(base + at)
            at = haystack.find(pattern.needle, at + len(pattern.needle))
            if len(found) == room and at >= 0:
                return found, haystack.count(pattern.needle, at)
        return found, (haystack.count(pattern.needle) if room <= 0 else 0)
    matches = pattern.compiled.finditer(data)
    for match in matches:
        if len(found) == room:
            return found, 1 + sum(1 for _ in matches)
        found.append(base + match.start())
    return found, 0


@dataclass(frozen=True)
class SearchUpdate:
    """What changed since the last update: keep the first `keep` stored offsets, add these."""

    keep: int
    added: bytes
    count: int
    scanned: int
    done: bool


class SearchState:
    """One search over one file, advanced a chunk at a time (in the worker process)."""

    def __init__(self, fd: int, pattern: Pattern, *, chunk: int = CHUNK) -> None:
        self.fd = fd
        self.pattern = pattern
        self.chunk = chunk
        self.stored = 0
        self.count = 0
        self.committed = 0
        """Bytes scanned up to the end of a complete line."""
        self.scanned = 0
        self.provisional = (0, 0)
        """(count, stored) found in an unfinished last line, dropped when it is rescanned."""

    def step(self) -> SearchUpdate | None:
        """Scan one chunk; None when there was nothing new to scan."""
        size = os.fstat(self.fd).st_size
        if size < self.committed:
            self.stored = self.count = self.committed = self.scanned = 0
            self.provisional = (0, 0)
        if size <= self.scanned:
            return None
        start = self.committed
        data = os.pread(self.fd, min(self.chunk, size - start), start)
        cut = data.rfind(b"\n") + 1
        at_end = start + len(data) >= size
        if cut == 0 and not at_end:
            cut = len(data)  # one line longer than a chunk: cut it anyway
        dropped_count, dropped_stored = self.provisional
        self.count -= dropped_count
        self.stored -= dropped_stored
        self.provisional = (0, 0)
        keep = self.stored
        added = array("q")
        for part, base, provisional in ((data[:cut], start, False),
                                        (data[cut:] if at_end else b"", start + cut, True)):
            if not part:
                continue
            offsets, extra = find_in(self.pattern, part, base, MAX_STORED - self.stored)
            added.extend(offsets)
            self.stored += len(offsets)
            self.count += len(offsets) + extra
            if provisional:
                self.provisional = (len(offsets) + extra, len(offsets))
        self.committed = start + cut
        self.scanned = start + len(data)
        return SearchUpdate(keep, added.tobytes(), self.count, self.scanned,
                            self.scanned >= size)


class SearchScan:
    """The UI's view of a search running in the worker: counts and stored match offsets."""

    def __init__(self, search_id: int, pattern: Pattern, cancel: Callable[[int], None]) -> None:
        self.search_id = search_id
        self.pattern = pattern
        self._cancel = cancel
        self._lock = threading.Lock()
        self._offsets: array[int] = array("q")
        self._count = 0
        self._scanned = 0
        self._done = False

    def apply(self, update: SearchUpdate) -> None:
        with self._lock:
            del self._offsets[update.keep :]
            self._offsets.frombytes(update.added)
            self._count = update.count
            self._scanned = update.scanned
            self._done = update.done

    def finish(self) -> None:
        """The worker is gone: nothing more will be found."""
        self._done = True

    def stop(self) -> None:
        self._cancel(self.search_id)

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
