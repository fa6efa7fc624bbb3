"""The last apply of an upper layer keeps it as the step's stash: its undo moves the
workspace's old files back (the very inodes), each only when it still holds the kept bytes
and mode; a stash file changed since is not used, and the kept bytes are written instead.
Replaced and removed files go to the trash, which a thread empties."""

from __future__ import annotations

import os
import time
from pathlib import Path

from kernel.transaction.apply import apply, start_stamp
from kernel.transaction.checkpoints import STASHES_KEPT, Checkpoints
from kernel.transaction.upper import read_upper


def _layers(root: Path, n: int) -> dict[str, int]:
    for name in ("ws", "upper"):
        (root / name).mkdir(exist_ok=True)
    for i in range(n):
        (root / "ws" / f"f{i}").write_text(f"old {i}\n")
        (root / "upper" / f"f{i}").write_text(f"new {i} and more\n")
    return {p.name: p.stat().st_ino for p in (root / "ws").iterdir()}


def _apply(root: Path, checkpoints: Checkpoints, call: str) -> None:
    time.sleep(0.02)  # past the coarse clock's tick the files were written in
    since = start_stamp()
    found = read_upper(root / "upper", root / "ws")
    applied = apply(root / "upper", root / "ws", found.changes, since_ns=since, last=True,
                    recorder=checkpoints.begin("s", call, root / "ws"))
    assert applied.ok, applied.conflicts


def test_undo_moves_the_old_files_back_and_checks_each(tmp_path: Path) -> None:
    inodes = _layers(tmp_path, 4)
    with Checkpoints(tmp_path / "checkpoints") as checkpoints:
        _apply(tmp_path, checkpoints, "c1")
        assert not (tmp_path / "upper").exists()  # kept as the step's stash
        [stash] = (tmp_path / "checkpoints" / "stash").iterdir()
        assert (stash / "f0").read_text() == "old 0\n"
        (stash / "f1").write_text("changed in the stash\n")  # not what was kept any more
        (stash / "f2").chmod(0o755)
        assert checkpoints.undo("s", "c1").ok
    ws = tmp_path / "ws"
    assert {p.name: p.read_text() for p in ws.iterdir()} == {
        f"f{i}": f"old {i}\n" for i in range(4)}
    assert ws.joinpath("f0").stat().st_ino == inodes["f0"]  # moved back, not written
    assert ws.joinpath("f3").stat().st_ino == inodes["f3"]
    assert ws.joinpath("f1").stat().st_ino != inodes["f1"]  # written from the kept bytes
    assert ws.joinpath("f2").stat().st_ino != inodes["f2"]
    assert ws.joinpath("f2").stat().st_mode & 0o777 == 0o644
    assert not (tmp_path / "checkpoints" / "stash" / stash.name).exists()


def test_only_the_newest_steps_keep_a_stash_and_the_trash_is_emptied(tmp_path: Path) -> None:
    with Checkpoints(tmp_path / "checkpoints") as checkpoints:
        for call in range(STASHES_KEPT + 2):
            _layers(tmp_path, 2)
            _apply(tmp_path, checkpoints, f"c{call}")
        stashes = sorted(int(p.name) for p in (tmp_path / "checkpoints" / "stash").iterdir())
        assert len(stashes) == STASHES_KEPT and stashes[0] == 3
        assert checkpoints.undo("s", "c0").ok  # no stash any more: from the kept bytes
        assert (tmp_path / "ws" / "f0").read_text() == "old 0\n"
        checkpoints.trash.empty()  # what its thread does
        assert os.listdir(tmp_path / "checkpoints" / "trash") == []


def test_a_file_moved_in_carries_no_extended_attribute_a_copy_would_not(
        tmp_path: Path) -> None:
    inodes = _layers(tmp_path, 2)
    new = tmp_path / "upper" / "f0"
    os.setxattr(new, "user.overlay.origin", b"\0handle")
    os.setxattr(new, "user.set.by.command", b"x")
    moved = new.stat().st_ino
    with Checkpoints(tmp_path / "checkpoints") as checkpoints:
        _apply(tmp_path, checkpoints, "c1")
    landed = tmp_path / "ws" / "f0"
    assert landed.stat().st_ino == moved != inodes["f0"]  # moved, not copied
    assert os.listxattr(landed) == []
    assert landed.read_text() == "new 0 and more\n"
