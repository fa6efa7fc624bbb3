"""The frozen app's entry script (PyInstaller runs this as `__main__`).

`freeze_support()` comes first: when the app spawns its kernel worker, the child is this
same executable started with multiprocessing's arguments, and freeze_support() turns it
into the worker before any UI or CLI code runs.
"""

import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()
    multiprocessing.set_start_method("spawn", force=True)
    from desktop.entry import main

    sys.exit(main())
