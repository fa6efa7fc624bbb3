"""Finding display rows in a file, block by block (pure; no Qt, no threads).

A *row* is what the viewer shows on one line: a line of the file, or, for a line longer than
`cap` bytes, one `cap`-byte piece of it (continuation rows). The file is read in fixed blocks
with `os.pread`; `IndexBuilder` keeps, per complete block, the rows and lines that start
before it and where the line containing its first byte starts — three `array('q')`s, 24 bytes
per 64 KB block. Counting newlines is `bytes.count`; a block is scanned row by row only when a
line in it may be longer than `cap`. `scan_block` lists the rows of one block on demand.
"""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass

BLOCK = 1 << 16
CAP = 4096


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


def read_around(fd: int, lo: int, hi: int) -> bytes:
    """The bytes at lo-1 .. hi (a fake b"\\n" before 0), as `scan_block` wants them."""
    if lo == 0:
        return b"\n" + os.pread(fd, hi + 1, 0)
    return os.pread(fd, hi - lo + 2, lo - 1)


class IndexBuilder:
    """The per-block index of one file, extended as far as the file's complete blocks go."""

    def __init__(self, fd: int, *, block: int = BLOCK, cap: int = CAP) -> None:
        if block % cap or cap % 2:
            raise ValueError("block must be a multiple of cap, and cap even")
        self.fd = fd
        self.block = block
        self.cap = cap
        self.generation = 0
        self.reset()

    def reset(self) -> None:
        self.rows_before: array[int] = array("q", [0])
        self.lines_before: array[int] = array("q", [0])
        self.line_start: array[int] = array("q", [0])
        self.size = 0

    @property
    def done(self) -> bool:
        """True when every complete block is indexed."""
        return len(self.rows_before) * self.block > self.size

    def step(self, max_blocks: int) -> bool:
        """Index up to `max_blocks` more blocks; False when there was nothing to do.

        A file that shrank is indexed again from the start, with a new `generation`.
        """
        size = os.fstat(self.fd).st_size
        nb = len(self.rows_before) - 1
        if size < nb * self.block or size < self.size:
            self.generation += 1
            self.reset()
            nb = 0
        grew = size != self.size
        self.size = size
        worked = False
        for _ in range(max_blocks):
            lo = nb * self.block
            hi = lo + self.block
            if hi > size:
                break
            self._index_block(nb, lo, hi)
            nb += 1
            worked = True
        return worked or grew

    def _index_block(self, nb: int, lo: int, hi: int) -> None:
        buf = read_around(self.fd, lo, hi)
        lines_before = self.lines_before[nb]
        line_start = self.line_start[nb]
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
        self.rows_before.append(self.rows_before[nb] + rows)
        self.lines_before.append(lines_before + lines)
        self.line_start.append(next_start)
