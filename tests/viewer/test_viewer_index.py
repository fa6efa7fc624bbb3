"""The line index against a naive reference, on small blocks so every edge is reached."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desktop.viewer.blocks import IndexBuilder, read_around, scan_block
from desktop.viewer.index import LineIndex


def reference_rows(data: bytes, cap: int) -> list[tuple[int, int, bool]]:
    """(offset, line, continuation) of every row, computed the obvious way."""
    rows: list[tuple[int, int, bool]] = []
    pos, line = 0, 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        rows.append((pos, line, False))
        f = pos + cap
        while f < end:
            rows.append((f, line, True))
            f += cap
        pos, line = end + 1, line + 1
    return rows


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 20
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert condition()


def wait_done(index: LineIndex) -> None:
    deadline = time.monotonic() + 20
    while not index.done and time.monotonic() < deadline:
        time.sleep(0.005)
    assert index.done


content = st.lists(
    st.one_of(
        st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"x")),
        st.integers(0, 200).map(lambda n: b"L" * n),
        st.just(b"\xe2\x82\xac" * 7),  # multi-byte characters across cap boundaries
    ),
    max_size=40,
).map(lambda parts: b"\n".join(parts))


def builder_rows(path: Path, block: int, cap: int) -> list[tuple[int, int, bool]]:
    """Every row as the index finds them: per-block counts, then each block listed."""
    fd = os.open(path, os.O_RDONLY)
    try:
        builder = IndexBuilder(fd, block=block, cap=cap)
        while builder.step(3):
            pass
        assert builder.done
        rows: list[tuple[int, int, bool]] = []
        for b in range(len(builder.rows_before)):
            lo = b * block
            hi = min(lo + block, builder.size)
            if hi <= lo:
                break
            listed = scan_block(read_around(fd, lo, hi), lo, hi, builder.line_start[b],
                                builder.lines_before[b], cap)
            if b + 1 < len(builder.rows_before):  # a complete block: its counts agree
                assert len(listed.starts) == builder.rows_before[b + 1] - builder.rows_before[b]
                assert sum(listed.flags) == builder.lines_before[b + 1] - builder.lines_before[b]
                assert listed.line_start_after == builder.line_start[b + 1]
            rows += [(s, ln, not f) for s, ln, f in
                     zip(listed.starts, listed.lines, listed.flags, strict=True)]
        return rows
    finally:
        os.close(fd)


@settings(max_examples=300, deadline=None)
@given(data=content, trailing=st.booleans())
def test_block_index_matches_reference(tmp_path_factory, data: bytes, trailing: bool) -> None:  # type: ignore[no-untyped-def]
    if trailing:
        data += b"\n"
    path = tmp_path_factory.mktemp("idx") / "f.txt"
    path.write_bytes(data)
    assert builder_rows(path, 32, 8) == reference_rows(data, 8)


CASES = {
    "empty": b"",
    "newlines only": b"\n" * 100,
    "no trailing newline": b"one\ntwo\nthree",
    "long lines": b"short\n" + b"L" * 200 + b"\n" + b"M" * 64 + b"\nend\n",
    "multi-byte across cuts": (b"\xe2\x82\xac" * 30 + b"\n") * 5,
    "one huge line": b"Z" * 1000,
    "invalid utf-8": b"ok\xff\xfe\n\xe2\x82\n" * 20,
}


@pytest.mark.parametrize("name", list(CASES))
def test_line_index_queries(tmp_path: Path, name: str) -> None:
    data = CASES[name]
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    index = LineIndex(path, block=32, cap=8)
    try:
        index.start()
        wait_done(index)
        expected = reference_rows(data, 8)
        assert index.row_count() == len(expected)
        got = [index.row(r) for r in range(len(expected))]
        assert [(g.offset, g.line, g.continuation) for g in got] == expected
        assert index.line_count() == len({line for _, line, _ in expected})
        for r, (offset, line, cont) in enumerate(expected):
            assert index.row_at_offset(offset) == r
            if not cont:
                assert index.row_of_line(line) == r
        assert index.row_of_line(len(expected) + 5) is None
        # Every character of valid text is shown once: the rows rebuild the file.
        rebuilt = b""
        for r, (_offset, _line, cont) in enumerate(expected):
            if r and not cont:
                rebuilt += b"\n"
            rebuilt += index.row_bytes(r)
        if valid_text(data):
            assert rebuilt == (data[:-1] if data.endswith(b"\n") else data)
        else:
            assert "\ufffd" in rebuilt.decode("utf-8", "replace")
    finally:
        index.close()


def valid_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\r" not in data


def test_growing_and_shrinking_file(tmp_path: Path) -> None:
    path = tmp_path / "grow.log"
    path.write_bytes(b"")
    index = LineIndex(path, block=64, cap=16)
    index.start()
    try:
        assert index.row_count() == 0
        with open(path, "ab") as f:
            for i in range(1, 301):
                f.write(b"line %d\n" % (i - 1))
                f.flush()
                if i % 50 == 0:  # rows appear while the file is still open for writing
                    wait_for(lambda i=i: index.row_count() == i)
        assert index.row_bytes(299) == b"line 299"
        generation = index.generation
        os.truncate(path, 0)
        path.write_bytes(b"fresh\n")
        wait_for(lambda: index.generation != generation and index.row_count() == 1)
        assert index.row_bytes(0) == b"fresh"
        assert index.line_count() == 1
    finally:
        index.close()
