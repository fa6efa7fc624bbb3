"""A dead kernel is restarted with a growing back-off and a cap, and the database can be moved
aside: the restart policy and the rename as tables (real kernels, a corrupt database and the
window: test_app_kernel_restart.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from desktop.kernel_client import RestartPolicy
from desktop.kernel_failure import move_database_aside
from kernel import protocol as p

POLICY = RestartPolicy(delays_s=(0.5, 2.0, 5.0), cap=3, stable_s=30.0)
UNUSABLE = p.EXIT_STORE_UNUSABLE


@pytest.mark.parametrize(("failures", "ready_for", "code", "expected"), [
    (0, None, 1, (1, 0.5)),            # died while starting: first restart soon
    (0, 2.0, -9, (1, 0.5)),            # killed after a short while
    (1, None, 1, (2, 2.0)),            # again: waits longer
    (2, None, 1, (3, 5.0)),
    (3, None, 1, (4, None)),           # over the cap: gives up
    (7, None, 1, (8, None)),
    (3, 29.9, -11, (4, None)),         # not stable long enough to start the count anew
    (3, 30.0, -11, (1, 0.5)),          # ran 30 s after it was ready: a first death
    (2, 3600.0, 1, (1, 0.5)),
    (0, None, UNUSABLE, (1, None)),    # the database cannot be used: retrying cannot help
    (0, 3600.0, UNUSABLE, (1, None)),
    (0, None, None, (1, 0.5)),         # no exit code known
    (0, None, 0, (1, 0.5)),            # exited "cleanly" without being asked to
])
def test_the_restart_policy(failures: int, ready_for: float | None, code: int | None,
                            expected: tuple[int, float | None]) -> None:
    assert POLICY.after_death(failures, ready_for, code) == expected


def test_the_last_delay_repeats_up_to_the_cap() -> None:
    policy = RestartPolicy(delays_s=(1.0, 3.0), cap=5)
    assert [policy.after_death(n, None, 1)[1] for n in range(6)] == [1.0, 3.0, 3.0, 3.0,
                                                                      3.0, None]


def _files(folder: Path) -> list[str]:
    return sorted(f.name for f in folder.iterdir())


@pytest.mark.parametrize(("present", "taken", "expected"), [
    ([""], [], ["reins.sqlite3.broken-20260102-030405"]),
    (["", "-wal", "-shm"], [], ["reins.sqlite3.broken-20260102-030405",
                                "reins.sqlite3.broken-20260102-030405-shm",
                                "reins.sqlite3.broken-20260102-030405-wal"]),
    (["", "-journal"], [], ["reins.sqlite3.broken-20260102-030405",
                            "reins.sqlite3.broken-20260102-030405-journal"]),
    ([""], ["reins.sqlite3.broken-20260102-030405"],
     ["reins.sqlite3.broken-20260102-030405", "reins.sqlite3.broken-20260102-030405-2"]),
    (["", "-wal"], ["reins.sqlite3.broken-20260102-030405-wal"],
     ["reins.sqlite3.broken-20260102-030405-2", "reins.sqlite3.broken-20260102-030405-2-wal",
      "reins.sqlite3.broken-20260102-030405-wal"]),
])
def test_moving_the_database_aside_keeps_it_whole_and_overwrites_nothing(
        tmp_path: Path, present: list[str], taken: list[str], expected: list[str]) -> None:
    db = tmp_path / "reins.sqlite3"
    for suffix in present:
        db.with_name(db.name + suffix).write_text(f"content{suffix}")
    for name in taken:
        (tmp_path / name).write_text("older")
    when = time.mktime((2026, 1, 2, 3, 4, 5, 0, 0, -1))
    moved = move_database_aside(db, now=when)
    assert _files(tmp_path) == expected
    assert moved.read_text() == "content" and not db.exists()
    for suffix in present[1:]:
        assert moved.with_name(moved.name + suffix).read_text() == f"content{suffix}"
    for name in taken:
        assert (tmp_path / name).read_text() == "older"


def test_moving_a_missing_database_says_so(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no session database"):
        move_database_aside(tmp_path / "reins.sqlite3")
