"""Display rows of a file of any size, found without reading the file into memory.

    index = LineIndex(path)          # opens the file; raises OSError if it cannot
    index.start()                    # builds the index in a background thread, then follows
                                     # the file's growth (tail -f) until close()
    index.row_count(), index.line_count(), index.done
    index.row(r) -> Row              # byte offset, 0-based line number, continuation flag
    index.row_bytes(r) -> bytes      # at most `cap` bytes, without the newline
    index.row_at_offset(off), index.row_of_line(line)
    index.close()

A *row* is what the viewer shows on one line: a line of the file, or, for a line longer than
`cap` bytes, one `cap`-byte piece of it (continuation rows), so a 1 GB line without newlines
is still shown and scrolled row by row.

How: the file is read in fixed blocks (64 KB) with `os.pread`; for each block the index keeps
three numbers — rows and lines that start before it and where the line that contains its first
byte starts — in `array('q')`s (24 bytes per 64 KB: 384 KB for 1 GB). Counting newlines is
`bytes.count`; a block is scanned row by row in Python only when a line in it may be longer
than `cap` (an aligned half-cap window without a newline, or the line carried into it). The
rows of a block are computed again on demand (a few microseconds) and kept in a small LRU
cache. The last, partial block is scanned on demand, so a growing file shows new lines as
soon as they are written. A file that shrinks is indexed again from the start (`generation`
changes). Pages are read with `pread` rather than memory-mapped: a mapped file truncated by
the command still writing it would kill the UI with SIGBUS.

Every method is safe to call from the UI thread while the indexer runs.
"""

from __future__ import annotations

import os
import threading
from array import array
from bisect import bisect_right
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

BLOCK = 1 << 16
CAP = 4096
FOLLOW_POLL_S = 0.2
_CACHE_BLOCKS = 64


@dataclass(frozen=True)
class Row:
    offset: int
    line: int
    """0-based line number of the file line this row belongs to."""
    continuation: bool
    """True for the second and later pieces of a line longer than the cap."""


@dataclass(frozen=True)
class BlockRows:
    starts: array  # type: ignore[type-arg]
    lines: array  # type: ignore[type-arg]
    """Per row: 0-based line number (the same for a line's continuation rows)."""
    flags: bytes
    """Per row: 1 where a line starts, 0 on a continuation."""
    line_start_after: int
    """Start of the line that contains the first byte after the block."""


