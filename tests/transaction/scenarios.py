"""Apply scenarios over real overlay upper layers: conflicts with what the user changed
meanwhile (nothing applied), links that try to take a write outside the workspace, a
failure midway (everything put back), and a held part of a change set.

Each scenario asserts on its own and returns what it saw; `python scenarios.py FOLDER NAME`
runs one and prints that as JSON (the tests run it as nobody as well).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernel.transaction.apply import ApplyError, apply, start_stamp
from kernel.transaction.changeset import Change, split_held
from kernel.transaction.checkpoints import Checkpoints
from kernel.transaction.upper import read_upper
from tests.transaction.overlaykit import Link, Tree, build, manifest, mount_and_run

Scenario = Callable[[Path], dict[str, Any]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(fn: Scenario) -> Scenario:
    SCENARIOS[fn.__name__] = fn
    return fn


def _command(folder: Path, tree: Tree, script: str) -> int:
    """Build the workspace (folder/lower), run `script` over an overlay; the start stamp."""
    build(folder / "lower", tree)
    time.sleep(0.01)
    since = start_stamp()
    mount_and_run(folder, script)
    return since


def _apply(folder: Path, changes: list[Change] | tuple[Change, ...],
           since: int) -> tuple[Any, Checkpoints]:
    checkpoints = Checkpoints(folder / "checkpoints")
    recorder = checkpoints.begin("s1", "c1", folder / "lower")
    return apply(folder / "upper", folder / "lower", changes, since_ns=since,
                 recorder=recorder), checkpoints


def _conflict(folder: Path, tree: Tree, script: str, meanwhile: str) -> dict[str, Any]:
    """The command runs, then the user runs `meanwhile` in the workspace: nothing applied."""
    since = _command(folder, tree, script)
    subprocess.run(["sh", "-ec", meanwhile], cwd=folder / "lower", check=True)
    before = manifest(folder / "lower")
    changes = read_upper(folder / "upper", folder / "lower")
    applied, checkpoints = _apply(folder, changes.changes, since)
    assert not applied.ok
    assert manifest(folder / "lower") == before, "something was applied"
    assert checkpoints.steps("s1") == []
    return {"conflicts": sorted([c.path, c.reason] for c in applied.conflicts)}


@scenario
def user_edited_a_target(folder: Path) -> dict[str, Any]:
    return _conflict(folder, {"a.txt": "a\n", "b.txt": "b\n"},
                     "echo more >> a.txt && echo c > c.txt", "echo mine >> a.txt")


@scenario
def user_deleted_a_target(folder: Path) -> dict[str, Any]:
    return _conflict(folder, {"a.txt": "a\n"}, "echo more >> a.txt && echo c > c.txt",
                     "rm a.txt")


@scenario
def user_made_what_the_command_makes(folder: Path) -> dict[str, Any]:
    return _conflict(folder, {"a.txt": "a\n"}, "echo c > c.txt", "echo mine > c.txt")


@scenario
def user_chmodded_a_file_the_command_deletes(folder: Path) -> dict[str, Any]:
    return _conflict(folder, {"a.txt": "a\n"}, "rm a.txt", "chmod 600 a.txt")


@scenario
def user_made_a_folder_on_the_way_a_link(folder: Path) -> dict[str, Any]:
    (folder / "outside").mkdir()
    return _conflict(folder, {"d/x": "x\n"}, "echo y > d/x",
                     f"mv d d.old && ln -s {folder / 'outside'} d && echo o > d/x")


@scenario
def nothing_changed_is_no_step(folder: Path) -> dict[str, Any]:
    since = _command(folder, {"a.txt": "a\n"}, "cat a.txt && touch a.txt")
    found = read_upper(folder / "upper", folder / "lower")
    assert len(found) == 0
    applied, checkpoints = _apply(folder, found.changes, since)
    assert applied.ok and applied.step is None
    assert checkpoints.steps("s1") == [] and checkpoints.latest_undoable("s1") is None
    return {}


@scenario
def user_changed_another_file(folder: Path) -> dict[str, Any]:
    since = _command(folder, {"a.txt": "a\n", "other.txt": "o\n"}, "echo more >> a.txt")
    (folder / "lower/other.txt").write_text("mine\n")
    applied, _ = _apply(folder, read_upper(folder / "upper", folder / "lower").changes, since)
    assert applied.ok, applied.conflicts
    assert (folder / "lower/a.txt").read_text() == "a\nmore\n"
    assert (folder / "lower/other.txt").read_text() == "mine\n"
    return {}


def _outside(folder: Path) -> Path:
    outside = folder / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "x").write_text("outside's own\n")
    return outside


def _untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["x"], list(outside.iterdir())
    assert (outside / "x").read_text() == "outside's own\n"


@scenario
def upper_link_with_a_child(folder: Path) -> dict[str, Any]:
    """A crafted upper: `a` a link out, and a change set naming `a/x` below it."""
    outside = _outside(folder)
    build(folder / "lower", {"keep.txt": "k\n"})
    build(folder / "upper", {"a": Link(str(outside))})
    since = start_stamp() - 1
    found = read_upper(folder / "upper", folder / "lower")
    assert [(c.path, c.kind) for c in found] == [("a", "link")], found
    before = manifest(folder / "lower")
    crafted = [Change("a", "link", "link"), Change("a/x", "created", "file")]
    applied, _ = _apply(folder, crafted, since)
    assert not applied.ok
    _untouched(outside)
    assert manifest(folder / "lower") == before
    alone, _ = _apply(folder, [Change("a/x", "created", "file")], since)
    assert not alone.ok
    _untouched(outside)
    assert manifest(folder / "lower") == before
    return {"conflicts": [[c.path, c.reason] for c in applied.conflicts + alone.conflicts]}


@scenario
def workspace_link_out(folder: Path) -> dict[str, Any]:
    """The workspace has `out`, a link out; the upper has a folder `out` with a file."""
    outside = _outside(folder)
    build(folder / "lower", {"out": Link(str(outside)), "keep.txt": "k\n"})
    build(folder / "upper", {"out/x": "written through\n", "out/new": "new\n"})
    time.sleep(0.01)
    since = start_stamp()
    found = read_upper(folder / "upper", folder / "lower")
    assert {(c.path, c.kind, c.entry) for c in found} == {
        ("out", "replaced", "dir"), ("out/x", "created", "file"),
        ("out/new", "created", "file")}, found
    before = manifest(folder / "lower")
    without_folder = [c for c in found if c.path != "out"]
    applied, _ = _apply(folder, without_folder, since)
    assert not applied.ok
    assert {c.path for c in applied.conflicts} == {"out/x", "out/new"}
    _untouched(outside)
    assert manifest(folder / "lower") == before
    whole, _ = _apply(folder, found.changes, since)
    assert whole.ok, whole.conflicts
    _untouched(outside)
    assert not (folder / "lower/out").is_symlink()
    assert (folder / "lower/out/x").read_text() == "written through\n"
    return {}


@scenario
def upper_file_is_a_link_out(folder: Path) -> dict[str, Any]:
    """The upper's `notes.txt` is a link to a file outside: applied as that link, never as
    the outside file's bytes; a change set calling it a file is refused, nothing changed."""
    outside = _outside(folder)
    build(folder / "lower", {"notes.txt": "mine\n", "a.txt": "a\n"})
    build(folder / "upper", {"notes.txt": Link(str(outside / "x")), "a.txt": "changed\n"})
    time.sleep(0.01)
    since = start_stamp()
    found = read_upper(folder / "upper", folder / "lower")
    assert {(c.path, c.kind, c.entry) for c in found} == {
        ("notes.txt", "replaced", "link"), ("a.txt", "modified", "file")}
    before = manifest(folder / "lower")
    crafted = [Change("a.txt", "modified", "file"), Change("notes.txt", "modified", "file")]
    try:
        crafted_result, _ = _apply(folder, crafted, since)
    except ApplyError as exc:
        refused = str(exc)
    else:
        raise AssertionError(f"a link applied as a file: {crafted_result}")
    assert manifest(folder / "lower") == before
    time.sleep(0.01)  # the rollback rewrote a.txt: a later command's start
    applied, _ = _apply(folder, found.changes, start_stamp())
    assert applied.ok, applied.conflicts
    assert os.readlink(folder / "lower/notes.txt") == str(outside / "x")
    _untouched(outside)
    return {"refused": refused}


