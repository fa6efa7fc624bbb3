"""`python -m bench [NAME ...]`: runs every bench module (or the named ones) in turn."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import bench


def main(argv: list[str]) -> int:
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