def scan_block(buf: bytes, lo: int, hi: int, line_start: int, lines_before: int,
               cap: int) -> BlockRows:
    """Every row start in [lo, hi).

    `buf` holds the bytes at positions lo-1 .. hi (one before and one after the block; for
    lo == 0 the byte before is a fake b"\\n" so that 0 is a line start). `line_start` is the
    start of the line containing lo and `lines_before` the number of lines starting before lo.
    """
    n = hi - lo
    starts: array[int] = array("q")
    flags = bytearray()
    s = line_start
    i = buf.find(b"\n", 0, n)
    while True:
        # A forced break must come before the newline that ends the current line.
        if i >= 0:  # noqa: SIM108 - two cases, each with its own reason
            limit = lo + i - 1
        else:
            limit = hi - 1 if buf[n : n + 1] == b"\n" else hi
        first_k = max(1, -(-(lo - s) // cap))
        f = s + first_k * cap
        while f < limit:
            starts.append(f)
            flags.append(0)
            f += cap
        if i < 0:
            break
        s = lo + i
        starts.append(s)
        flags.append(1)
        i = buf.find(b"\n", i + 1, n)
    lines: array[int] = array("q")
    line = lines_before - 1
    for flag in flags:
        line += flag
        lines.append(line)
    return BlockRows(starts, lines, bytes(flags), s)


def forced_breaks(buf: bytes, lo: int, hi: int, line_start: int, cap: int) -> int:
    """Rows that start in [lo, hi) when no line starts there (a block inside one line)."""
    limit = hi - 1 if buf[hi - lo : hi - lo + 1] == b"\n" else hi
    first = line_start + max(1, -(-(lo - line_start) // cap)) * cap
    return -(-(limit - first) // cap) if first < limit else 0


def may_have_long_rows(buf: bytes, lo: int, hi: int, line_start: int, cap: int) -> bool:
    """False only when no row of [lo, hi) can start at a forced (cap) break."""
    n = hi - lo
    first_end = buf.find(b"\n", 1, n + 2)
    end = lo - 1 + first_end if first_end >= 0 else hi + 1
    if end - line_start > cap:
        return True
    half = cap // 2
    find = buf.find
    return any(find(b"\n", w + 1, w + 1 + half) < 0 for w in range(0, n - half + 1, half))


class LineIndex:
    def __init__(self, path: str | Path, *, block: int = BLOCK, cap: int = CAP) -> None:
        if block % cap or cap % 2:
            raise ValueError("block must be a multiple of cap, and cap even")
        self.path = Path(path)
        self.block = block
        self.cap = cap
        self._fd = os.open(self.path, os.O_RDONLY)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cache: OrderedDict[tuple[int, int, int], BlockRows] = OrderedDict()
        self.generation = 0
        self._reset(0)

    def _reset(self, generation: int) -> None:
        self._rows_before: array[int] = array("q", [0])
        self._lines_before: array[int] = array("q", [0])
        self._line_start: array[int] = array("q", [0])
        self._size = 0
        self._done = False
        self.generation = generation
        self._cache.clear()

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Index in a background thread; the first block is indexed before this returns."""
        self._index_available()
        self._thread = threading.Thread(target=self._run, name="viewer-index", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                caught_up = self._index_available(max_blocks=256)
            except OSError:
                return
            if caught_up:
                self._stop.wait(FOLLOW_POLL_S)

    def _index_available(self, max_blocks: int = 1) -> bool:
        """Index up to `max_blocks` complete blocks; True when nothing is left to index."""
        size = os.fstat(self._fd).st_size
        with self._lock:
            nb = len(self._rows_before) - 1
            if size < nb * self.block or size < self._size:
                self._reset(self.generation + 1)
                nb = 0
            self._size = size
        for _ in range(max_blocks):
            lo = nb * self.block
            hi = lo + self.block
            if hi > size or self._stop.is_set():
                break
            buf = self._read_around(lo, hi)
            with self._lock:
                rows_before = self._rows_before[nb]
                lines_before = self._lines_before[nb]
                line_start = self._line_start[nb]
            if buf.count(b"\n", 0, self.block) == 0:  # inside one long line
                rows = forced_breaks(buf, lo, hi, line_start, self.cap)
                lines, next_start = 0, line_start
            elif may_have_long_rows(buf, lo, hi, line_start, self.cap):
                scanned = scan_block(buf, lo, hi, line_start, lines_before, self.cap)
                rows, lines = len(scanned.starts), sum(scanned.flags)
                next_start = scanned.line_start_after
            else:
                rows = lines = buf.count(b"\n", 0, self.block)
                last = buf.rfind(b"\n", 0, self.block)
                next_start = lo + last if last >= 0 else line_start
            with self._lock:
                if len(self._rows_before) - 1 != nb:
                    return False  # reset by a shrink meanwhile
                self._rows_before.append(rows_before + rows)
                self._lines_before.append(lines_before + lines)
                self._line_start.append(next_start)
            nb += 1
        with self._lock:
            self._done = (len(self._rows_before)) * self.block > self._size
            return self._done

    def _read_around(self, lo: int, hi: int) -> bytes:
        if lo == 0:
            return b"\n" + os.pread(self._fd, hi + 1, 0)
        return os.pread(self._fd, hi - lo + 2, lo - 1)

    # --- queries -------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self._size

    @property
    def done(self) -> bool:
        """True when every complete block is indexed (the file's end is reachable)."""
        return self._done

    @property
    def indexed_bytes(self) -> int:
        with self._lock:
            return min(self._size, (len(self._rows_before) - 1) * self.block)

    def row_count(self) -> int:
        with self._lock:
            nb = len(self._rows_before) - 1
            rows = self._rows_before[nb]
            done = self._done
        if done:
            tail = self._block_rows(nb)
            rows += len(tail.starts) if tail else 0
        return rows

    def line_count(self) -> int:
        with self._lock:
            nb = len(self._lines_before) - 1
            lines = self._lines_before[nb]
            done = self._done
        if done:
            tail = self._block_rows(nb)
            lines += sum(tail.flags) if tail else 0
        return lines

    def _block_rows(self, b: int) -> BlockRows | None:
        """The rows of block b (the partial last block included); None past the index."""
        with self._lock:
            nb = len(self._rows_before) - 1
            if b > nb or (b == nb and not self._done):
                return None
            size = self._size
            lo = b * self.block
            hi = min(lo + self.block, size)
            key = (self.generation, b, hi)
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
            line_start = self._line_start[b]
            lines_before = self._lines_before[b]
            fd = self._fd
        if hi <= lo:
            rows = BlockRows(array("q"), array("q"), b"", line_start)
        else:
            buf = b"\n" + os.pread(fd, hi + 1, 0) if lo == 0 else os.pread(fd, hi - lo + 2, lo - 1)
            rows = scan_block(buf, lo, hi, line_start, lines_before, self.cap)
        with self._lock:
            if key[0] == self.generation:
                self._cache[key] = rows
                if len(self._cache) > _CACHE_BLOCKS:
                    self._cache.popitem(last=False)
        return rows

    def _locate(self, r: int) -> tuple[BlockRows, int]:
        with self._lock:
            b = bisect_right(self._rows_before, r) - 1
            base = self._rows_before[b]
        rows = self._block_rows(b)
        if rows is None or not 0 <= r - base < len(rows.starts):
            raise IndexError(f"row {r} is not indexed")
        return rows, r - base

    def row(self, r: int) -> Row:
        rows, j = self._locate(r)
        return Row(rows.starts[j], rows.lines[j], not rows.flags[j])

    def row_bytes(self, r: int) -> bytes:
        """The row's bytes (at most `cap`, the newline and a CR before it removed).

        A piece of a long line is widened to whole UTF-8 characters: it skips the
        continuation bytes it starts with and takes those that finish its last character.
        """
        rows, j = self._locate(r)
        start = rows.starts[j]
        data = os.pread(self._fd, self.cap + 4, start)
        cut = data.find(b"\n", 0, self.cap + 1)
        if cut >= 0:
            data = data[:cut]
            if data.endswith(b"\r"):
                data = data[:-1]
            tail_extra = b""
        else:
            tail_extra = data[self.cap :]
            data = data[: self.cap]
        if rows.flags[j] == 0:
            skip = 0
            while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
                skip += 1
            data = data[skip:]
        extra = 0
        while extra < min(3, len(tail_extra)) and tail_extra[extra] & 0xC0 == 0x80:
            extra += 1
        return data + tail_extra[:extra]

    def row_at_offset(self, offset: int) -> int:
        """The row that shows the byte at `offset` (clamped to the rows indexed)."""
        with self._lock:
            nb = len(self._rows_before) - 1
            b = min(max(0, offset) // self.block, nb)
            base = self._rows_before[b]
        rows = self._block_rows(b)
        if rows is None:
            return max(0, base - 1)
        j = bisect_right(rows.starts, offset) - 1
        return max(0, base + j)

    def row_of_line(self, line: int) -> int | None:
        """The first row of 0-based `line`, or None when that line is not indexed (yet)."""
        if line < 0:
            return None
        with self._lock:
            b = bisect_right(self._lines_before, line) - 1
            base = self._rows_before[b]
        while True:
            rows = self._block_rows(b)
            if rows is None:
                return None
            for j, (flag, ln) in enumerate(zip(rows.flags, rows.lines, strict=True)):
                if flag and ln == line:
                    return base + j
            if rows.lines and rows.lines[-1] > line:
                return None
            base += len(rows.starts)
            b += 1