@scenario
def failure_midway_source_gone(folder: Path) -> dict[str, Any]:
    """The upper loses a file between reading and applying: the part applied is put back."""
    since = _command(folder, {"a.txt": "a\n", "z.txt": "z\n", "d/y": "y\n"},
                     "echo more >> a.txt && echo b > b.txt && rm d/y && echo zz > z.txt")
    found = read_upper(folder / "upper", folder / "lower")
    (folder / "upper/z.txt").unlink()
    before = manifest(folder / "lower")
    try:
        _apply(folder, found.changes, since)
    except ApplyError as exc:
        message = str(exc)
    else:
        raise AssertionError("applied without its source")
    assert manifest(folder / "lower") == before
    assert not list((folder / "lower").glob(".*.tmp"))
    return {"message": message}


@scenario
def failure_midway_folder_not_writable(folder: Path) -> dict[str, Any]:
    """A folder of the workspace cannot be written (read-only for a user, immutable for
    root): the changes made before it are put back."""
    since = _command(folder, {"a.txt": "a\n", "ro/x": "x\n"},
                     "echo more >> a.txt && echo n > b.txt && echo n > ro/new")
    found = read_upper(folder / "upper", folder / "lower")
    ro = folder / "lower/ro"
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(ro)], check=True)
    else:
        ro.chmod(0o555)
    before = manifest(folder / "lower")
    try:
        _apply(folder, found.changes, start_stamp() if os.geteuid() == 0 else since)
    except ApplyError as exc:
        message = str(exc)
    else:
        raise AssertionError("applied into a folder that cannot be written")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(ro)], check=True)
        else:
            ro.chmod(0o755)
    assert manifest(folder / "lower") == before | {"ro": ("dir", 0o755, "")}
    return {"message": message}


