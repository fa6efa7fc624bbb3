"""The `reins` console script (and the frozen app's entry point).

`multiprocessing.freeze_support()` comes first in a frozen build, so its kernel worker
(spawned with the spawn start method) starts as a worker, not as a second app (outside a
frozen build it does nothing, and multiprocessing is not loaded for it). Then:
  reins                 → the desktop app (desktop.app.main, imported only then)
  reins --self-test     → desktop.selftest.main (offscreen round trip against the loopback
                          fake model)
  reins exec|export|doctor ...  → kernel.cli.main (never imports Qt; bad usage exits 2)
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    if getattr(sys, "frozen", False):
        import multiprocessing

        multiprocessing.freeze_support()
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--self-test"]:
        from desktop.selftest import main as selftest_main

        return int(selftest_main(args[1:]) or 0)
    if args:
        from kernel.cli.main import main as cli_main

        return cli_main(args)
    from desktop.app import main as app_main

    return int(app_main() or 0)


if __name__ == "__main__":
    sys.exit(main())
