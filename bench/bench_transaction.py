"""A command's transaction on 1,000 changed files (goal: read + apply ≤ 60 ms, undo ≤ 60 ms).

A real overlay (unshare -rm, userxattr, as a sandbox mounts it) over a workspace of 1,000
small text files; the command appends a line to each. Figures, each median of `ROUNDS`:
- floor: copying the 1,000 upper files over the workspace files by hand (open, read,
  write a temporary file, rename), the least an apply can do;
- read_upper: the change set;
- apply, not durable (no syncfs), and durable (the kept bytes and the applied ones synced
  once each: the cost depends on what else the file system has to write);
- undo of the applied call.
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
from kernel.transaction.checkpoints import Checkpoints
from kernel.transaction.upper import read_upper

FILES = 1_000
ROUNDS = 7
GOAL_S = 0.060


def _layers(root: Path) -> None:
    lower = root / "lower"
    for n in range(FILES):
        folder = lower / f"d{n % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.txt").write_text(f"line one of {n}\nline two\n" * 5)
    for name in ("upper", "work", "merged"):
        (root / name).mkdir()
    options = f"userxattr,lowerdir={lower},upperdir={root / 'upper'},workdir={root / 'work'}"
    subprocess.run(["unshare", "-rm", "sh", "-ec",
                    f"mount -t overlay overlay -o {options} {root / 'merged'} && "
                    f"cd {root / 'merged'} && for f in d*/*.txt; do echo more >> $f; done"],
                   check=True, timeout=120)


def _floor(root: Path) -> float:
    started = time.perf_counter()
    for base, _dirs, files in os.walk(root / "upper"):
        rel = Path(base).relative_to(root / "upper")
        for name in files:
            data = (Path(base) / name).read_bytes()
            target = root / "floor" / rel / name
            tmp = target.with_name(f".{name}.tmp")
            tmp.write_bytes(data)
            tmp.replace(target)
    return time.perf_counter() - started


def run() -> None:
    with tempfile.TemporaryDirectory(prefix="reins-bench-txn-") as tmp:
        root = Path(tmp)
        _layers(root)
        subprocess.run(["cp", "-a", str(root / "lower"), str(root / "floor")], check=True)
        floors, reads, applies, durables, undos = [], [], [], [], []
        with Checkpoints(root / "checkpoints") as checkpoints:
            for n in range(ROUNDS * 2):
                floors.append(_floor(root))
                time.sleep(0.01)
                since = start_stamp()
                started = time.perf_counter()
                changes = read_upper(root / "upper", root / "lower")
                applying = time.perf_counter()
                reads.append(applying - started)
                durable = n % 2 == 1
                recorder = checkpoints.begin("bench", f"c{n}", root / "lower")
                applied = apply(root / "upper", root / "lower", changes.changes, since_ns=since,
                                recorder=recorder, durable=durable)
                undoing = time.perf_counter()
                (durables if durable else applies).append(undoing - applying)
                assert applied.ok and len(applied.changes) == FILES
                assert checkpoints.undo("bench", f"c{n}").ok
                undos.append(time.perf_counter() - undoing)
        floor = statistics.median(floors)
        report(f"floor: copy {FILES:,} files over by hand", fmt_seconds(floor), ratio=1.0)
        read = statistics.median(reads)
        report("read_upper", fmt_seconds(read), ratio=read / floor)
        fast = statistics.median(applies)
        report("apply (kept bytes and applied ones not synced)", fmt_seconds(fast),
               ratio=fast / floor)
        report("read_upper + apply", fmt_seconds(read + fast), ratio=(read + fast) / floor,
               goal=f"≤ {GOAL_S * 1e3:.0f} ms", ok=read + fast <= GOAL_S)
        synced = statistics.median(durables)
        report("apply, durable (two syncfs)", fmt_seconds(synced), ratio=synced / floor)
        undo = statistics.median(undos)
        report("undo of that call", fmt_seconds(undo), ratio=undo / floor,
               goal=f"≤ {GOAL_S * 1e3:.0f} ms", ok=undo <= GOAL_S)
