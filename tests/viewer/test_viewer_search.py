"""The search scan over a file: plain and regex, stored-match cap, lines still being written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from desktop.viewer import search
from desktop.viewer.search import SearchState, compile_pattern, find_in


def test_find_in_plain_any_case_and_regex() -> None:
    data = b"Error one\nerror two\nERROR three\nfine\n"
    plain = compile_pattern("error", regex=False, case=False)
    assert find_in(plain, data, 100, 10) == (pytest.approx([100, 110, 120]), 0)
    exact = compile_pattern("error", regex=False, case=True)
    assert list(find_in(exact, data, 0, 10)[0]) == [10]
    regex = compile_pattern(r"^\w+ t", regex=True, case=True)
    assert list(find_in(regex, data, 0, 10)[0]) == [10, 20]


def test_find_in_stops_storing_at_room_but_keeps_counting() -> None:
    data = b"ab " * 10
    for pattern in (compile_pattern("ab", regex=False, case=True),
                    compile_pattern("a.", regex=True, case=True)):
        found, extra = find_in(pattern, data, 0, 4)
        assert list(found) == [0, 3, 6, 9]
        assert extra == 6
        found, extra = find_in(pattern, data, 0, 0)
        assert (list(found), extra) == ([], 10)


def test_state_scans_in_chunks_and_rescans_an_unfinished_line(tmp_path: Path) -> None:
    path = tmp_path / "out.log"
    path.write_bytes(b"hit 1\nmiss\n" * 50 + b"partial hit")
    fd = os.open(path, os.O_RDONLY)
    try:
        state = SearchState(fd, compile_pattern("hit", regex=False, case=True), chunk=64)
        updates = []
        while (update := state.step()) is not None:
            updates.append(update)
        assert updates[-1].done and updates[-1].count == 51
        assert len(updates) > 5  # the count filled in chunk by chunk
        assert [u.count for u in updates] == sorted(u.count for u in updates)
        with open(path, "ab") as f:
            f.write(b" and another hit\n")
        update = state.step()
        assert update is not None and update.done
        assert update.count == 52  # the provisional match was dropped, then found again
        assert update.keep == 50
    finally:
        os.close(fd)


def test_stored_matches_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "MAX_STORED", 5)
    path = tmp_path / "many.log"
    path.write_bytes(b"x\n" * 100)
    fd = os.open(path, os.O_RDONLY)
    try:
        state = SearchState(fd, compile_pattern("x", regex=False, case=True), chunk=32)
        stored = 0
        while (update := state.step()) is not None:
            stored = update.keep + len(update.added) // 8
        assert state.count == 100 and stored == 5
    finally:
        os.close(fd)
