"""A command's transaction on 1,000 changed files (goal: read + apply ≤ 60 ms, undo ≤ 60 ms).

A real overlay (unshare -rm, userxattr, as a sandbox mounts it) over a workspace of 1,000
small text files; the command appends a line to each. Apply uses the upper layer up (its
files are moved into place), so each round runs the command again first (untimed).
Figures, each median of `ROUNDS`:
- floors, both by hand on the same files: copying the 1,000 upper files over the workspace
  files (open, read, write a temporary file, rename over: what a copy costs, inodes made
  and freed), and moving them into place (renameat2, what apply does per file when it can);
- read_upper: the change set;
- apply, not durable (no syncfs), and durable (the step's commit and the workspace synced);
- undo of the applied call;
- read + apply again once the index holds `HELD_STEPS` steps of 1,000 files (each step's
  kept bytes are rows of the index: what a long-used index costs).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import fmt_seconds, report
from kernel.transaction.apply import apply, start_stamp
from kernel.transaction.checkpoints import SMALL_BYTES, SMALL_HELD, Checkpoints
from kernel.transaction.fsat import AT_FDCWD, RENAME_EXCHANGE, rename2
from kernel.transaction.seen import SeenFiles
from kernel.transaction.upper import read_upper

FILES = 1_000
ROUNDS = 4
HELD_STEPS = 40
GOAL_S = 0.060


def _lower(root: Path) -> None:
    lower = root / "lower"
    for n in range(FILES):
        folder = lower / f"d{n % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.txt").write_text(f"line one of {n}\nline two\n" * 5)


def _command(root: Path) -> None:
    """A fresh upper layer: the command run again over the workspace (untimed)."""
    for name in ("upper", "work", "merged"):
        if (root / name).exists():
            subprocess.run(["rm", "-rf", str(root / name)], check=True)
        (root / name).mkdir()
    options = f"userxattr,lowerdir={root / 'lower'},upperdir={root / 'upper'}," \
              f"workdir={root / 'work'}"
    subprocess.run(["unshare", "-rm", "sh", "-ec",
                    f"mount -t overlay overlay -o {options} {root / 'merged'} && "
                    f"cd {root / 'merged'} && for f in d*/*.txt; do echo more >> $f; done"],
                   check=True, timeout=120)


def _files(folder: Path) -> list[Path]:
    return sorted(Path(base, name).relative_to(folder) for base, _dirs, names in os.walk(folder)
                  for name in names)


def _floor_copy(root: Path) -> float:
    started = time.perf_counter()
    for rel in _files(root / "upper"):
        data = (root / "upper" / rel).read_bytes()
        target = root / "floor" / rel
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
    return time.perf_counter() - started


def _floor_move(root: Path) -> float:
    """Each file swapped with its twin in another folder (renameat2), as apply moves one."""
    files = _files(root / "floor")
    started = time.perf_counter()
    for rel in files:
        src, dst = root / "floor" / rel, root / "twin" / rel
        rename2(AT_FDCWD, str(src), AT_FDCWD, str(dst), RENAME_EXCHANGE)
    return time.perf_counter() - started


def run() -> None:
    with tempfile.TemporaryDirectory(prefix="reins-bench-txn-") as tmp:
        root = Path(tmp)
        _lower(root)
        for copy in ("floor", "twin"):
            subprocess.run(["cp", "-a", str(root / "lower"), str(root / copy)], check=True)
        copies, moves, reads, applies, durables, undos = [], [], [], [], [], []
        with Checkpoints(root / "checkpoints") as checkpoints:
            for n in range(ROUNDS * 2):
                _command(root)
                copies.append(_floor_copy(root))
                moves.append(_floor_move(root))
                time.sleep(0.01)
                since = start_stamp()
                started = time.perf_counter()
                seen = SeenFiles(data_up_to=SMALL_BYTES, max_data=SMALL_HELD)  # as settle reads
                changes = read_upper(root / "upper", root / "lower", seen)
                applying = time.perf_counter()
                reads.append(applying - started)
                durable = n % 2 == 1
                recorder = checkpoints.begin("bench", f"c{n}", root / "lower")
                applied = apply(root / "upper", root / "lower", changes.changes, since_ns=since,
                                recorder=recorder, durable=durable, last=True, seen=seen)
                undoing = time.perf_counter()
                (durables if durable else applies).append(undoing - applying)
                assert applied.ok and len(applied.changes) == FILES
                assert checkpoints.undo("bench", f"c{n}").ok
                undos.append(time.perf_counter() - undoing)
            later = [_read_and_apply(root, checkpoints, f"h{n}") for n in range(
                HELD_STEPS - ROUNDS * 4)]
        floor = statistics.median(copies)
        report(f"floor: copy {FILES:,} files over by hand", fmt_seconds(floor), ratio=1.0)
        move = statistics.median(moves)
        report(f"floor: move {FILES:,} files into place by hand", fmt_seconds(move),
               ratio=move / floor)
        read = statistics.median(reads)
        report("read_upper", fmt_seconds(read), ratio=read / floor)
        fast = statistics.median(applies)
        report("apply (not synced)", fmt_seconds(fast), ratio=fast / floor)
        report("read_upper + apply", fmt_seconds(read + fast), ratio=(read + fast) / floor,
               goal=f"≤ {GOAL_S * 1e3:.0f} ms", ok=read + fast <= GOAL_S)
        synced = statistics.median(durables)
        report("apply, durable (the step's commit, one syncfs)", fmt_seconds(synced),
               ratio=synced / floor)
        undo = statistics.median(undos)
        report("undo of that call", fmt_seconds(undo), ratio=undo / floor,
               goal=f"≤ {GOAL_S * 1e3:.0f} ms", ok=undo <= GOAL_S)
        held = statistics.median(later[-ROUNDS:])
        report(f"read_upper + apply, the index holding {HELD_STEPS} such steps",
               fmt_seconds(held), ratio=held / floor, goal=f"≤ {GOAL_S * 1e3:.0f} ms",
               ok=held <= GOAL_S)


def _read_and_apply(root: Path, checkpoints: Checkpoints, call: str) -> float:
    """The workspace's files put back to their first bytes and the command run again
    (untimed: the same change set as the first rounds', not one of files grown by every
    round), then its change set read and applied as settle does: the time of both."""
    _lower(root)
    _command(root)
    time.sleep(0.01)
    since = start_stamp()
    started = time.perf_counter()
    seen = SeenFiles(data_up_to=SMALL_BYTES, max_data=SMALL_HELD)
    changes = read_upper(root / "upper", root / "lower", seen)
    applied = apply(root / "upper", root / "lower", changes.changes, since_ns=since,
                    recorder=checkpoints.begin("bench", call, root / "lower"), durable=False,
                    last=True, seen=seen)
    assert applied.ok and len(applied.changes) == FILES
    return time.perf_counter() - started
