"""The frozen app's entry script (PyInstaller runs this as `__main__`).

`freeze_support()` comes first under `__main__`: when the app spawns its kernel worker, the
child is this same executable started with multiprocessing's arguments, and
freeze_support() turns it into the worker before any UI or CLI code runs.

Two more things make the frozen executable behave like the Python it replaces:
- The environment programs started by Reins inherit is the user's, not the bundle's: the
  bootloader puts the bundle's library folder on LD_LIBRARY_PATH and PyInstaller's Qt hook
  sets QT_PLUGIN_PATH; this process has read both already (the loader at exec, Qt through
  its embedded qt.conf), so they are taken out again before anything is started.
- `sys.executable` is this executable, so code that runs a helper script the Python way
  (`sys.executable -I -S helper.py ARGS`, as kernel.sandbox.launcher does with its reaper)
  reaches `run_bundled_script`, which runs the script when it ships inside the bundle.
"""

import multiprocessing
import os
import runpy
import sys
from pathlib import Path

INTERPRETER_FLAGS = frozenset({"-I", "-S", "-E", "-s", "-u", "-B"})
BUNDLE_ONLY_VARIABLES = ("QT_PLUGIN_PATH", "QML2_IMPORT_PATH")


def restore_user_environment() -> None:
    """Undo what the bootloader and runtime hooks added to the inherited environment."""
    for name in BUNDLE_ONLY_VARIABLES:
        os.environ.pop(name, None)
    bundle = getattr(sys, "_MEIPASS", "")
    for name in ("LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH"):
        original = os.environ.pop(f"{name}_ORIG", None)
        if original is not None:
            os.environ[name] = original
            continue
        kept = [e for e in os.environ.get(name, "").split(os.pathsep) if e and e != bundle]
        if kept:
            os.environ[name] = os.pathsep.join(kept)
        else:
            os.environ.pop(name, None)


def bundled_script(argv: list[str]) -> tuple[Path, list[str]] | None:
    """(script, its argv) when argv asks the interpreter to run a script shipped in the bundle.

    Only scripts inside the bundle qualify: the executable is not a general Python.
    """
    rest = argv[1:]
    flags = 0
    while flags < len(rest) and rest[flags] in INTERPRETER_FLAGS:
        flags += 1
    if flags == 0 or flags == len(rest) or not rest[flags].endswith(".py"):
        return None
    script = Path(rest[flags]).resolve()
    bundle = Path(getattr(sys, "_MEIPASS", "")).resolve()
    if bundle not in script.parents or not script.is_file():
        return None
    return script, [str(script), *rest[flags + 1:]]


def run_bundled_script(script: Path, argv: list[str]) -> None:
    sys.argv = argv
    runpy.run_path(str(script), run_name="__main__")


if getattr(sys, "frozen", False):
    restore_user_environment()

if __name__ == "__main__":
    multiprocessing.freeze_support()
    multiprocessing.set_start_method("spawn", force=True)
    helper = bundled_script(sys.argv) if getattr(sys, "frozen", False) else None
    if helper is not None:
        run_bundled_script(*helper)
        sys.exit(0)
    from desktop.entry import main

    sys.exit(main())
