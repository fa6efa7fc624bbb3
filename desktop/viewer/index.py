"""Display rows of a file of any size, found without reading the file into memory.

    index = LineIndex(path)          # opens the file; raises OSError if it cannot
    index.start()                    # indexes the first block now, then starts the worker
                                     # process that indexes the rest and follows the file's
                                     # growth (tail -f) until close()
    index.row_count(), index.line_count(), index.done, index.size
    index.row(r) -> Row              # byte offset, 0-based line number, continuation flag
    index.row_bytes(r) -> bytes      # at most `cap` bytes, without the newline
    index.row_at_offset(off), index.row_of_line(line)
    scan = index.search(pattern)     # a SearchScan run by the same worker
    index.close()

Rows are defined in desktop/viewer/blocks.py (a line, or a `cap`-byte piece of a longer one).
The per-block index is built by the worker process (desktop/viewer/worker.py) and streamed
here as it grows: three `array('q')`s, 24 bytes per 64 KB block (384 KB for 1 GB). The rows
of one block are listed again on demand from those numbers (microseconds for a block of
ordinary lines) and kept in a small LRU cache; the last, partial block is scanned here
whenever it is asked for, so a growing file shows new lines as soon as they are written. A
file that shrinks is indexed again from the start (`generation` changes).

Pages are read with `os.pread` rather than memory-mapped: a mapped file truncated by the
command still writing it would kill the UI with SIGBUS. Every method is safe to call from
the UI thread while the worker's messages arrive on the reader thread.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
import threading
from array import array
from bisect import bisect_right
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from desktop.viewer.blocks import BLOCK, CAP, BlockRows, IndexBuilder, read_around, scan_block
from desktop.viewer.search import Pattern, SearchScan
from desktop.viewer.worker import Message, Worker

_CACHE_BLOCKS = 64


@dataclass(frozen=True)
class Row:
    offset: int
    line: int
    """0-based line number of the file line this row belongs to."""
    continuation: bool
    """True for the second and later pieces of a line longer than the cap."""


class LineIndex:
    def __init__(self, path: str | Path, *, block: int = BLOCK, cap: int = CAP) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_RDONLY)
        mode = os.fstat(self._fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(self._fd)
            code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
            raise OSError(code, "Is a directory" if code == errno.EISDIR
                          else "Not a regular file", str(self.path))
        self._builder = IndexBuilder(self._fd, block=block, cap=cap)
        self.block = block
        self.cap = cap
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[int, int, int], BlockRows] = OrderedDict()
        self._rows_before = self._builder.rows_before
        self._lines_before = self._builder.lines_before
        self._line_start = self._builder.line_start
        self._size = 0
        self._done = False
        self.generation = 0
        self._worker: Worker | None = None
        self._search: SearchScan | None = None
        self._search_ids = itertools.count(1)
        self.worker_alive = False

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Index the first block now (the first screen), and start the worker for the rest."""
        self._builder.step(1)
        with self._lock:
            self._size = self._builder.size
            self._done = self._builder.done
        self._worker = Worker(self.path, self._builder, self._on_message)
        self.worker_alive = True

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    @property
    def worker_pid(self) -> int | None:
        return self._worker.process.pid if self._worker is not None else None

    def search(self, pattern: Pattern) -> SearchScan:
        """Start searching (replacing any earlier search of this file)."""
        scan = SearchScan(next(self._search_ids), pattern, self._cancel)
        self._search = scan
        if self._worker is None or not self.worker_alive:
            scan.finish()
        else:
            self._worker.send(("search", scan.search_id, pattern.text, pattern.regex,
                               pattern.case))
        return scan

    def _cancel(self, search_id: int) -> None:
        if self._worker is not None:
            self._worker.send(("cancel", search_id))

    def _on_message(self, message: Message) -> None:
        kind = message[0]
        if kind == "index":
            _, generation, rows, lines, starts, size, done = message
            with self._lock:
                if generation != self.generation:
                    self.generation = generation
                    self._rows_before = array("q")
                    self._lines_before = array("q")
                    self._line_start = array("q")
                    self._cache.clear()
                self._rows_before.frombytes(rows)
                self._lines_before.frombytes(lines)
                self._line_start.frombytes(starts)
                self._size = size
                self._done = done
        elif kind == "search":
            scan = self._search
            if scan is not None and scan.search_id == message[1]:
                scan.apply(message[2])
        elif kind == "closed":
            self.worker_alive = False
            if self._search is not None:
                self._search.finish()

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
            rows = scan_block(read_around(fd, lo, hi), lo, hi, line_start, lines_before,
                              self.cap)
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
