"""What read_upper read is used by apply only while each file is still what was read
(kernel.transaction.seen): notes as a table, then real overlays whose files change after
they were read, even with their size and mtime put back."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from kernel.transaction.apply import apply, start_stamp
from kernel.transaction.checkpoints import SMALL_BYTES, SMALL_HELD, Checkpoints
from kernel.transaction.seen import SeenFiles
from kernel.transaction.upper import read_upper
from tests.transaction.overlaykit import build, mount_and_run


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(("size", "data_up_to", "max_data", "noted", "kept"), [
    (10, 64, 1000, True, True),
    (100, 64, 1000, True, False),  # larger than what is noted of the bytes
    (10, 64, 5, True, False),  # past the bytes noted in all
    (0, 64, 1000, True, True),
])
def test_a_note_keeps_small_bytes_of_the_workspace_side(
        tmp_path: Path, size: int, data_up_to: int, max_data: int, noted: bool,
        kept: bool) -> None:
    data = b"x" * size
    (tmp_path / "f").write_bytes(data)
    seen = SeenFiles(data_up_to=data_up_to, max_data=max_data)
    st = os.lstat(tmp_path / "f")
    seen.note("lower", "f", st, data)
    seen.note("upper", "f", st, data)
    read = seen.known("lower", "f", os.lstat(tmp_path / "f"))
    assert (read is not None) == noted
    assert read is not None and read.state.digest == _sha(data)
    assert (read.data is not None) == kept
    upper = seen.known("upper", "f", st)
    assert upper is not None and upper.data is None


@pytest.mark.parametrize("what", ["short read", "not a file"])
def test_what_is_not_a_whole_file_is_not_noted(tmp_path: Path, what: str) -> None:
    (tmp_path / "f").write_bytes(b"abcdef")
    path = tmp_path if what == "not a file" else tmp_path / "f"
    st = os.lstat(path)
    seen = SeenFiles(data_up_to=64, max_data=1000)
    seen.note("lower", "f", st, b"abc")
    assert seen.known("lower", "f", st) is None


def test_a_rewritten_file_is_not_known_even_with_its_size_and_mtime_put_back(
        tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"old!")
    before = os.lstat(path)
    seen = SeenFiles(data_up_to=64, max_data=1000)
    seen.note("lower", "f", before, b"old!")
    path.write_bytes(b"new!")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.lstat(path)
    assert after.st_size == before.st_size and after.st_mtime_ns == before.st_mtime_ns
    assert seen.known("lower", "f", after) is None


def _rewrite_keeping_size_and_mtime(path: Path, data: bytes) -> None:
    st = os.lstat(path)
    assert len(data) == st.st_size
    time.sleep(0.01)  # past the clock tick of the last change
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.fixture
def command(tmp_path: Path) -> tuple[Path, SeenFiles]:
    """A command appended a line to a.txt and b.txt over a real overlay; its upper layer
    was read with a SeenFiles, as settle reads it."""
    build(tmp_path / "lower", {"a.txt": "a\n", "b.txt": "b\n"})
    mount_and_run(tmp_path, "echo more >> a.txt && echo more >> b.txt")
    seen = SeenFiles(data_up_to=SMALL_BYTES, max_data=SMALL_HELD)
    changes = read_upper(tmp_path / "upper", tmp_path / "lower", seen)
    assert {c.path for c in changes} == {"a.txt", "b.txt"}
    assert set(seen.lower) == set(seen.upper) == {"a.txt", "b.txt"}
    return tmp_path, seen


@pytest.mark.parametrize(("side", "path", "data", "undone_to"), [
    # the user changed b.txt after the change set was read (and let the command overwrite
    # it): what undo puts back is the user's bytes, not the ones read before
    ("lower", "b.txt", b"B\n", b"B\n"),
    # what the step records a path becomes is the bytes moved in: an undo finds the file
    # as the step left it (else it would refuse: 'changed outside Reins')
    ("upper", "a.txt", b"a\nMORE\n", b"a\n"),
])
def test_a_file_changed_after_it_was_read_is_recorded_as_it_is(
        command: tuple[Path, SeenFiles], side: str, path: str, data: bytes,
        undone_to: bytes) -> None:
    folder, seen = command
    _rewrite_keeping_size_and_mtime(folder / side / path, data)
    time.sleep(0.01)  # the apply starts a clock tick after that change
    with Checkpoints(folder / "checkpoints") as checkpoints:
        changes = read_upper(folder / "upper", folder / "lower")  # the same paths, unnoted
        applied = apply(folder / "upper", folder / "lower", changes.changes,
                        since_ns=start_stamp(), seen=seen, last=True,
                        recorder=checkpoints.begin("s", "c", folder / "lower"))
        assert applied.ok
        assert checkpoints.undo("s", "c").ok
    assert (folder / "lower" / path).read_bytes() == undone_to
    assert (folder / "lower" / "a.txt").read_bytes() == b"a\n"
