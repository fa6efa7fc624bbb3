"""kernel.runtime.collector: what start-up made is frozen, the collector runs again, young
collections are rarer. In a fresh interpreter (the test process's collector is left alone)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import gc
from kernel.runtime.collector import OLDER, YOUNG, for_the_run
gc.disable()
kept = [[i] for i in range(1000)]
frozen = gc.get_freeze_count()
for_the_run()
assert gc.isenabled()
assert gc.get_threshold() == (YOUNG, OLDER, OLDER) and YOUNG > 700
assert gc.get_freeze_count() >= frozen + 1000, (frozen, gc.get_freeze_count())
cycle = []
cycle.append(cycle)
del cycle
assert gc.collect() >= 1  # cyclic garbage is still collected
print("ok")
"""


def test_the_run_freezes_start_up_and_collects_young_objects_less_often() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
