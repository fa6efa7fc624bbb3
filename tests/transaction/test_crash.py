"""A crash while a command's changes are applied (a real process killed with SIGKILL at
each point): the next Checkpoints opened on the folder leaves the workspace as it was
before the call, names what someone changed since, and lists no step; a step another live
process is applying is left alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernel.transaction.changeset import Change, ChangeSet
from kernel.transaction.checkpoints import OUTSIDE, Checkpoints

ROOT = Path(__file__).resolve().parents[2]
FILES = 12
CHILD = """
import os, signal, sys
from pathlib import Path
from kernel.transaction import apply as applying
from kernel.transaction.checkpoints import Checkpoints, Recorder
from kernel.transaction.upper import read_upper

root, point, after = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
count = 0

def dying(original):
    def step(*args, **kwargs):
        global count
        count += 1
        if count > after:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(*args, **kwargs)
    return step

if point == "keep":
    Recorder._store = dying(Recorder._store)
elif point == "make":
    applying._put = dying(applying._put)
elif point == "commit":
    Recorder.commit = dying(Recorder.commit)
checkpoints = Checkpoints(root / "checkpoints")
changes = read_upper(root / "upper", root / "ws").changes
applied = applying.apply(root / "upper", root / "ws", changes, since_ns=applying.start_stamp(),
                         recorder=checkpoints.begin("s", "c", root / "ws"))
print("finished", applied.ok)
"""


def _layers(root: Path) -> dict[str, str]:
    (root / "ws").mkdir()
    (root / "upper").mkdir()
    for n in range(FILES):
        (root / "ws" / f"f{n}").write_text(f"old {n}\n")
        (root / "upper" / f"f{n}").write_text(f"new {n} and more\n")
    (root / "upper" / "made").write_text("made\n")
    return _contents(root / "ws")


def _contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def _crash(root: Path, point: str, after: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD, str(root), point, str(after)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize(("point", "after"), [
    ("keep", 3),     # keeping the bytes: the step is not written yet
    ("make", 0),     # the step written, nothing changed yet
    ("make", 5),     # half the files moved in
    ("commit", 0),   # every change made and synced, the step not marked done
])
def test_a_crash_at_each_point_leaves_the_workspace_as_before_the_call(
        tmp_path: Path, point: str, after: int) -> None:
    before = _contents(_layers(tmp_path) and tmp_path / "ws")
    done = _crash(tmp_path, point, after)
    assert done.returncode == -9, done.stderr
    if point != "keep":
        assert _contents(tmp_path / "ws") != before or (point == "make" and after == 0)
    with Checkpoints(tmp_path / "checkpoints") as reopened:
        assert reopened.recovered == []
        assert reopened.steps("s") == []
    assert _contents(tmp_path / "ws") == before


def test_a_path_changed_after_the_crash_is_left_and_named(tmp_path: Path) -> None:
    _layers(tmp_path)
    assert _crash(tmp_path, "make", 5).returncode == -9
    (tmp_path / "ws" / "f0").write_text("the user's\n")  # moved in, then changed by the user
    with Checkpoints(tmp_path / "checkpoints") as reopened:
        assert [(b.path, b.reason) for b in reopened.recovered] == [("f0", OUTSIDE)]
    after = _contents(tmp_path / "ws")
    assert after["f0"] == "the user's\n"
    assert all(after[f"f{n}"] == f"old {n}\n" for n in range(1, FILES))
    assert "made" not in after


def test_a_step_a_live_process_is_applying_is_left_alone(tmp_path: Path) -> None:
    _layers(tmp_path)
    with Checkpoints(tmp_path / "checkpoints") as first:
        recorder = first.begin("s", "c", tmp_path / "ws")
        recorder.keep_all(["f0"])
        recorder.pending({})
        os.replace(tmp_path / "upper" / "f0", tmp_path / "ws" / "f0")
        with Checkpoints(tmp_path / "checkpoints") as second:
            assert second.recovered == []
        assert (tmp_path / "ws" / "f0").read_text() == "new 0 and more\n"
        step = recorder.commit(ChangeSet((Change("f0", "modified", "file"),)))
        assert step.call_id == "c"
        assert first.undo("s", "c").ok
    assert (tmp_path / "ws" / "f0").read_text() == "old 0\n"