@scenario
def held_part_of_a_deleted_tree(folder: Path) -> dict[str, Any]:
    """`rm -rf d` with d/keep held: the rest is deleted, d and d/keep stay."""
    since = _command(folder, {"d/keep": "k\n", "d/x": "x\n", "d/e/y": "y\n"}, "rm -rf d")
    found = read_upper(folder / "upper", folder / "lower")
    applying, held = split_held(found, ["d/keep"])
    assert {c.path for c in held} == {"d", "d/keep"}
    applied, checkpoints = _apply(folder, applying.changes, since)
    assert applied.ok, applied.conflicts
    assert manifest(folder / "lower") == {"d": ("dir", 0o755, ""),
                                         "d/keep": manifest(folder / "lower")["d/keep"]}
    recorder = checkpoints.begin("s1", "c1", folder / "lower")
    approved = apply(folder / "upper", folder / "lower", held.changes, since_ns=since,
                     recorder=recorder)
    assert approved.ok, approved.conflicts
    assert manifest(folder / "lower") == {}
    return {}


@scenario
def user_added_a_file_to_a_folder_the_command_deletes(folder: Path) -> dict[str, Any]:
    return _conflict(folder, {"d/x": "x\n", "keep": "k\n"}, "rm -rf d", "echo mine > d/mine")


@scenario
def tree_of_odd_depth_applies(folder: Path) -> dict[str, Any]:
    """A folder made read-only by the command still gets its files (modes set last)."""
    since = _command(folder, {"a.txt": "a\n"},
                     "mkdir -p r/s && echo x > r/s/f && chmod 555 r/s r")
    found = read_upper(folder / "upper", folder / "lower")
    applied, _ = _apply(folder, found.changes, since)
    assert applied.ok
    got = manifest(folder / "lower")
    assert got["r"][1] == got["r/s"][1] == 0o555
    assert (folder / "lower/r/s/f").read_text() == "x\n"
    for path in ("r", "r/s"):
        (folder / "lower" / path).chmod(0o755)
    return {}


BIG = 256 << 20


@scenario
def big_file_keeps_memory_flat(folder: Path) -> dict[str, Any]:
    """A 256 MiB file appended to: reading, applying and undoing it never hold it in memory
    (peak RSS grows by far less than the file). Run in a process of its own."""
    build(folder / "lower", {"small.txt": "s\n"})
    with open(folder / "lower/big.log", "wb") as f:
        f.truncate(BIG)
    time.sleep(0.01)
    since = start_stamp()
    mount_and_run(folder, "echo tail >> big.log")
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    found = read_upper(folder / "upper", folder / "lower")
    assert [(c.path, c.kind, c.binary) for c in found] == [("big.log", "modified", True)]
    applied, checkpoints = _apply(folder, found.changes, since)
    assert applied.ok
    assert os.path.getsize(folder / "lower/big.log") == BIG + 5
    assert checkpoints.undo("s1", "c1").ok
    assert os.path.getsize(folder / "lower/big.log") == BIG
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - baseline
    assert grown_kib < 32 << 10, f"peak RSS grew by {grown_kib} KiB"
    return {"grown_kib": grown_kib}


if __name__ == "__main__":
    sys.stdout.write(json.dumps(SCENARIOS[sys.argv[2]](Path(sys.argv[1]))) + "\n")
