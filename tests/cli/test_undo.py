"""`reins undo` as a real process (the console entry) on steps recorded by the library:
without CALL the latest step, again the one before; a path changed since blocks it (exit
1, the path and who changed it said); `--json`; usage errors exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernel.paths import AppPaths
from kernel.transaction.changeset import Change, ChangeSet
from kernel.transaction.checkpoints import Checkpoints

REINS = str(Path(sys.executable).with_name("reins"))


def reins(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REINS, "undo", *args], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ), check=False)


def record(paths: AppPaths, ws: Path, session: str, call: str, rel: str, text: str) -> None:
    with Checkpoints(paths.checkpoints) as kept:
        recorder = kept.begin(session, call, ws)
        recorder.keep(rel)
        existed = (ws / rel).exists()
        (ws / rel).write_text(text)
        recorder.commit(ChangeSet((Change(rel, "modified" if existed else "created",
                                          "file"),)))


@pytest.fixture
def ws(workspace: Path) -> Path:
    (workspace / "a.txt").write_text("a0\n")
    return workspace


def test_undo_takes_the_latest_step_then_the_one_before(reins_home: AppPaths, ws: Path):
    record(reins_home, ws, "s1", "c1", "a.txt", "a1\n")
    record(reins_home, ws, "s1", "c2", "new.txt", "n\n")
    first = reins()
    assert first.returncode == 0, first.stderr
    assert first.stdout == "Undid call c2 of session s1; put back:\n  new.txt\n"
    assert not (ws / "new.txt").exists()
    second = reins("--json")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout) == {"ok": True, "undone": ["c1"], "restored": ["a.txt"],
                                         "blocked": [], "refused": "", "stopped_at": ""}
    assert (ws / "a.txt").read_text() == "a0\n"
    third = reins()
    assert third.returncode == 2
    assert "session s1 has no step left to undo" in third.stderr


def test_a_path_changed_since_blocks_the_undo(reins_home: AppPaths, ws: Path):
    record(reins_home, ws, "s1", "c1", "a.txt", "a1\n")
    record(reins_home, ws, "s2", "c9", "a.txt", "a2\n")
    done = reins("--session", "s1", "c1")
    assert done.returncode == 1
    assert done.stdout == ("Call c1 was not undone; nothing was changed. These paths are "
                           "not what the call left:\n  a.txt: changed by call c9\n")
    (ws / "a.txt").write_text("mine\n")
    blocked = reins("--session", "s1", "--json", "c1")
    assert blocked.returncode == 1
    assert json.loads(blocked.stdout)["blocked"] == [
        {"path": "a.txt", "reason": "changed outside Reins", "by_call": ""}]
    assert (ws / "a.txt").read_text() == "mine\n"
    already = reins("--session", "s2", "c9")
    assert already.returncode == 1
    assert "not what the call left" in already.stdout


@pytest.mark.parametrize(("args", "says"), [
    ((), "nothing has been applied yet"),
    (("--session", "../x"), "must match"),
])
def test_usage_errors_exit_2(reins_home: AppPaths, args: tuple[str, ...], says: str):
    done = reins(*args)
    assert done.returncode == 2
    assert says in done.stderr


def test_an_unknown_call_is_a_usage_error(reins_home: AppPaths, ws: Path):
    record(reins_home, ws, "s1", "c1", "a.txt", "a1\n")
    done = reins("--session", "s1", "nope")
    assert done.returncode == 2
    assert "session 's1' has no step of call 'nope'" in done.stderr
