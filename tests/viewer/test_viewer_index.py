"""The line index against a naive reference, on small blocks so every edge is reached."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

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


@settings(max_examples=150, deadline=None)
@given(data=content, trailing=st.booleans())
def test_rows_match_reference(tmp_path_factory, data: bytes, trailing: bool) -> None:  # type: ignore[no-untyped-def]
    if trailing:
        data += b"\n"
    path = tmp_path_factory.mktemp("idx") / "f.txt"
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
        # Every character of valid text is shown once: the rows rebuild the file.
        rebuilt = b""
        for r, (_offset, _line, cont) in enumerate(expected):
            if r and not cont:
                rebuilt += b"\n"
            rebuilt += index.row_bytes(r)
        if valid_text(data):
            assert rebuilt == (data[:-1] if data.endswith(b"\n") else data)
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
            for i in range(300):
                f.write(b"line %d\n" % i)
                f.flush()
                if i % 50 == 0:
                    time.sleep(0.25)
                    assert index.row_count() >= i  # rows appear while the file grows
        deadline = time.monotonic() + 10
        while index.row_count() < 300 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert index.row_count() == 300
        assert index.row_bytes(299) == b"line 299"
        generation = index.generation
        os.truncate(path, 0)
        path.write_bytes(b"fresh\n")
        deadline = time.monotonic() + 10
        while index.generation == generation and time.monotonic() < deadline:
            time.sleep(0.01)
        while index.row_count() != 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert index.row_bytes(0) == b"fresh"
    finally:
        index.close()
