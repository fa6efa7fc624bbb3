"""`python -m bench [NAME ...]`: runs every bench module (or the named ones) in turn.

The zygote that forks the sandboxes' link binders (kernel.sandbox.zygote) is started first,
as the desktop's kernel worker starts it at its start: what the benches then load into this
process (and bench_sandbox's BALLAST_MB) is what a kernel holds after a long session.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import bench
from kernel.sandbox import zygote


def main(argv: list[str]) -> int:
    zygote.start()  # first, as the desktop's kernel starts it, before the benches grow this process
    names = sorted(
        m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_")
    )
    wanted = [n if n.startswith("bench_") else f"bench_{n}" for n in argv]
    failed = 0
    for name in names:
        if wanted and name not in wanted:
            continue
        print(f"\n== {name.removeprefix('bench_')}")
        started = time.perf_counter()
        try:
            importlib.import_module(f"bench.{name}").run()
        except Exception as exc:  # a broken bench is reported, the others still run
            failed += 1
            print(f"   FAILED: {type(exc).__name__}: {exc}")
        print(f"   ({time.perf_counter() - started:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
