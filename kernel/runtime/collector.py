"""The garbage collector as the kernel's run sets it (`reins exec`, the desktop's worker).

What start-up made lives as long as the process: it is frozen, so no collection walks it
again. A round of the agent loop makes thousands of short-lived objects (the SDK copies and
encodes the whole request body, builds a model class per request), and every young
collection also walked what the round still held: with the youngest generation collected
every 100,000 allocations instead of every 700, `reins exec`'s median round over a bare SDK
loop went from +3.70 to +2.54 ms and from +3.75 to +2.66 ms (bench rounds' sessions, A/B in
turns, four each; 20,000 gave +3.2-3.3 ms). Cyclic garbage waits a little longer to be
freed: at most that many objects, a few megabytes.
"""

from __future__ import annotations

import gc

YOUNG = 100_000
"""Allocations (net of frees) between two collections of the youngest generation."""
OLDER = 10
"""Collections of one generation between two of the next (Python's default is 10)."""


def for_the_run() -> None:
    """Freeze what exists, (re)enable the collector and set its thresholds."""
    gc.freeze()
    gc.set_threshold(YOUNG, OLDER, OLDER)
    gc.enable()
